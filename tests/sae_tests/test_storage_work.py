"""Pure layer: the storage side's columns of a repetition from the OSD counter snapshots between
queries (kept only where both edges were read inside the pauses) and from the connector's sums."""
import json

from rados_deploy import CounterSnapshot, OsdCounters
from sae.results.run.storage_work import cls_columns, osd_ops


def snap(t, reads, pid=7, store=True, pgs=None):
    c = OsdCounters(read_ops=reads, read_reply_bytes=100 * reads, ops=reads + 1, reply_bytes=100 * reads,
                    store_reads=2 * reads if store else None, store_read_hit_bytes=10 * reads if store else None,
                    store_read_miss_bytes=reads if store else None, pgs=pgs)
    return CounterSnapshot(t, t + 0.01, {"osd.0": c}, {"osd.0": pid}).to_dict()


def rep(point, r, start, end, discarded=False):
    return {"event": "rep", "point": point, "repetition": r, "discarded": discarded, "start": start, "end": end}


def write(raw, tag, queries, snaps):
    raw.mkdir(exist_ok=True)
    (raw / f"{tag}.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (raw / f"{tag}.ceph.jsonl").write_text("".join(json.dumps(s) + "\n" for s in snaps))


def after(q, s):
    return {"after": {k: q[k] for k in ("point", "repetition", "discarded", "start", "end")}, **s}


def test_each_query_gets_the_counters_between_its_edges(tmp_path):
    raw = tmp_path / "raw"
    warm, r0, r1 = rep("p", 0, 10, 12, True), rep("p", 0, 14, 16), rep("p", 1, 18, 20)
    write(raw, "s1-1-p", [{"event": "app"}, warm, r0, r1],
          [{"after": None, **snap(5, 0)}, after(warm, snap(12.5, 4)), after(r0, snap(16.2, 10, pgs=40)),
           after(r1, snap(20.1, 13, pgs=48))])
    ops = osd_ops(raw)
    assert set(ops) == {("p", 0, 14), ("p", 1, 18)}             # the warm-up query is not a repetition
    assert ops[("p", 0, 14)] == {"osd_read_ops": 6, "osd_read_reply_bytes": 600, "osd_ops": 6, "osd_reply_bytes": 600,
                                 "osd_store_reads": 12, "osd_store_read_bytes": 66, "osd_pgs": 40}
    assert ops[("p", 1, 18)]["osd_read_ops"] == 3 and ops[("p", 1, 18)]["osd_pgs"] == 48   # a gauge: as the query left it


def test_a_late_snapshot_a_missing_one_or_a_restart_leaves_the_columns_empty(tmp_path):
    raw = tmp_path / "raw"
    r0, r1, r2, r3 = rep("p", 0, 10, 12), rep("p", 1, 14, 16), rep("p", 2, 18, 20), rep("p", 3, 22, 24)
    write(raw, "s1-1-p", [r0, r1, r2, r3],
          [{"after": None, **snap(5, 0)},
           after(r0, snap(14.5, 4)),                 # finished after r1 began: neither r0 nor r1 is exact
           after(r1, snap(16.5, 8)),
           {"after": after(r2, {})["after"], "error": "[node2 ceph counters] failed"},
           after(r3, snap(24.5, 20, pid=9))])
    assert osd_ops(raw) == {}
    write(raw, "s1-1-p", [r0], [after(r0, snap(12.5, 1))])   # no snapshot before the application's first query
    assert osd_ops(raw) == {}


def test_memstore_osds_have_no_store_counters(tmp_path):
    raw = tmp_path / "raw"
    r0 = rep("p", 0, 10, 12)
    write(raw, "s1-1-p", [r0], [{"after": None, **snap(5, 0, store=False)}, after(r0, snap(12.5, 3, store=False))])
    assert osd_ops(raw)[("p", 0, 10)]["osd_store_read_bytes"] is None


def test_connector_sums_become_seconds_and_counts():
    cols = cls_columns({"read_ns": 2_000_000_000, "rows_in": 40, "batches_out": 3, "calls": 2,
                        "reply_wait_ns": 500_000_000})
    assert cols == {"cls_read_s": 2.0, "cls_rows_in": 40, "cls_batches_out": 3, "cls_calls": 2, "reply_wait_s": 0.5}
    assert cls_columns(None) == {} and cls_columns({}) == {}
