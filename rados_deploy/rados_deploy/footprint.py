"""The memory a Ceph host needs, by the daemons it runs and the data its OSDs hold: what a plan
checks against a machine before anything starts (a local cluster's hosts share its memory)."""
from __future__ import annotations

from .options import CephOptions

DAEMONS = {"ceph-mon": 128 << 20, "ceph-mgr": 512 << 20, "ceph-mds": 128 << 20}
"""Resident memory of a mon, mgr and MDS, with room (measured: 38-40, ~300 and 22-24 MiB)."""
OSD = 256 << 20
"""An OSD's own memory after Arrow scans (measured: 186-207 MiB), beside the data memstore holds."""
BLUESTORE_CACHE = 1 << 30
"""A bluestore OSD's cache, which grows toward its ``osd memory target``."""


def memory(options: CephOptions, roles, stored_bytes: int = 0) -> int:
    """Bytes a host playing ``roles`` (ceph-mon, ceph-mgr, ceph-mds, ceph-osd) needs, its OSDs
    holding ``stored_bytes`` of data in all (memstore keeps every byte in memory)."""
    need = sum(b for role, b in DAEMONS.items() if role in roles)
    if "ceph-osd" in roles:
        per_osd = OSD + (BLUESTORE_CACHE if options.store == "bluestore" else 0)
        need += options.osds_per_node * per_osd + (stored_bytes if options.store == "memstore" else 0)
    return need
