"""The memory monitoring needs on a host: what a plan checks against a machine before anything
starts (a local cluster's hosts share its memory)."""
from __future__ import annotations

PROMETHEUS = 512 << 20
"""Prometheus with a few days of 2-second scrapes of a small cluster."""
NODE_EXPORTER = 32 << 20
"""node_exporter, on every host."""


def memory(roles) -> int:
    """Bytes a host playing ``roles`` needs for monitoring (every host runs node_exporter)."""
    return NODE_EXPORTER + (PROMETHEUS if "prometheus" in roles else 0)
