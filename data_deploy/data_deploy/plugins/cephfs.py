"""``cephfs``: files in CephFS through libcephfs, one RADOS object per file."""
from __future__ import annotations

from metareserve import Layout, Reservation
from metareserve.errors import UsageError

from . import Plugin, _names


class CephFSPlugin(Plugin):
    """Writes on ONE node next to the data: ``node`` if given, else the layout's first
    ``ceph-client`` node (else its first node)."""

    name = "cephfs"
    backend = "cephfs"
    apt_packages = ("python3-cephfs", "python3-rados", "rsync")
    needs_ceph = True

    def nodes(self, reservation: Reservation, layout: Layout, node) -> list[str]:
        if node:
            names = _names(node)
            if len(names) != 1:
                raise UsageError(f"cephfs plugin writes from one node, got {', '.join(names)}")
            return [reservation.node(names[0]).name]
        clients = layout.names("ceph-client")
        return [clients[0] if clients else reservation.nodes[0].name]
