"""CephFS sessions of library clients whose process is gone, and their eviction.

A libcephfs client (a Spark driver listing the dataset, a scan tenant) that is killed never closes
its MDS session: the MDS keeps the session and the capabilities it held until it times the session
out (``session_timeout``, then ``session_autoclose``), and every other client that needs one of
those capabilities waits that long (measured: a resume's first read of the dataset's manifest after
a driver's ``kill -9``, 34 s; a stat of a file the killed client held open, 55 s).
:func:`evict_dead_clients` ends those sessions as soon as their process is known to be gone: each
MDS lists its sessions through its admin socket, a session's address names the host and its
metadata the process id, that host says whether the process still runs, and the MDS evicts the
sessions whose process does not. A session whose host or process cannot be told (no pid, an address
of no host of the reservation) is left alone, and so are ceph-fuse mounts
(:meth:`CephCluster.mount` owns those).
"""
from __future__ import annotations

import dataclasses

from . import remote

STAGE = "ceph sessions"


@dataclasses.dataclass(frozen=True)
class LibrarySession:
    """One libcephfs client's MDS session: its id on the MDS, the MDS daemon holding it, the host
    (reservation node) its process runs on, and that process's id."""

    id: int
    mds: str
    node: str
    pid: int

    def __str__(self) -> str:
        return f"client.{self.id} (pid {self.pid} on {self.node})"


def library_sessions(cc) -> list[LibrarySession]:
    """The library clients' sessions every MDS holds whose host and pid are known."""
    by_address = {n.cluster_address: n.name for n in cc.reservation.nodes}
    names = {n.name for n in cc.reservation.nodes}
    listed = cc.cluster.call(remote, "mds_sessions", nodes=cc.topology.mdss, stage=STAGE,
                             per_node=lambda n: {"state": cc.state_dir(n.name), "daemons": [f"mds.{n.name}"]})
    out = []
    for mds_node, daemons in listed.items():
        for daemon, sessions in daemons.items():
            for s in sessions or []:
                meta, address = s["metadata"], s["inst"].partition(" ")[2].rpartition(":")[0]
                node = by_address.get(address) or (meta.get("hostname") if meta.get("hostname") in names else None)
                if "mount_point" not in meta and node and meta.get("pid", "").isdigit():
                    out.append(LibrarySession(int(s["id"]), daemon, node, int(meta["pid"])))
    return out


def evict_dead_clients(cc) -> dict[str, list[LibrarySession]]:
    """Evict the sessions of :func:`library_sessions` whose process its host no longer runs;
    returns them by the node of the MDS that held them."""
    sessions = library_sessions(cc)
    dead = []
    for node in sorted({s.node for s in sessions}):
        mine = [s for s in sessions if s.node == node]
        gone = set(cc.cluster.call(remote, "gone", [s.pid for s in mine], nodes=[node], stage=STAGE)[node])
        dead += [s for s in mine if s.pid in gone]
    out: dict[str, list[LibrarySession]] = {}
    for daemon in sorted({s.mds for s in dead}):
        node = daemon.split(".", 1)[1]
        out[node] = [s for s in dead if s.mds == daemon]
        cc.cluster.call(remote, "evict_sessions", cc.state_dir(node), daemon, [s.id for s in out[node]],
                        nodes=[node], stage=STAGE)
    return out
