"""The key queries and the readers that keep the data in memory, in sae's Spark application
(sae/app/run_points.py with keyed.py), in Spark's local mode in a process of its own that exits,
JVM included, before the tests assert (tests/sae_tests/keyed_app.py): points planned by sae
(lookups, joins, a series of joins with appends whose rows join the probe) for the vanilla reader
over local Parquet files, the cache and the indexed reader, configured as the controller
configures them, run by one application. Every reader's answer agrees at every point and, in the
series, after every append; what each reader keeps is recorded. On a cluster (lookups, a join, an
append and a lost executor, which needs executor JVMs a cluster manager replaces; the indexed
cache's jar built on the driver node): tests/sae_tests/test_indexed_run.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import data_deploy
import sae.indexed as ix
from sae.planning import queries
from sae.planning.planner import plan
from sae.planning.spec import DataSpec, Experiment, Sweep, Workload
from sae.running.context import dataset_path
from sae.running.execute import comparison_key, interleave, keyed_config


APP = Path(__file__).with_name("keyed_app.py")
ROWS = 60_000
READERS = ["vanilla", "cache", "indexed"]
APPEND = 2000


def _kept(p: dict) -> bool:
    """The points of the scenario: two lookups, two joins and a series of joins with appends."""
    if p["query"] == "key-lookup":
        return p["probe"] == 100 and p["append_rows"] == 0
    return p["keys"] == 100 and (p["append_rows"] == 0) != (p["probe"] == 100)


EXPERIMENT = Experiment(
    name="keyed", data=DataSpec(rows=ROWS), repetitions=1, warmup=0, workload=Workload(append_every=2),
    sweep=Sweep(cartesian={"query": ["key-lookup", "key-join"], "keys": [1, 100], "probe": [0.1, 10, 100],
                           "append_rows": [0, APPEND], "reader": READERS},
                where=_kept, repetitions={"append_rows": {APPEND: 5}}))


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> pd.DataFrame:
    work = tmp_path_factory.mktemp("keyed")
    points = plan(EXPERIMENT).points
    data = work / dataset_path(points[0]).lstrip("/")
    data_deploy.generate(ROWS, out=data, rows_per_file=20_000)
    configs = []
    for p in points:
        w = p.spec.workload
        configs.append({"point": p.id, "reps": list(range(p.repetitions)), "prewarm": 0, "column": w.column,
                        "threshold": None, "columns": [], "query": w.query, "sql": w.question.statement(w.column, None),
                        "float_digits": queries.FLOAT_DIGITS, "answer_rows": queries.MAX_ANSWER_ROWS,
                        **keyed_config(p), **w.read_source(dataset_path(p), build=None, mount=str(work)).app_config()})
    out = work / "events.jsonl"
    cfg = {"run_id": "keyed", "out": str(out), "pause": 0, "points": configs, "jar": str(ix.jar()),
           "vanilla": f"file://{data}",
           "schedule": interleave(configs, [comparison_key(p) for p in points], EXPERIMENT.warmup)}
    (work / "config.json").write_text(json.dumps(cfg))
    r = subprocess.run([sys.executable, str(APP), str(work / "config.json")], capture_output=True, text=True,
                       timeout=1200)
    if not out.exists():
        pytest.fail(f"keyed_app.py exited {r.returncode} before any event: {r.stderr[-4000:]}")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    ends = [e for e in lines if e["event"] == "point-end"]
    assert len(ends) == len(points) and not [e["error"] for e in ends if e["error"]], r.stderr[-4000:]
    params = {p.id: {"reader": p.spec.workload.reader, "query": p.spec.workload.query, "keys": p.spec.workload.keys,
                     "probe": p.spec.workload.probe, "append_rows": p.spec.workload.append_rows} for p in points}
    df = pd.DataFrame([{**params[e["point"]], **e} for e in lines if e["event"] == "rep"])
    df.attrs["plans"] = json.loads(Path(f"{out}.plans.json").read_text())
    return df


def test_every_reader_answers_every_lookup_and_join_alike(events):
    fixed = events[events["append_rows"] == 0]
    assert len(fixed) == 4 * len(READERS)
    for (query, keys, probe), g in fixed.groupby(["query", "keys", "probe"]):
        assert g[["rows", "checksum"]].drop_duplicates().shape[0] == 1, g[["reader", "rows", "checksum"]]
        assert g["rows"].iloc[0] >= (keys if query == "key-lookup" else 1), (query, keys, probe)
        assert set(g["reader"]) == set(READERS)
    lookups = fixed[fixed["query"] == "key-lookup"].groupby("keys")["rows"].first()
    assert lookups[1] < lookups[100]   # keys found in the data: a key is at least one trip


def test_after_every_append_every_reader_reads_the_same_new_rows(events):
    series = events[events["append_rows"] == APPEND].sort_values("repetition")
    assert len(series) == 5 * len(READERS)
    for rep, g in series.groupby("repetition"):
        assert g[["rows", "checksum", "appended_rows"]].drop_duplicates().shape[0] == 1, g
        assert g["appended_rows"].iloc[0] == APPEND * (rep // 2)
        assert g["append_s"].notna().all() == (rep in (2, 4)), g[["reader", "append_s"]]
    rows = series.groupby("repetition")["rows"].first()
    assert rows[0] == rows[1] < rows[2] == rows[3] < rows[4]   # the probe holds every key: appended rows join


def test_each_reader_records_what_it_keeps(events):
    index = events[events["reader"] == "indexed"]
    assert (index["index_bytes"] > 0).all() and (index["index_build_s"] > 0).all()
    base = index[index["append_rows"] == 0]
    assert (base["cached_rows"] == ROWS).all() and (base["cached_bytes"] > 0).all()
    parts = json.loads(base["index_partitions"].iloc[0])
    assert sum(r for r, _ in parts) == ROWS and sum(b for _, b in parts) == base["index_bytes"].iloc[0]
    grown = index[index["append_rows"] == APPEND]
    assert (grown["cached_rows"] == ROWS + grown["appended_rows"]).all()
    cache = events[events["reader"] == "cache"]
    assert (cache["cached_bytes"] > 0).all() and (cache["index_build_s"] > 0).all() and cache["index_bytes"].isna().all()
    assert (cache["cached_rows"] == ROWS + cache["appended_rows"].fillna(0)).all()
    vanilla = events[events["reader"] == "vanilla"]
    assert vanilla[["index_bytes", "index_build_s"]].isna().all().all()
    assert "executors" not in events   # counted in a losing series only
    appended = vanilla[vanilla["appended_rows"] > 0]   # its batches are cached, its base read afresh
    assert (appended["cached_rows"] == appended["appended_rows"]).all() and (appended["cached_bytes"] > 0).all()


def test_the_cache_readers_copy_answers_no_other_reader(events):
    assert events.attrs["plans"] == {"vanilla_from_cache": False}
