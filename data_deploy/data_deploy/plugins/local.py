"""``local``: node-local directories (disk or tmpfs) for vanilla-Spark baselines."""
from __future__ import annotations

from metareserve import Layout, Reservation

from . import Plugin, _names


class LocalPlugin(Plugin):
    """Writes the whole dataset on every target node: ``node`` (one name or a list) if given,
    else the layout's ``spark-worker`` nodes (else every node). Nodes sharing a disk take turns
    on one directory (a lock inside it), so the later ones find it complete."""

    name = "local"
    backend = "local"
    apt_packages = ("rsync",)

    def nodes(self, reservation: Reservation, layout: Layout, node) -> list[str]:
        if node:
            return [reservation.node(n).name for n in _names(node)]
        return layout.names("spark-worker") or [n.name for n in reservation.nodes]
