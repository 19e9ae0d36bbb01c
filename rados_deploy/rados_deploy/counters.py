"""The OSDs' own operation counters (their perf counters, read from each OSD's admin socket).

Ceph 16 counts every client read op in ``osd.op_r`` (an object-class call is a read op: the OSD
does not count calls apart), the bytes its replies carried in ``osd.op_r_out_bytes``, and
bluestore's reads from the store in ``bluestore.read_lat`` (count) and
``bluestore_buffer_{hit,miss}_bytes`` (bytes, from its cache or the device). The mgr's
Prometheus module exports neither bluestore byte counter (priority 0) and lags by its refresh,
so a snapshot reads the admin sockets directly: exact at the moment it is taken, about a
millisecond per OSD.
"""
from __future__ import annotations

import dataclasses
import time

from . import remote

FIELDS = {"read_ops": ("osd", "op_r"), "read_reply_bytes": ("osd", "op_r_out_bytes"),
          "ops": ("osd", "op"), "reply_bytes": ("osd", "op_out_bytes"),
          "store_reads": ("bluestore", "read_lat", "avgcount"),
          "store_read_hit_bytes": ("bluestore", "bluestore_buffer_hit_bytes"),
          "store_read_miss_bytes": ("bluestore", "bluestore_buffer_miss_bytes")}
"""Counter → its path in ``perf dump`` (bluestore ones are None on memstore OSDs)."""
PGS = ("osd", "numpg")
"""The gauge of the placement groups an OSD holds, in ``perf dump``."""


@dataclasses.dataclass(frozen=True)
class OsdCounters:
    """One OSD's counters (cumulative since it started): client read ops (object-class calls
    included), bytes their replies carried, all client ops and their reply bytes, reads from the
    store and the bytes they returned (from bluestore's cache: hit, from the device: miss); and
    the placement groups it holds at the moment (``pgs``, a gauge: not in :meth:`CounterSnapshot.delta`)."""

    read_ops: int
    read_reply_bytes: int
    ops: int
    reply_bytes: int
    store_reads: int | None
    store_read_hit_bytes: int | None
    store_read_miss_bytes: int | None
    pgs: int | None = None

    @property
    def store_read_bytes(self) -> int | None:
        if self.store_read_hit_bytes is None or self.store_read_miss_bytes is None:
            return None
        return self.store_read_hit_bytes + self.store_read_miss_bytes


@dataclasses.dataclass(frozen=True)
class CounterSnapshot:
    """Every OSD's counters, read between ``begin`` and ``end`` (epoch seconds); ``pids`` tells
    a restarted OSD (its counters start again from zero) from the same one."""

    begin: float
    end: float
    osds: dict
    pids: dict

    def to_dict(self) -> dict:
        return {"begin": self.begin, "end": self.end, "pids": dict(self.pids),
                "osds": {k: dataclasses.asdict(v) for k, v in self.osds.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "CounterSnapshot":
        return cls(d["begin"], d["end"], {k: OsdCounters(**v) for k, v in d["osds"].items()}, d.get("pids", {}))

    def delta(self, before: "CounterSnapshot") -> dict | None:
        """Counter → increase since ``before``, summed over the OSDs (``store_read_bytes`` too);
        None when the OSDs differ or one restarted in between (its counters were reset)."""
        if set(self.osds) != set(before.osds) or self.pids != before.pids:
            return None
        out = {}
        for name in [*FIELDS, "store_read_bytes"]:
            values = [(getattr(self.osds[o], name), getattr(before.osds[o], name)) for o in self.osds]
            out[name] = None if any(a is None or b is None for a, b in values) else sum(a - b for a, b in values)
        return out

    @property
    def pgs(self) -> int | None:
        """The placement groups the OSDs held (summed; replicas count on each OSD), None when one
        did not say."""
        held = [o.pgs for o in self.osds.values()]
        return None if not held or None in held else sum(held)


def snapshot(cc, *, stage: str = "ceph counters") -> CounterSnapshot:
    """Read every OSD's counters now (one parallel call over the OSD nodes)."""
    topo = cc.topology
    begin = time.time()
    got = cc.cluster.call(remote, "perf_counters", [*FIELDS.values(), PGS], nodes=topo.osd_nodes, stage=stage,
                          per_node=lambda n: {"state": cc.state_dir(n.name),
                                              "daemons": [f"osd.{i}" for i in topo.osd_ids(n.name)]})
    end = time.time()
    osds, pids = {}, {}
    for node in topo.osd_nodes:
        for daemon, (pid, values) in got[node].items():
            osds[daemon] = OsdCounters(**dict(zip([*FIELDS, "pgs"], values)))
            pids[daemon] = pid
    return CounterSnapshot(begin, end, dict(sorted(osds.items())), dict(sorted(pids.items())))
