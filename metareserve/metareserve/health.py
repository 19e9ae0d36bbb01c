"""The health gate: every node reachable over SSH, with python3, root or sudo, and free disk."""
from __future__ import annotations

import dataclasses

from .errors import last_line
from .model import Reservation
from .remote import Cluster, node_agent

MIN_FREE_BYTES = 2 << 30
MIN_PYTHON = (3, 8)


@dataclasses.dataclass
class NodeHealth:
    """Outcome of the gate on one node: what was checked, ok, and the reason when not ok."""

    node: str
    ok: bool
    checks: dict
    reason: str = ""
    facts: dict = dataclasses.field(default_factory=dict)


def evaluate(node: str, facts: dict, *, min_free: int = MIN_FREE_BYTES) -> NodeHealth:
    """Pure decision: node facts → health (used by :func:`check`, tested alone)."""
    version = tuple(int(x) for x in facts["python"].split(".")[:2])
    checks = {"ssh": True, "python3": version >= MIN_PYTHON, "root_or_sudo": bool(facts["root_or_sudo"]),
              "disk": facts["free_bytes"] >= min_free, "rsync": bool(facts.get("rsync"))}
    reasons = {"python3": f"python {facts['python']} < {'.'.join(map(str, MIN_PYTHON))}",
               "root_or_sudo": "neither root nor passwordless sudo",
               "disk": f"only {facts['free_bytes'] / 2**30:.1f} GiB free on {facts['disk_path']} "
                       f"(need {min_free / 2**30:.0f})",
               "rsync": "rsync is missing (install it: file transfer needs it)"}
    bad = [reasons[k] for k, ok in checks.items() if not ok]
    return NodeHealth(node, not bad, checks, "; ".join(bad), facts)


def check(reservation: Reservation, *, cluster: Cluster | None = None, nodes=None,
          min_free: int = MIN_FREE_BYTES) -> list[NodeHealth]:
    """Run the health gate on every node in parallel; one :class:`NodeHealth` per node."""
    own = cluster is None
    cluster = cluster or Cluster(reservation)
    try:
        results = cluster.call(node_agent, "facts", reservation.state_root, nodes=nodes,
                               stage="check", timeout=60, check=False)
    finally:
        if own:
            cluster.close()
    out = []
    for name, res in results.items():
        if isinstance(res, BaseException):
            out.append(NodeHealth(name, False, {"ssh": False}, last_line(str(res))))
        else:
            out.append(evaluate(name, res, min_free=min_free))
    return sorted(out, key=lambda h: [int(c) if c.isdigit() else c for c in _split_digits(h.node)])


def _split_digits(s: str) -> list[str]:
    import re
    return re.findall(r"\d+|\D+", s)
