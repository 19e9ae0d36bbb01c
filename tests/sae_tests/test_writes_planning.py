"""Pure: the writers and write jobs as entries, what the planner refuses of them in one line,
experiments/writes.py's plan, the storage operations by type of a job's window (the application's
``written`` snapshot ends it, before the read back) and the writes figure drawn from results.
The write path itself: tests/connector (sae-ceph) and the catalogue (writes.py on a cluster)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import sae
from metareserve.errors import UsageError
from rados_deploy import OpCounts
from sae.planning import writers
from sae.planning.planner import START_CEPH, plan
from sae.planning.spec import CephSpec, Experiment, Sweep, Workload
from sae.results.analysis.write_summary import write_text
from sae.results.drawing import write_figures
from sae.results.run.storage_work import op_columns, osd_ops

ROOT = Path(__file__).resolve().parents[2]


def _plan(**fields):
    return plan(Experiment(name="w", **fields))


def test_every_writer_names_a_target_function_and_an_interface():
    import importlib
    for w in writers.WRITERS.values():
        module, _, function = w.target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), w.name
        assert w.kind in writers.KINDS and w.interface in ("s3", "cephfs") and w.commit and w.label
    assert [j for j, job in writers.JOBS.items() if not job.writes] == ["read-only"]


@pytest.mark.parametrize("fields, says", [
    ({"workload": Workload(writer="hdfs")}, "workload.writer 'hdfs' is not one of sae-ceph, cephfs-v1"),
    ({"workload": Workload(writer="sae-ceph", write="sort")}, "workload.write 'sort' is not one of one-object"),
    ({"workload": Workload(writer="s3a-magic")},
     "workload.writer s3a-magic writes through S3, which needs the RADOS Gateway: set ceph.rgw true"),
    ({"workload": Workload(writer="sae-ceph", write="teragen", write_rows=0)},
     "workload.write_rows (rows teragen generates) must be an integer >= 1"),
    ({"workload": Workload(writer="sae-ceph", write="teragen", write_tasks=0)},
     "workload.write_tasks (tasks teragen writes in) must be an integer >= 1"),
    ({"workload": Workload(writer="sae-ceph", write="copy", write_tasks=8)},
     "workload.write_tasks 8: only teragen chooses its tasks (the copy job writes in the tasks its input comes in)"),
    ({"workload": Workload(writer="sae-ceph", query="sum")}, "workload.writer sae-ceph: a write job (copy) asks no query"),
    ({"workload": Workload(writer="cephfs-v1", reader="cache")},
     "workload.writer cephfs-v1: the copy job reads the dataset with workload.reader, which cannot be cache"),
    ({"ceph": CephSpec(rgw="yes")}, "ceph.rgw must be true or false"),
])
def test_bad_write_points_are_refused_in_one_line(fields, says):
    with pytest.raises(UsageError) as e:
        _plan(**fields)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_shipped_experiment_writes_every_job_through_every_writer_on_the_shared_stack():
    exp = sae.load_experiment(ROOT / "experiments" / "writes.py")
    p = sae.plan(exp.with_profile("tiny"), profile="tiny")
    pairs = {(x.spec.workload.writer, x.spec.workload.write) for x in p.points}
    assert pairs == {(w, j) for w in writers.WRITERS for j in writers.JOBS}
    tasks = {(x.spec.workload.write, x.spec.workload.write_tasks) for x in p.points}
    assert {t for j, t in tasks if j == "teragen"} == {None, 16} and {t for j, t in tasks if j != "teragen"} == {None}
    assert {x.spec.ceph.rgw for x in p.points} == {True} and START_CEPH["rgw"] is False
    reads = sae.plan(sae.load_experiment(ROOT / "experiments" / "selectivity.py").with_profile("tiny"), profile="tiny")
    # the gateway is started on the running stack: the same stack, another start
    assert p.points[0].stack_key == reads.points[0].stack_key and p.points[0].start_key != reads.points[0].start_key


def test_sae_ceph_writes_objects_of_the_points_dataset_size_and_the_baselines_are_left_as_spark_writes():
    from sae.running.execute import write_config
    from sae.running.writer import sae_ceph
    from types import SimpleNamespace
    exp = sae.load_experiment(ROOT / "experiments" / "writes.py")
    points = sae.plan(exp.with_profile("tiny"), profile="tiny").points
    build = SimpleNamespace(format="sae-ceph", write_options={"ceph_user": "w"}, options={"ceph_user": "r"})
    stack = SimpleNamespace(writes={"sae-ceph": sae_ceph(SimpleNamespace(build=build), writers.get("sae-ceph"))})
    ctx = SimpleNamespace(run=SimpleNamespace(root=Path("/r/20261204-1")))
    point = next(x for x in points if x.spec.workload.writer == "sae-ceph")
    options = write_config(ctx, stack, point)["write"]["options"]
    assert options == {"ceph_user": "w", "object_size": str(point.spec.data.object_size)}
    assert point.spec.data.object_size == 16 << 20   # the tiny profile's, not the connector's 8 MiB default
    plain = writers.Output(format="parquet", uri="s3a://b", options={"k": "v"}, read_format="parquet",
                           read_uri="s3a://b", read_options={})
    assert plain.app_config(16 << 20)["options"] == {"k": "v"} and "sized_by" not in plain.app_config(1)


def _counts(t, **groups):
    empty = {g: {} for g in ("rgw", "rgw_failed", "rgw_bytes", "rgw_rados", "mds", "mds_rados", "osd")}
    return OpCounts(t, t + 0.1, **{**empty, **groups}, pids={"osd.0": 1})


def test_a_jobs_operations_are_its_requests_beside_the_osds_own_counts():
    before = _counts(0, osd={"op_r": 10, "op_w": 10, "op_rw": 0, "op_in_bytes": 100})
    after = _counts(5, rgw={"put_obj": 3, "head_obj": 4, "list_bucket": 1}, mds={"create": 2, "client_requests": 9},
                    rgw_rados={"op_w": 6, "op_r": 2, "osdop_writefull": 4, "osdop_call": 3, "osdop_read": 2},
                    mds_rados={"op_w": 3, "osdop_write": 3},
                    osd={"op_r": 13, "op_w": 21, "op_rw": 1, "op_in_bytes": 5100})
    cols = op_columns(after.delta(before))
    assert cols["ops_rgw_put_obj"] == 3 and cols["ops_mds_create"] == 2 and "ops_mds_client_requests" not in cols
    assert cols["storage_ops"] == 3 + 4 + 1 + 2   # the interfaces' requests, not the RADOS ops behind them
    assert {c: n for c, n in cols.items() if c.startswith("ops_rados_")} == {
        "ops_rados_rgw_writefull": 4, "ops_rados_rgw_call": 3, "ops_rados_rgw_read": 2, "ops_rados_mds_write": 3}
    assert (cols["ops_osd_read"], cols["ops_osd_write"], cols["storage_bytes_written"]) == (3, 12, 5000)


def test_a_write_jobs_window_ends_at_its_written_snapshot(tmp_path):
    osds = {"osd.0": {"read_ops": 0, "read_reply_bytes": 0, "ops": 0, "reply_bytes": 0, "store_reads": 0,
                      "store_read_hit_bytes": 0, "store_read_miss_bytes": 0, "pgs": 8}}

    def snap(after, t, puts, phase=None):
        a = None if after is None else {**after, **({"phase": phase} if phase else {})}
        return {"after": a, "begin": t, "end": t + 0.1, "osds": osds, "pids": {"osd.0": 1},
                "ops": _counts(t, rgw={"put_obj": puts}).to_dict()}
    rep = {"event": "rep", "point": "p", "repetition": 0, "discarded": False, "start": 10.0, "end": 12.0,
           "verify_start": 14.0}
    key = {k: rep[k] for k in ("point", "repetition", "discarded", "start", "end")}
    (tmp_path / "a.jsonl").write_text(json.dumps(rep) + "\n")
    lines = [snap(None, 1, 0), snap(key, 13, 5, "written"), snap(key, 20, 9)]   # 9: the read back's too
    (tmp_path / "a.ceph.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    got = osd_ops(tmp_path)[("p", 0, 10.0)]
    assert got["ops_rgw_put_obj"] == 5 and got["storage_ops"] == 5
    lines[1]["end"] = 14.5   # the snapshot ran into the read back: no columns rather than wrong ones
    (tmp_path / "a.ceph.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    assert ("p", 0, 10.0) not in osd_ops(tmp_path)


def test_the_writes_figure_stacks_operations_by_type_per_writer(tmp_path):
    rows = []
    for writer, ops in (("sae-ceph", {"ops_mds_create": 1, "ops_mds_lookup": 2}),
                        ("s3a-classic", {"ops_rgw_put_obj": 20, "ops_rgw_copy_obj": 10, "ops_rgw_head_obj": 60})):
        for job in ("one-object", "copy"):
            rows.append({"writer": writer, "write": job, "warmup": False, "total_s": 1.0, "output_bytes": 100,
                         "ops_osd_write": 3,
                         "storage_bytes_written": 300 if writer == "s3a-classic" else 100,
                         "storage_ops": sum(ops.values()), **ops})
    df = pd.DataFrame(rows)
    assert write_figures.op_types(df)[:3] == ["ops_rgw_copy_obj", "ops_rgw_head_obj", "ops_rgw_put_obj"]
    png = write_figures.plot_writes(df, tmp_path)
    assert png.name == "writes.png" and png.stat().st_size > 10_000
    assert write_figures.plot_writes(df.drop(columns=["writer"]), tmp_path) is None


def test_the_summary_sets_each_writer_against_sae_ceph_beside_stocators_tables():
    rows = []
    for writer, puts, heads in (("sae-ceph", 0, 0), ("s3a-classic", 5, 20)):
        for rep in range(6):
            rows.append({"writer": writer, "write": "one-object", "warmup": rep == 0, "total_s": 1.0 + rep / 10,
                         "storage_ops": 4 + puts + heads, "ops_mds_create": 4 if writer == "sae-ceph" else None,
                         "ops_rgw_put_obj": puts or None, "ops_rgw_head_obj": heads or None, "ops_osd_write": 2,
                         "storage_bytes_written": 300, "output_bytes": 100, "output_files": 1})
    for tasks in (16, None):   # teragen in the application's tasks, and in 16 of its choosing
        rows.append({**rows[1], "write": "teragen", "write_tasks": tasks, "output_files": tasks or 2})
    text = write_text(pd.DataFrame(rows))
    lines = text.splitlines()
    classic = next(line for line in lines if "s3a-classic" in line)
    assert " 5 " in classic and "7.25x [7.25, 7.25]" in classic and "rgw_head_obj 20, rgw_put_obj 5, mds" not in classic
    assert "rgw_head_obj 20, rgw_put_obj 5" in classic and "3.00" in classic
    jobs = [line.split("  ")[0] for line in lines[2:] if line.startswith(("one-object", "teragen"))]
    assert jobs == ["one-object", "one-object", "teragen", "teragen, 16 tasks"], jobs   # fewer tasks first
    assert next(line for line in lines if line.startswith("teragen, 16 tasks")).split()[5] == "16"   # files
    assert lines[-2].startswith("Stocator, one-object: Table I") and "117" in lines[-2]
    assert write_text(pd.DataFrame(rows).drop(columns=["writer"])) is None


def test_the_mount_is_writable_only_for_the_writers_that_write_into_it():
    into = {name for name, w in writers.WRITERS.items() if w.writes_into_mount}
    assert into == {"cephfs-v1", "cephfs-v2", "s3a-directory"}   # directory: its pending uploads


def test_the_runs_correctness_line_checks_every_output_read_back_against_its_input():
    from sae.results.analysis.summary import correctness
    df = pd.read_parquet(ROOT / "docs" / "runs" / "writes" / "results.parquet")
    assert correctness(df).endswith(f"every output read back ({len(df)} jobs) had its input's rows and checksum")
    df.loc[df.index[5], "rows_out"] += 1
    row = df.loc[df.index[5]]
    assert correctness(df).endswith(f"1 of {len(df)} outputs read back differ from their input: "
                                    f"{row['writer']} {row['write']} repetition {row['repetition']}")
