"""The connector end to end on the local cluster: Ceph (rados_deploy), the taxi dataset
(data_deploy), Spark (spark_deploy). One Spark application runs every query (Spark start-up
dominates); the tests check its answers."""
import json
import math
import re
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sae import connector
from sae.app import BACKEND_SCAN
from sae.connector.protocol import Request
from sae.planning import queries
from sae.planning.readers import spark_ddl
from sae.running.tenant_load import ScanTenant

APP = Path(__file__).parent / "apps" / "correctness.py"
VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "scan"
SELECTIVITIES = {"1": 0.01, "10": 0.10, "50": 0.50, "100": 1.0}
SHAPE_SELECTIVITY = {"sum": "100", "groupby": "100", "topk": "10", "join": "50", "lookup": "100"}
"""The selectivity each query shape of sae.planning.queries runs at (where it has the filter). The
key queries read views of keys a run makes from its data (workload.keys, workload.probe):
test_indexed_run runs them through sae on the shared cluster."""
SHAPES = [name for name, q in queries.QUERIES.items() if q.sql and not q.views]
"""The query shapes every reader answers here."""
EDGE = {
    "groups": "SELECT grp, COUNT(*), COUNT(amount), SUM(amount), SUM(units), MIN(score), MAX(score), MIN(name), "
              "MAX(name), AVG(small), MIN(flag), MAX(ratio) FROM edge GROUP BY grp",
    "filtered_groups": "SELECT grp, flag, COUNT(*), SUM(units), MAX(score) FROM edge WHERE small < 4 GROUP BY grp, flag",
    "empty_groups": "SELECT grp, COUNT(*), SUM(units) FROM edge WHERE id > 1000 GROUP BY grp",
    "empty_global": "SELECT COUNT(*), COUNT(score), SUM(units), MAX(score), MIN(name) FROM edge WHERE id > 1000",
    "ties": "SELECT small FROM edge ORDER BY small LIMIT 8",
    "nan_nulls_first": "SELECT score FROM edge ORDER BY score DESC NULLS FIRST LIMIT 6",
    "nan_nulls_last": "SELECT score FROM edge ORDER BY score ASC NULLS LAST LIMIT 6",
    "limit": "SELECT COUNT(*) FROM (SELECT id FROM edge LIMIT 7)",
    "overflow": "SELECT SUM(big) FROM edge",
    "time_eq": "SELECT id, ts FROM edge WHERE ts = TIMESTAMP_NTZ '2024-01-01 03:05:00.00125'",
    "time_in": "SELECT id FROM edge WHERE ts IN (TIMESTAMP_NTZ '2024-01-01 01:51:00.00075', "
               "TIMESTAMP_NTZ '2024-01-01 05:33:00.00225', TIMESTAMP_NTZ '2024-01-01 12:20:00.005')",
    "time_range_utc": "SELECT id, ts_utc FROM edge WHERE ts_utc >= TIMESTAMP '2024-01-01 06:10:00.0025Z' "
                      "AND ts_utc < TIMESTAMP '2024-01-01 08:38:00.003501Z'",
    "key_in": "SELECT id, name FROM edge WHERE id IN (3, 7, 1000)",
}
"""Edge cases over the protocol's sample table (NULL groups and values, NaN, ties, a 32-bit
overflowing sum, empty groups, a 64-bit overflow, times with and without a zone: rows 5, 3, 9
and 20, 10 to 14; keys of the OSD index of ``id``), each run by every reader."""


@pytest.fixture(scope="module")
def spec(spark_cluster, ceph_cluster):
    return connector.build(spark=spark_cluster, ceph=ceph_cluster)


@pytest.fixture(scope="module")
def mounted(spark_cluster, ceph_cluster):
    nodes = [spark_cluster.driver_node, *spark_cluster.worker_nodes]
    report = ceph_cluster.mount(nodes)
    try:
        yield report
    finally:
        ceph_cluster.unmount(nodes)


@pytest.fixture(scope="module")
def event_log_dir(tmp_path_factory):
    """Where the correctness application writes Spark's event log (local hosts share the disk)."""
    return tmp_path_factory.mktemp("events")


@pytest.fixture(scope="module")
def answers(spark_cluster, ceph_cluster, spec, mounted, taxi_dataset, zones_dataset, edge_dataset, edge_csv_dataset,
            tmp_path_factory, event_log_dir):
    ceph_cluster.index(edge_dataset, "id")   # for the offload-index reader
    thresholds = {k: taxi_dataset.threshold(f) for k, f in SELECTIVITIES.items()}
    mount = mounted.details['mountpoint']
    cfg = {"path": taxi_dataset.dest, "vanilla": f"file://{mount}{taxi_dataset.dest}",
           "options": spec.options, "register": spec.register, "thresholds": thresholds,
           "zones": {"path": zones_dataset, "vanilla": f"file://{mount}{zones_dataset}"},
           "edge": {"path": edge_dataset, "vanilla": f"file://{mount}{edge_dataset}", "queries": EDGE,
                    "csv": {"path": edge_csv_dataset, "vanilla": f"file://{mount}{edge_csv_dataset}",
                            "schema": spark_ddl(pq.read_schema(VECTORS / "sample.parquet"))}},
           "shapes": {name: queries.QUERIES[name].statement("total_amount", thresholds[SHAPE_SELECTIVITY[name]])
                      for name in SHAPES}}
    kwargs = spec.submit_kwargs()
    kwargs["conf"].update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{event_log_dir}",
                           "spark.eventLog.compress": "false"})   # Spark 4 compresses it by default
    result = spark_cluster.submit(str(APP), args=[json.dumps(cfg)], log_dir=tmp_path_factory.mktemp("logs"), **kwargs)
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("sae-result "))
    return json.loads(line[len("sae-result "):]), taxi_dataset


@pytest.fixture(scope="module")
def event_logs(answers, event_log_dir):
    """The text of the correctness application's event log files."""
    return [p.read_text(errors="replace") for p in Path(event_log_dir).rglob("*") if p.is_file()]   # rolling: a dir per app


def same(a, b) -> bool:
    """Equal counts and sums of total_amount (sums to float rounding: row order differs)."""
    return a[0] == b[0] and math.isclose(a[1] or 0.0, b[1] or 0.0, rel_tol=1e-9, abs_tol=1e-6)


def test_selectivities_agree_across_readers(answers):
    out, data = answers
    for sel, fraction in SELECTIVITIES.items():
        r = out["selectivity"][sel]
        assert same(r["offload"], r["vanilla"]) and same(r["no-offload"], r["vanilla"]), (sel, r)
        assert same(r["offload-x2"], r["vanilla"]), (sel, r)   # two objects per task, calls in flight together
        assert same(r["auto"], r["vanilla"]), (sel, r)   # some objects pushed, some read whole
        assert same(r["auto-local"], r["vanilla"]), (sel, r)   # every object read whole, scanned in the task
        assert abs(r["vanilla"][0] - fraction * data.rows) <= 0.002 * data.rows, (sel, r)


def test_offload_takes_one_task_per_slot_auto_and_no_offload_pack_by_bytes(answers):
    """Where the OSDs scan every object (offload), a query's objects go to one task per executor
    slot whatever Spark's bytes per task; with no-offload the executors decode every byte, and
    auto's first query of a shape knows nothing of the storage side yet, so both pack objects by
    bytes as Spark packs files (at 1 MiB per task: an object per task)."""
    out, data = answers
    tasks = out["tasks"]
    assert tasks["offload"] == min(len(data.files), tasks["slots"]) < len(data.files), tasks
    assert tasks["auto"] == tasks["no-offload"] == len(data.files), tasks


def test_auto_plans_a_shape_by_what_its_last_query_found_of_the_storage_cpu(answers):
    """Mode auto's first query of a shape packs its objects by bytes (an object per task here);
    each later one takes one task per slot, as offload does, where none of the last query's tasks
    found the storage side short of CPU, and packs by bytes again where some did. Every task of
    the model tells (the first object of a shape is pushed, so its replies report the calls)."""
    out, data = answers
    slots, objects = out["tasks"]["slots"], len(data.files)
    layouts = out["auto_layouts"]
    assert layouts[0]["tasks"] == objects, layouts[0]
    for last, this in zip(layouts, layouts[1:]):
        assert this["tasks"] == (slots if last["tasks_short_of_cpu"] == 0 else objects), (last, this)
        assert 0 <= this["tasks_short_of_cpu"] <= this["tasks"], this


def test_auto_pushes_some_objects_and_reads_the_others_whole(answers):
    """Mode auto, each selectivity a new query shape: the first object is pushed, the next read
    whole, then each the way that cost less; every object is read exactly once one way or the
    other, the OSD scans only the pushed ones, the task the others, with the same request: the
    filter and the count and sum are pushed as offload pushes them, no filter left in Spark.
    Told to read every object whole (pushback=always), no class call is made."""
    out, data = answers
    objects = len(data.files)
    for sel in SELECTIVITIES:
        scan, plan = out["selectivity"][sel]["auto-scan"], out["selectivity"][sel]["auto-plan"]
        assert scan["calls"] >= 1 and scan["objects_read_whole"] >= 1, (sel, scan)
        assert scan["calls"] + scan["objects_read_whole"] == objects, (sel, scan)
        assert scan["rows_in"] < data.rows, (sel, scan)   # the objects read whole were not scanned in the OSD
        assert "mode=auto" in plan and "LessThan(total_amount," in plan and "Aggregates: [count_star(*)" in plan, plan
        assert not re.search(r"Filter .*total_amount#\d+ < ", plan), plan
        local = out["selectivity"][sel]["auto-local-scan"]
        assert local["calls"] == 0 and local["objects_read_whole"] == objects and local["rows_in"] == 0, (sel, local)
        assert 0 < local["client_local_scan_ns"] <= local["client_decode_ns"], (sel, local)   # the scans here, timed
        assert 0 <= scan["client_local_scan_ns"] <= scan["client_decode_ns"], (sel, scan)


def test_auto_in_one_task_reads_every_object_once_whichever_way(answers):
    """Mode auto, every object in one task, eight times: whatever was pushed, read whole in turn
    or kept back at the end of the list and scanned while the pushed replies were awaited (how
    many is the cost model's call on this machine), every answer is vanilla's and every object
    was read once. Told to keep back half (pushback=half), the task reads the last half whole,
    scanning them while the first half's pushed replies are awaited, and answers alike."""
    out, data = answers
    objects, vanilla = len(data.files), out["selectivity"]["1"]["vanilla"]
    for answer, scan in out["one_task"]:
        assert same(answer, vanilla), (answer, scan)
        assert scan["calls"] + scan["objects_read_whole"] == objects, scan
        assert 0 <= scan["objects_read_alongside"] <= scan["objects_read_whole"], scan
    answer, scan, plan = out["one_task_half"]
    assert same(answer, vanilla), (answer, scan)
    assert scan["objects_read_alongside"] == scan["objects_read_whole"] == objects // 2, scan
    assert scan["calls"] == objects - objects // 2 and 0 < scan["rows_in"] < data.rows, scan
    assert 0 < scan["client_local_scan_ns"] <= scan["client_decode_ns"], scan
    assert "mode=auto pushback=half " in plan, plan


def test_filters_are_pushed(answers):
    out, _ = answers
    assert "LessThan(total_amount," in out["pushed_plan"]


def test_projection_returns_only_asked_columns(answers):
    out, _ = answers
    p = out["projection"]
    assert p["columns"] == ["total_amount", "VendorID"] == p["schema"]
    assert same(p["agg"], out["selectivity"]["10"]["vanilla"])


def test_columns_are_pruned_to_what_the_query_uses(answers):
    """No columns option: Spark prunes the scan; the pushed filter's column is read in the OSD only."""
    pr = answers[0]["pruning"]
    assert pr["select"]["scan"] == ["VendorID", "trip_distance"] == pr["select"]["osd"], pr["select"]
    assert pr["select"]["columns"] == ["VendorID", "trip_distance"]
    n, vendor, dist = pr["select"]["sums"]
    assert [n, vendor] == pr["select"]["vanilla"][:2] and n > 0
    assert math.isclose(dist, pr["select"]["vanilla"][2], rel_tol=1e-9)
    assert pr["agg"]["scan"] == ["total_amount"]
    assert same(pr["agg"]["agg"], answers[0]["selectivity"]["10"]["vanilla"])


def test_count_reads_one_column_in_the_osd(answers):
    pr, data = answers[0]["pruning"], answers[1]
    assert pr["count"]["scan"] == [] == pr["count"]["filtered_scan"] and len(pr["count"]["osd"]) == 1
    assert pr["count"]["n"] == data.rows
    assert pr["count"]["filtered_n"] == answers[0]["selectivity"]["10"]["vanilla"][0]
    assert pr["star"]["scan"] == pr["star"]["schema"] and len(pr["star"]["schema"]) == 19


def test_no_offload_asks_the_osd_for_every_column(answers):
    assert answers[0]["pruning"]["count"]["no_offload_osd"] == "*"


def test_schema_matches_vanilla(answers):
    s = answers[0]["schema"]
    assert s["offload"] == s["no-offload"] == s["vanilla"], s


def close(a, b) -> bool:
    """Equal, floats to rounding (summation order differs between readers)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9,
                                                                                             abs_tol=1e-6)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("query", ["self_join", "union", "group_by", "ordered_limit", "strings", "timestamps",
                                   "nulls"])
def test_user_queries_agree_with_vanilla(answers, query):
    r = answers[0]["queries"][query]
    assert close(r["offload"], r["vanilla"]), (query, r)
    assert close(r["no-offload"], r["vanilla"]), (query, r)
    assert r["vanilla"] not in ([], [0], None)


def test_filter_the_class_cannot_run_stays_exact(answers):
    out, _ = answers
    r = out["unsupported"]
    assert same(r["offload"], r["vanilla"]) and same(r["no-offload"], r["vanilla"])
    assert r["vanilla"][0] > 0


def test_repeated_queries_on_one_dataframe_stay_exact(answers):
    out, data = answers
    rep = out["repeated"]
    for i, name in enumerate(rep["queries"]):
        assert same(rep["offload"][i], rep["vanilla"][i]), (name, rep["offload"][i], rep["vanilla"][i])
        assert same(rep["no-offload"][i], rep["vanilla"][i]), (name, rep["no-offload"][i], rep["vanilla"][i])
    assert rep["vanilla"][rep["queries"].index("all")][0] == data.rows


def test_sql_view_using_the_source(answers):
    out = answers[0]
    assert same(out["sql_using"], out["repeated"]["vanilla"][out["repeated"]["queries"].index("sql-lt1")])


def test_scan_metrics_sum_the_class_replies_and_show_in_sparks_ui(answers, event_logs):
    """The connector's custom metrics per query: the class scanned every row of every object
    once and returned what the query counted; no-offload returned every row; the tasks'
    requests, waits, decoding and Spark's work sum to within 10 % of their reading time; Spark's
    UI (REST view of the SQL tab) and its event log show them."""
    m, data = answers[0]["metrics"], answers[1]
    objects = len(data.files)
    for reader, rows_out in (("offload", m["offload"]["rows"]), ("no-offload", data.rows)):
        scan = m[reader]["scan"]
        assert (scan["rows_in"], scan["rows_out"], scan["calls"]) == (data.rows, rows_out, objects), (reader, scan)
        assert scan["batches_in"] >= objects and 0 < scan["batches_out"] <= scan["batches_in"], (reader, scan)
        assert 0 < scan["read_bytes"] and 0 < scan["reply_bytes"], (reader, scan)
        phases = sum(scan[k] for k in ("read_ns", "decode_ns", "filter_ns", "project_ns", "encode_ns", "compress_ns",
                                       "reply_ns"))
        assert 0 < phases <= scan["total_ns"] <= scan["wall_ns"], (reader, scan)
        # the tasks' side in time: requests, waits, decoding and Spark's work make up their reading
        client = [scan[k] for k in ("client_request_ns", "reply_wait_ns", "client_decode_ns", "client_spark_ns")]
        assert all(v > 0 for v in client) and abs(sum(client) - scan["client_reader_ns"]) <= 0.1 * \
            scan["client_reader_ns"], (reader, scan)
    assert m["offload"]["scan"]["reply_bytes"] < m["no-offload"]["scan"]["reply_bytes"]
    assert m["vanilla"] == {}
    ui = m["ui"]   # the last sae-ceph scan: no-offload
    assert ui["sae OSD: rows returned (count)"] == str(data.rows) and ui["sae object class calls made (count)"] == \
        str(objects), ui
    assert float(ui["sae OSD: CPU time decoding Parquet (footer and column chunks), reads excluded (ms)"]) > 0
    assert any("sae OSD: rows returned (count)" in text for text in event_logs), "no custom metric in the event log"


def test_whole_objects_give_the_rows_arrow_replies_give(answers):
    """At 100 % with every column, the class sends each object as stored and Spark's Parquet
    reader decodes it: every row's hash over every column equals Arrow IPC's, no-offload's,
    vanilla's and that of auto scanning every object in the task."""
    w, data = answers[0]["whole"], answers[1]
    assert w["offload"]["rows"] == w["ipc"]["rows"] == w["no-offload"]["rows"] == w["vanilla"]["rows"], w
    assert w["auto-local"]["rows"] == w["vanilla"]["rows"] and w["auto-local"]["scan"]["calls"] == 0, w
    assert w["offload"]["rows"][0] == data.rows
    assert w["offload"]["scan"]["whole_objects"] == len(data.files) == w["offload"]["scan"]["calls"]
    assert w["ipc"]["scan"]["whole_objects"] == 0 == w["no-offload"]["scan"]["whole_objects"]
    assert w["offload"]["scan"]["encode_ns"] == 0 < w["ipc"]["scan"]["encode_ns"]


def test_build_and_mount_are_idempotent(spark_cluster, ceph_cluster, spec, mounted):
    again = connector.build(spark=spark_cluster, ceph=ceph_cluster)
    assert not again.report.changed, again.report.summary()
    assert again.py_files == spec.py_files == [] and again.jars == spec.jars and spec.register == []
    nodes = [spark_cluster.driver_node, *spark_cluster.worker_nodes]
    assert not ceph_cluster.mount(nodes).changed


COUNT_APP = """
import json, sys
from pyspark.sql import SparkSession
cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("sae connector session").getOrCreate()
print("sae-count", spark.read.format("sae-ceph").options(**cfg["options"]).load(cfg["path"]).count())
"""


def _library_sessions(ceph) -> set:
    """MDS session ids of libcephfs clients (ceph-fuse mounts, which name a mount point, left out)."""
    mds = ceph.topology.mdss[0]
    r = ceph.cluster.run(["ceph", "-c", ceph.client_conf(mds), "tell", f"mds.{mds}", "session", "ls",
                          "--format", "json"], nodes=[mds], stage="test sessions")[mds]["stdout"]
    return {s["id"] for s in json.loads(r) if "mount_point" not in s.get("client_metadata", {})}


def test_finished_application_closes_its_cephfs_session(spark_cluster, ceph_cluster, spec, taxi_dataset, tmp_path):
    """The driver's CephFS session ends with its JVM (left open, it lingers on the MDS and delays
    the next application's first mount)."""
    before = _library_sessions(ceph_cluster)
    app = tmp_path / "count.py"
    app.write_text(COUNT_APP)
    result = spark_cluster.submit(str(app), args=[json.dumps({"path": taxi_dataset.dest, "options": spec.options})],
                                  log_dir=tmp_path, stream=False, **spec.submit_kwargs())
    assert f"sae-count {taxi_dataset.rows}" in result.stdout
    deadline = time.monotonic() + 30
    while _library_sessions(ceph_cluster) - before and time.monotonic() < deadline:
        time.sleep(1)
    assert not _library_sessions(ceph_cluster) - before, "the application's CephFS session outlived it"


def test_a_stopped_scan_tenant_leaves_no_cephfs_session(local_cluster, ceph_cluster, taxi_dataset):
    """The contention experiment's second application (``cluster.storage_scans``) lists the
    objects through libcephfs, then only calls the class: while it runs and once it is stopped (a
    signal), no CephFS session of its remains. One left by a stopped tenant kept its capabilities
    on the dataset's directories until the MDS timed it out, and the next experiment's deploy
    waited that minute on its mkdir (measured: 50 s in the catalogue, after contention)."""
    host = taxi_dataset.node
    remote = f"{local_cluster.node_dir(host, 'sae')}/test-{BACKEND_SCAN.name}"
    ceph_cluster.cluster.put(str(BACKEND_SCAN), remote, nodes=[host], stage="test tenant")
    request = Request(columns=[], filter={"cmp": "<", "column": "total_amount", "value": 0.0}, codec="none")
    cfg = {"ceph_conf": taxi_dataset.ceph_conf, "ceph_user": ceph_cluster.users.scan.id, "path": taxi_dataset.dest,
           "request": request.encode().hex(), "reply_limit": 2 * taxi_dataset.object_size, "in_flight": 2,
           "reps": None}
    before = _library_sessions(ceph_cluster)
    tenant = ScanTenant(local_cluster, host, [ceph_cluster.client_python, remote, json.dumps(cfg)], 2)

    def answered() -> float:   # calls answered so far, as sampled from the tenant's log
        return tenant.calls.totals[-1] if tenant.calls.totals else 0

    with tenant:
        deadline = time.monotonic() + 60
        while not answered() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert answered(), "the tenant answered no call in a minute"
        assert not _library_sessions(ceph_cluster) - before, "the running tenant kept its CephFS session"
    assert not _library_sessions(ceph_cluster) - before, "the stopped tenant left its CephFS session"


def test_the_connector_reads_as_the_cephx_user_it_is_given(spark_cluster, ceph_cluster, spec, taxi_dataset, tmp_path):
    """The build names the least-privilege scan user (the answers above were read as it); a user
    without the class call (the read-only mount's) is refused by the OSDs."""
    assert spec.options["ceph_user"] == ceph_cluster.users.scan.id
    app = tmp_path / "count.py"
    app.write_text(COUNT_APP)
    options = dict(spec.options, ceph_user=ceph_cluster.users.fs_read.id)
    result = spark_cluster.submit(str(app), args=[json.dumps({"path": taxi_dataset.dest, "options": options})],
                                  log_dir=tmp_path, stream=False, check=False, **spec.submit_kwargs())
    log = result.stdout + (result.driver_log.read_text() if result.driver_log else "")
    assert result.exit_code != 0 and not any(ln.startswith("sae-count ") for ln in result.stdout.splitlines())
    assert "sae.schema on object" in log and "errno 1 (EPERM)" in log, log[-2000:]


@pytest.mark.parametrize("name", SHAPES)
def test_query_shapes_agree_across_readers(answers, name):
    """Each query shape's answer is the same rows from every reader (floats to 1e-9 relative:
    Spark sums in no fixed order), and not empty."""
    r = answers[0]["shapes"][name]
    got = {reader: json.dumps(r[reader]["rows"]) for reader in r}
    assert queries.same_answers(list(got.values())), (name, got)
    assert r["vanilla"]["rows"], name
    for op in ("GroupBy:", "TopN:", "Limit:"):   # auto pushes what offload pushes, scanning some objects in the task
        pushed = any(op in s for s in r["offload"]["scans"])
        assert pushed == any(op in s for s in r["auto"]["scans"]) == any(op in s for s in r["auto-local"]["scans"]), (
            op, r["offload"]["scans"], r["auto"]["scans"])
    assert all("mode=auto pushback=always " in s for s in r["auto-local"]["scans"]), r["auto-local"]["scans"]
    assert all("mode=auto pushback=cost " in s for s in r["auto"]["scans"]), r["auto"]["scans"]


def test_aggregates_run_in_the_osds_and_move_a_row_per_group(answers):
    """The group-by and the scalar sum at 100 %: the offload scan carries the aggregation, each
    object answers with its groups' partials (rows out = groups per object), far fewer bytes
    than the same reader's rows; the aggregates-off offload still filters and projects only."""
    shapes, data = answers[0]["shapes"], answers[1]
    objects = len(data.files)
    for name, groups in (("groupby", len(shapes["groupby"]["vanilla"]["rows"])), ("sum", 1)):
        agg, rows = shapes[name]["offload"], shapes[name]["offload-rows"]
        assert any("GroupBy:" in s for s in agg["scans"]) and not any("GroupBy:" in s for s in rows["scans"]), name
        assert agg["scan"]["rows_in"] == data.rows == rows["scan"]["rows_in"], (name, agg["scan"])
        assert objects <= agg["scan"]["rows_out"] <= groups * objects, (name, agg["scan"])
        assert rows["scan"]["rows_out"] == data.rows, (name, rows["scan"])
        assert agg["scan"]["reply_bytes"] * 20 < rows["scan"]["reply_bytes"], (name, agg["scan"], rows["scan"])
        assert agg["scan"]["aggregate_ns"] > 0, (name, agg["scan"])


def test_a_joins_runtime_filter_reaches_the_osds(answers):
    """The join keeps trips from 2 of 265 pickup zones: Spark's dynamic pruning hands the trips
    scan the zones' keys, the class filters on them, and far fewer rows come back than pass the
    selectivity filter alone."""
    join, data = answers[0]["shapes"]["join"], answers[1]
    trips = next(s for s in join["offload"]["scans"] if "-zones" not in s)
    assert "In(PULocationID" in trips, trips
    assert join["offload"]["scan"]["rows_out"] < 0.2 * 0.5 * data.rows, join["offload"]["scan"]
    assert join["offload"]["scan"]["rows_out"] < join["no-offload"]["scan"]["rows_out"] / 10


def test_a_top_k_runs_in_the_osds_and_moves_its_rows_per_object(answers):
    """ORDER BY ... LIMIT 100: each object returns its top 100 (and the rows tied with the
    100th), Spark sorts what they returned; the operators-off offload returns every row that
    passes the filter."""
    shape, data = answers[0]["shapes"]["topk"], answers[1]
    objects = len(data.files)
    top, rows = shape["offload"], shape["offload-rows"]
    assert any("TopN: 100" in s for s in top["scans"]) and not any("TopN" in s for s in rows["scans"]), top["scans"]
    assert 100 <= top["scan"]["rows_out"] <= 110 * objects, top["scan"]
    assert top["scan"]["rows_out"] * 10 < rows["scan"]["rows_out"], (top["scan"], rows["scan"])
    assert top["scan"]["sort_ns"] > 0, top["scan"]


@pytest.mark.parametrize("name", [n for n in EDGE if n != "overflow"])
def test_edge_cases_agree_across_readers_with_the_work_in_the_osds(answers, name):
    """NULL groups, NaN in MIN/MAX and in ORDER BY, COUNT(col) against COUNT(*), an int32 sum
    beyond 2^31, empty groups and an empty global aggregate, ties at a LIMIT, timestamps compared
    with and without a zone, keys of the OSD index: every reader gives vanilla's answer, the table
    stored as CSV too (the connector given its schema, and Spark's CSV reader), and the offload
    readers did the aggregate, the top rows or the filter in the OSD (offload-index's scans asking
    for the index), and auto with every object read whole did them in the task."""
    r = answers[0]["edge"][name]
    assert queries.same_answers([json.dumps(r[reader]["rows"]) for reader in r]), (name, r)
    assert r["vanilla"]["rows"] or "id > 1000" in EDGE[name], (name, r["vanilla"])
    pushed = "GroupBy:" if "COUNT" in EDGE[name] and "LIMIT" not in EDGE[name] else "TopN:" if "ORDER BY" in EDGE[name] \
        else "Limit:" if "LIMIT" in EDGE[name] else \
        {"time_eq": "EqualTo(ts,", "time_in": "In(ts, [", "time_range_utc": "LessThan(ts_utc,", "key_in": "In(id, ["}[name]
    # the last two: the class's scan in the task
    for reader in ("offload", "offload-index", "csv-offload", "auto-local", "csv-auto-local"):
        assert any(pushed in s for s in r[reader]["scans"]), (name, reader, r[reader]["scans"])
    assert all(" index compression=" in s for s in r["offload-index"]["scans"]), r["offload-index"]["scans"]


def test_csv_loads_without_what_csv_needs_are_refused_in_one_line(answers):
    """A CSV table's schema comes from the user: a load without it, with the columns option, or
    with a type the class cannot parse from text fails with one line saying what to do (the last
    two when the query's scan is built, as Spark's own CSV reader checks a given schema at read)."""
    r = answers[0]["csv_refusals"]
    assert "holds CSV files, which store no schema; give their columns in file order" in r["no_schema"], r
    assert "CSV files are read by the given schema" in r["columns"], r
    assert "schema column m is map<string,int>, which the class cannot parse from CSV" in r["map_type"], r


def test_a_sum_beyond_64_bits_fails_in_every_reader(answers):
    """SUM over int64 values whose total leaves 64 bits: Spark (ANSI) fails the query, and so
    does the offload reader, whose OSD refuses the partial sum naming the column, and auto's
    scan in the task, alike."""
    r = answers[0]["edge"]["overflow"]
    assert all("error" in r[reader] for reader in r), r
    assert "overflows a 64-bit integer" in r["offload"]["error"] and "big" in r["offload"]["error"], r["offload"]
    assert "overflow" in r["vanilla"]["error"].lower(), r["vanilla"]
    local = r["auto-local"]["error"]
    assert "scanned here, read whole: " in local and "overflows a 64-bit integer" in local, local


def test_bad_connector_options_are_refused_in_one_line(answers):
    """Mode auto without the scan library, option pushback outside mode auto or with an unknown
    value, and a library path that does not load: one line naming the option (or the library)
    and what to do."""
    r = answers[0]["option_refusals"]
    assert "sae-ceph option scan_library=None is invalid; mode auto scans the objects it reads whole" in \
        r["auto_without_library"], r
    assert "sae-ceph option pushback='always' is invalid; it applies to mode auto only" in r["pushback_outside_auto"], r
    assert "sae-ceph option pushback='sometimes' is invalid; use cost, never, always or half" in r["pushback_unknown"], r
    assert "sae-ceph] cannot load scan_library /nonexistent/libsae_scan.so" in r["library_missing"], r
    assert "install_scan_library" in r["library_missing"], r
