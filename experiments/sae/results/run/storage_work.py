"""What the storage side did in each repetition, as results columns.

* ``osd_*``: the OSDs' own counters (:meth:`rados_deploy.CephCluster.osd_counters`), read by
  :class:`OpsRecorder` after every query of an application (and once before its first), while
  the application pauses between queries. A repetition's numbers are the difference between
  the snapshot after the query before it and the one after it, kept only when the first was
  complete before the repetition started (else the columns stay empty, never wrong). Every
  reader's reads count, vanilla's through ceph-fuse too. ``osd_pgs``: the placement groups the
  OSDs held right after the query (a gauge; the PG autoscaler changes it).
* ``cls_*``: the object class's own measurement of its calls (phase CPU times, rows, batches,
  bytes; docs/protocol.md), summed over the query by the connector (DataSource V2 custom
  metrics) and reported by the application; offload and no-offload readers only.
* ``reply_wait_s``, ``client_*_s``: the connector's own side of the reading in time
  (:data:`CLIENT_PHASES`), from the same metrics.
"""
from __future__ import annotations

import json
import logging
import queue
import threading
from pathlib import Path

from metareserve.errors import SaeError
from metareserve.log import node_log
from rados_deploy import CephCluster, CounterSnapshot, OpCounts

OSD_COLUMNS = {"osd_read_ops": "read_ops", "osd_read_reply_bytes": "read_reply_bytes", "osd_ops": "ops",
               "osd_reply_bytes": "reply_bytes", "osd_store_reads": "store_reads",
               "osd_store_read_bytes": "store_read_bytes"}
"""Results column → the OSD counter it sums over the storage hosts (rados_deploy.counters)."""
CLS_PHASES = ("index", "read", "decode", "filter", "aggregate", "sort", "project", "encode", "compress", "reply")
"""The class's phases, in pipeline order (``cls_<phase>_s`` columns: CPU-seconds in the OSDs)."""
STAGE = "sae storage ops"


CLIENT_PHASES = ("request", "wait", "decode", "spark")
"""The connector's side of a query's reading, in order, as wall seconds summed over its tasks:
building and sending requests, waiting for replies (``reply_wait_s``), opening and decoding them,
and Spark's own work on the batches between reads (``client_<phase>_s``); together they make up
``client_reader_s``, each task from its first read to its last."""


def client_column(phase: str) -> str:
    """The results column of a client phase (:data:`CLIENT_PHASES`)."""
    return "reply_wait_s" if phase == "wait" else f"client_{phase}_s"


def cls_columns(scan: dict | None) -> dict:
    """The results columns of the connector's per-query sums: the class's ``*_ns`` →
    ``cls_*_s`` (seconds), counts as ``cls_*`` (``cls_calls``, ``cls_rows_in``,
    ``cls_batches_out``, ...), and the tasks' own times (``reply_wait_s``, ``client_*_s``:
    :data:`CLIENT_PHASES`); empty for a reader without them (vanilla)."""
    out = {}
    for name, value in (scan or {}).items():
        if name == "reply_wait_ns":
            out["reply_wait_s"] = value / 1e9
        elif name.startswith("client_") and name.endswith("_ns"):
            out[f"{name[:-3]}_s"] = value / 1e9
        elif name.endswith("_ns"):
            out[f"cls_{name[:-3]}_s"] = value / 1e9
        else:
            out[f"cls_{name}"] = value
    return out


class OpsRecorder:
    """Snapshots the OSDs' counters after the events it is given (``app``: before the first
    query, ``rep``: after each query, warm-up ones included, ``written``: after a write job,
    before its output is read back) into a JSON-lines file, one line per event:
    ``{"after": <event or null>, "begin", "end", "osds", "pids"}`` or ``"error"``; with
    ``by_type`` (an application with write points) also ``"ops"``, the storage operations by
    type (:meth:`rados_deploy.CephCluster.op_counters`).

    Runs on its own thread and its own connections (spark-submit streams on the shared ones);
    a snapshot takes milliseconds, well inside the pause between queries.
    """

    def __init__(self, ceph: CephCluster, path: Path, *, by_type: bool = False):
        self.path = Path(path)
        self.by_type = by_type
        self.ceph = ceph.on_own_connections()
        self.events: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "OpsRecorder":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.events.put(None)
        self.thread.join()
        self.ceph.cluster.close()

    def event(self, event: dict) -> None:
        """An application event as it arrives (others are ignored)."""
        if event.get("event") in ("app", "rep", "written"):
            self.events.put(event)

    def _run(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as out:
            while (event := self.events.get()) is not None:
                after = None if event["event"] == "app" else \
                    {k: event.get(k) for k in ("point", "repetition", "discarded", "start", "end")}
                if event["event"] == "written":
                    after["phase"] = "written"
                try:
                    line = {"after": after, **self.ceph.osd_counters(stage=STAGE).to_dict()}
                    if self.by_type:
                        line["ops"] = self.ceph.op_counters(stage=STAGE).to_dict()
                except SaeError as e:
                    node_log(None, STAGE, f"no OSD counters after {after}: {e}", logging.WARNING)
                    line = {"after": after, "error": str(e)}
                out.write(json.dumps(line) + "\n")
                out.flush()


def json_lines(path: Path) -> list[dict]:
    """The JSON objects of a file of JSON lines (none if it is missing; a line that is not JSON is skipped)."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _key(q: dict | None, phase: str | None = None) -> tuple | None:
    return None if q is None else (q["point"], q["repetition"], q.get("discarded", False), q["start"], phase)


def osd_ops(raw: Path) -> dict[tuple, dict]:
    """(point, repetition, start) → ``osd_*`` columns (and, for a write job, the operations by
    type: :func:`op_columns`), for every query of every application in the run's ``raw/``
    directory whose counters were snapshotted right before and right after it (the
    application's own record of its queries says which query preceded which). A write job's
    window ends at its ``written`` snapshot, which must be complete before its output is read
    back (``verify_start``)."""
    out = {}
    for snaps in sorted(Path(raw).glob("*.ceph.jsonl")):
        queries = [e for e in json_lines(snaps.with_name(snaps.name.replace(".ceph.jsonl", ".jsonl")))
                   if e.get("event") == "rep"]
        by_after = {_key(s["after"], s["after"].get("phase") if s["after"] else None): s
                    for s in json_lines(snaps) if "error" not in s}
        for i, q in enumerate(queries):
            writes = "verify_start" in q
            before = by_after.get(_key(queries[i - 1] if i else None))
            after = by_after.get(_key(q, "written" if writes else None))
            following = q["verify_start"] if writes else \
                queries[i + 1]["start"] if i + 1 < len(queries) else float("inf")
            if before is None or after is None or before["end"] > q["start"] or after["begin"] < q["end"] \
                    or after["end"] > following:
                continue
            closing = CounterSnapshot.from_dict(after)
            delta = closing.delta(CounterSnapshot.from_dict(before))
            if delta is not None and not q.get("discarded"):
                row = {**{c: delta[k] for c, k in OSD_COLUMNS.items()}, "osd_pgs": closing.pgs}
                if "ops" in before and "ops" in after:
                    by_type = OpCounts.from_dict(after["ops"]).delta(OpCounts.from_dict(before["ops"]))
                    row.update(op_columns(by_type) if by_type is not None else {})
                out[(q["point"], q["repetition"], q["start"])] = row
    return out


REQUEST_GROUPS = ("rgw", "mds")
"""The groups of :class:`rados_deploy.OpCounts` that are requests to a storage interface (S3 at
the gateways, file-system metadata at the MDSs); ``ops_<group>_<type>`` columns."""


def op_columns(ops: OpCounts) -> dict:
    """A job's storage operations as results columns: ``ops_rgw_<type>`` (S3 requests) and
    ``ops_mds_<type>`` (MDS requests) by type, and ``storage_ops``, their sum: the requests the
    storage interfaces served for the job (Stocator's unit); ``ops_rados_rgw_<type>`` and
    ``ops_rados_mds_<type>``, the RADOS ops the gateways and the MDSs sent the OSDs serving them,
    by type (``writefull``, ``read``, ``call``, ``omap_get_vals``: their objecter's
    ``osdop_<type>``); ``ops_osd_read`` and
    ``ops_osd_write``, the client ops the OSDs served in the window, whoever sent them (the job's
    CephFS clients, whose data go straight to the OSDs, but also the gateways and the MDSs serving
    the requests above, and the managers' background reads: a daemon's own ops cannot be told
    apart from a client's in the OSDs' counters, so they are not summed into ``storage_ops``);
    ``storage_bytes_written``, the bytes the OSDs were sent to write, whoever sent them
    (docs/results.md, "Writes")."""
    cols = {f"ops_{g}_{t}": n for g in REQUEST_GROUPS for t, n in getattr(ops, g).items() if t != "client_requests"}
    cols["storage_ops"] = sum(cols.values())
    for g in REQUEST_GROUPS:   # the RADOS ops each interface's daemons sent serving them, by type
        cols.update({f"ops_rados_{g}_{t.removeprefix('osdop_')}": n for t, n in getattr(ops, f"{g}_rados").items()
                     if t.startswith("osdop_")})
    cols["ops_osd_read"] = ops.osd.get("op_r", 0)
    cols["ops_osd_write"] = ops.osd.get("op_w", 0) + ops.osd.get("op_rw", 0)
    cols["storage_bytes_written"] = ops.osd.get("op_in_bytes", 0)
    return cols
