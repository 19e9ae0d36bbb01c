"""Storage operations by type, as the daemons count them: what a job asked of Ceph.

- ``rgw``: S3 requests at the gateways by type, from each gateway's ops log (one entry per
  request, the gateway's operation name: ``put_obj``, ``get_obj``, ``copy_obj``, ``delete_obj``,
  ``list_bucket``, ``stat_bucket``, ``create_bucket``, ``init_multipart``,
  ``complete_multipart``, ...; a HEAD of an object is ``head_obj`` and a multipart part's PUT
  ``put_part``, which the gateway names ``get_obj`` and ``put_obj``). Ceph 16's gateway perf
  counters count only requests, gets and puts, and its usage log names a HEAD ``get_obj`` and
  writes to RADOS per flush; the ops log goes to a file, so it adds no RADOS op. ``rgw_failed``:
  those answered with HTTP 400 or above; ``rgw_bytes``: bytes received and sent.
- ``rgw_rados``: the RADOS ops the gateways sent, by type (their objecter's ``op_r``, ``op_w``,
  ``op_rmw``, ``osdop_*``: ``osdop_read``, ``osdop_writefull``, ``osdop_call``, ..., and
  ``omap_*``); ``mds_rados``: the same of the MDSs (their journal and metadata objects).
- ``mds``: MDS requests by type (``create``, ``open``, ``rename``, ``unlink``, ``lookup``,
  ``getattr``, ``readdir``, ``mkdir``, ``setattr``, ...: the count of each ``mds_server``
  ``req_<type>_latency``) and ``client_requests`` (``handle_client_request``).
- ``osd``: client ops at the OSDs and their bytes (``op``, ``op_r``, ``op_w``, ``op_rw`` (a
  read-modify-write, a writing class call), ``op_in_bytes`` (bytes written),
  ``op_out_bytes`` (bytes read), ``op_w_in_bytes``, ``op_rw_in_bytes``, ``op_r_out_bytes``,
  ``op_rw_out_bytes``), the gateway's own traffic included.

Perf counters are read from the daemons' admin sockets; the ops log after a fence
(:func:`rados_deploy.remote.ops_log_counts`): the gateway logs each request right after answering
it, in order, so a snapshot taken after a client's last answer counts its last request.
"""
from __future__ import annotations

import dataclasses
import re
import time

from . import remote
from .rgw import FENCE_PREFIX

GROUPS = ("rgw", "rgw_failed", "rgw_bytes", "rgw_rados", "mds", "mds_rados", "osd")
"""The groups of :class:`OpCounts`, in :meth:`OpCounts.flat` order."""
OSD_FIELDS = ("op", "op_r", "op_w", "op_rw", "op_in_bytes", "op_out_bytes", "op_w_in_bytes", "op_rw_in_bytes",
              "op_r_out_bytes", "op_rw_out_bytes")
"""The ``osd`` section's counters an :class:`OpCounts` keeps."""
_MDS_REQUEST = re.compile(r"req_(\w+)_latency")
_RADOS_OP = re.compile(r"op_r|op_w|op_rmw|osdop_\w+|omap_\w+")


@dataclasses.dataclass(frozen=True)
class OpCounts:
    """Operations by type, cumulative (or, from :meth:`delta`, in a window), read between
    ``begin`` and ``end`` (epoch seconds): each group (:data:`GROUPS`) maps a type to a count;
    ``pids`` tells a restarted daemon (its perf counters start again from zero) from the same one."""

    begin: float
    end: float
    rgw: dict[str, int]
    rgw_failed: dict[str, int]
    rgw_bytes: dict[str, int]
    rgw_rados: dict[str, int]
    mds: dict[str, int]
    mds_rados: dict[str, int]
    osd: dict[str, int]
    pids: dict[str, int | None]

    def delta(self, earlier: "OpCounts") -> "OpCounts | None":
        """What happened between ``earlier`` and this snapshot (types whose count did not move
        left out, but the OSD counters); None when a daemon differs or restarted in between."""
        if self.pids != earlier.pids:
            return None

        def minus(group: str) -> dict[str, int]:
            now, before = getattr(self, group), getattr(earlier, group)
            out = {k: now.get(k, 0) - before.get(k, 0) for k in sorted(set(now) | set(before))}
            return out if group == "osd" else {k: v for k, v in out.items() if v}
        return OpCounts(earlier.begin, self.end, **{g: minus(g) for g in GROUPS}, pids=dict(self.pids))

    def flat(self) -> dict[str, int]:
        """``{"<group>.<type>": count}``: ``rgw.put_obj``, ``mds.rename``, ``osd.op_w``, ..."""
        return {f"{g}.{k}": v for g in GROUPS for k, v in getattr(self, g).items()}

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "OpCounts":
        return cls(**d)


def _add(into: dict[str, int], key: str, value) -> None:
    if isinstance(value, dict):   # a time average: its count
        value = value.get("avgcount", 0)
    into[key] = into.get(key, 0) + int(value)


def snapshot(cc, *, stage: str = "ceph op counters") -> OpCounts:
    """Every OSD's, MDS's and gateway's counts now (one parallel call over their nodes)."""
    topo = cc.topology
    perf = {n: {**{f"osd.{i}": ["osd"] for i in topo.osd_ids(n)},
                **({f"mds.{n}": ["mds_server", "objecter"]} if n in topo.mdss else {}),
                **{g: ["objecter"] for g in topo.gateways(n)}} for n in topo.server_nodes + topo.rgws}
    nodes = [n for n in perf if perf[n]]
    begin = time.time()
    got = cc.cluster.call(remote, "op_counters", nodes=nodes, stage=stage, timeout=120, per_node=lambda n: {
        "state": cc.state_dir(n.name), "perf": perf[n.name],
        "gateways": [[cc.ops_log_path(n.name), cc.s3_endpoint_of(n.name), FENCE_PREFIX]] if n.name in topo.rgws else []})
    return collect(begin, time.time(), [got[n] for n in nodes])


def collect(begin: float, end: float, parts: list[dict]) -> OpCounts:
    """The :class:`OpCounts` of the nodes' :func:`rados_deploy.remote.op_counters` answers."""
    groups: dict[str, dict[str, int]] = {g: {} for g in GROUPS}
    pids = {}
    for part in parts:
        for daemon, (pid, sections) in part["perf"].items():
            pids[daemon] = pid
            for key, value in sections.get("osd", {}).items():
                if key in OSD_FIELDS:
                    _add(groups["osd"], key, value)
            for key, value in sections.get("mds_server", {}).items():
                m = _MDS_REQUEST.fullmatch(key)
                if m or key == "handle_client_request":
                    _add(groups["mds"], m.group(1) if m else "client_requests", value)
            for key, value in sections.get("objecter", {}).items():
                if _RADOS_OP.fullmatch(key):
                    _add(groups["mds_rados" if daemon.startswith("mds.") else "rgw_rados"], key, value)
        for counts in part["rgw"]:
            for kind, (requests, failed, received, sent) in counts.items():
                _add(groups["rgw"], kind, requests)
                _add(groups["rgw_failed"], kind, failed)
                _add(groups["rgw_bytes"], "received", received)
                _add(groups["rgw_bytes"], "sent", sent)
    return OpCounts(begin, end, **{g: dict(sorted(v.items())) for g, v in groups.items()}, pids=dict(sorted(pids.items())))
