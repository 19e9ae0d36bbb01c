"""Pure: the readers that keep the data in memory (cache, indexed) and the key queries as entries,
what the planner refuses of them in one line, experiments/indexed.py's plan, the point's part of
the application's configuration, the correctness check over a series of appends and the figures
drawn from results. The application itself: test_keyed_app.py (local mode) and
test_indexed_run.py (a cluster)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import sae
from metareserve.errors import UsageError
from sae.planning import figures, queries, readers
from sae.planning.planner import plan
from sae.planning.spec import DataSpec, Experiment, SparkSpec, Sweep, Workload
from sae.results.analysis import cost_model
from sae.results.analysis.indexed_summary import indexed_text
from sae.results.analysis.summary import correctness, summary
from sae.results.drawing import indexed_figures
from sae.running.execute import keyed_config

ROOT = Path(__file__).resolve().parents[2]


def _plan(**fields):
    return plan(Experiment(name="k", **fields))


def test_the_in_memory_readers_are_entries_read_by_vanilla():
    for reader, keep, baseline in ((readers.CACHE, "cache", True), (readers.INDEXED, "index", False)):
        assert readers.get(reader.name) is reader and reader.reads.keep == keep and reader.baseline == baseline
        assert reader.reads.needs_mount and not reader.connector and reader.why_not("ipc")
        source = Workload(reader=reader.name).read_source("/sae/d", build=None, mount="/mnt/fs")
        assert source.app_config() == {"format": "parquet", "path": "file:///mnt/fs/sae/d", "options": {},
                                       "register": [], "keep": keep}
        assert cost_model._path_of(reader) is None   # its queries read no storage: not modelled
    assert "keep" not in Workload(reader="vanilla").read_source("/sae/d", build=None, mount="/m").app_config()
    assert readers.INDEXED.name in readers.OFFLOADING and readers.CACHE.name in readers.BASELINES
    assert readers.STANDARD == (readers.OFFLOAD, readers.NO_OFFLOAD, readers.VANILLA)


def test_the_key_queries_read_their_views_and_their_answers_are_summed():
    lookup, join = queries.QUERIES["key-lookup"], queries.QUERIES["key-join"]
    assert (lookup.views, lookup.index, join.views, join.index) == (("keys",), "lookup", ("probe",), "join")
    assert lookup.summed and join.summed and not lookup.selective and not join.joins_zones
    assert queries.KEY in lookup.sql and queries.KEY in join.sql
    assert not any(q.views or q.summed or q.index for name, q in queries.QUERIES.items() if not name.startswith("key-"))
    assert Workload(sql="SELECT * FROM trips t JOIN probe p ON t.VendorID = p.bucket").question.summed


@pytest.mark.parametrize("fields, says", [
    ({"workload": Workload(reader="indexed", query="sum")},
     "workload.reader indexed cannot answer workload.query sum: the index answers lookups and joins on the key "
     "tpep_pickup_datetime (key-lookup, key-join), which sum is not; use one of offload, offload-index, auto, "
     "no-offload, vanilla, cache"),
    ({"workload": Workload(reader="indexed", query="key-join"), "spark": SparkSpec(version="3.5.3")},
     "workload.reader indexed needs Spark 4 or later (its jar is built against Spark 4's API), not spark.version 3.5.3"),
    ({"workload": Workload(reader="cache", query="key-join"), "data": DataSpec(format="ipc")},
     "workload.reader cache cannot read data.format ipc: Spark has no reader of Arrow IPC files"),
    ({"workload": Workload(query="scan", append_rows=1000)},
     "workload.append_rows 1000 applies to the key queries (key-lookup, key-join), not workload.query scan"),
    ({"workload": Workload(query="key-lookup", keys=0)}, "workload.keys (keys of one lookup) must be an integer >= 1"),
    ({"workload": Workload(query="key-join", probe=0)}, "workload.probe 0 is not a percent of the data's keys"),
    ({"workload": Workload(query="key-join", probe=101)}, "workload.probe 101 is not a percent"),
    ({"workload": Workload(query="key-join", append_rows=10, append_every=0)},
     "workload.append_every (repetitions between appends) must be an integer >= 1"),
    ({"workload": Workload(query="key-join", lose_executor=0)}, "workload.lose_executor (the repetition an executor"),
])
def test_what_the_key_queries_and_the_in_memory_readers_cannot_do_is_refused_in_one_line(fields, says):
    with pytest.raises(UsageError) as e:
        _plan(**fields)
    assert says in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_point_tells_the_application_its_views_appends_and_loss():
    p = _plan(sweep=Sweep(cartesian={"query": ["key-lookup", "key-join", "sum"]}),
              workload=Workload(keys=100, probe=0.1, append_rows=0, lose_executor=7), repetitions=4).points
    lookup, join, total = (keyed_config(x) for x in p)
    assert lookup["keys"] == 100 and "probe" not in lookup and lookup["index"] == "lookup" and lookup["summed"]
    assert join["probe"] == 0.1 and "keys" not in join and join["index"] == "join"
    assert "keys" not in total and "probe" not in total and not total["summed"] and total["index"] is None
    assert lookup["lose_executor"] == 3   # past the point's 4 repetitions: before its last one
    assert lookup["dataset"] == join["dataset"] and lookup["comparison"] != join["comparison"]


def test_the_shipped_experiment_plans_lookups_joins_series_and_a_loss_last():
    exp = sae.load_experiment(ROOT / "experiments" / "indexed.py")
    p = sae.plan(exp.with_profile("tiny"), profile="tiny")
    by = [(x.spec.workload, x.repetitions) for x in p.points]
    lookups = [(w.keys, w.reader) for w, _ in by if w.query == "key-lookup"]
    assert sorted({k for k, _ in lookups}) == [1, 100, 10_000] and len(lookups) == 15
    joins = [w.probe for w, _ in by if w.query == "key-join" and not w.append_rows and w.lose_executor is None]
    assert sorted(set(joins)) == [0.01, 0.1, 1, 10] and len(joins) == 20
    series = [(w.append_rows, w.reader, n) for w, n in by if w.append_rows]
    assert {a for a, _, _ in series} == {1_000, 10_000, 100_000} and {n for _, _, n in series} == {11}
    assert {r for _, r, _ in series} == {"indexed", "cache", "vanilla"}
    lost = [(w.reader, w.lose_executor, n) for w, n in by if w.lose_executor is not None]
    assert lost == [("indexed", 6, 12), ("cache", 6, 12)] and by[-1][0].lose_executor == 6
    assert {x.stack_key for x in p.points} == {p.points[0].stack_key} and p.points[0].spec.data.link_multiplier == 1
    assert all(f in figures.FIGURES and figures.get(f).module.endswith("indexed_figures") for f in p.figures)


def _answers(rows: dict[str, list[int]]) -> pd.DataFrame:
    """A series of two appends read by each reader: ``rows`` per reader per repetition."""
    out = []
    for reader, per_rep in rows.items():
        for rep, n in enumerate(per_rep):
            out.append({"reader": reader, "query": "key-join", "selectivity": 100.0, "append_rows": 1000,
                        "repetition": rep, "appended_rows": 1000 * (rep // 2), "rows_out": n, "checksum": n * 7,
                        "warmup": rep == 0})
    return pd.DataFrame(out)


def test_readers_are_compared_at_every_number_of_appended_rows():
    assert correctness(_answers({"indexed": [5, 5, 9, 9], "cache": [5, 5, 9, 9]})).startswith("every reader returned")
    bad = correctness(_answers({"indexed": [5, 5, 9, 9], "cache": [5, 5, 8, 8]}))
    assert bad.startswith("readers disagree") and "appended_rows=1000" in bad


def _results() -> pd.DataFrame:
    """Results as a run of indexed.py records them, with made-up times: the indexed reader 5x
    faster, a series slowing after its appends, a loss costing one query."""
    rows = []

    def add(reader, query, rep, t, **kw):
        kept = reader in ("indexed", "cache")
        rows.append({"reader": reader, "query": query, "repetition": rep, "warmup": rep == 0, "total_s": t,
                     "keys": 1, "probe": 1.0, "append_rows": 0, "append_every": 5, "lose_executor": None,
                     "appended_rows": math.nan, "append_s": math.nan, "executor_lost": math.nan,
                     "cached_bytes": 1.7e8 if kept else math.nan, "cached_rows": 1e6 if kept else math.nan,
                     "index_bytes": 1.8e7 if reader == "indexed" else math.nan,
                     "index_build_s": 9.0 if kept else math.nan, **kw})
    for reader, speed in (("indexed", 1.0), ("cache", 5.0), ("vanilla", 9.0)):
        for rep in range(3):
            for keys in (1, 100, 10_000):
                add(reader, "key-lookup", rep, 0.1 * speed, keys=keys)
            for probe in (0.01, 1.0, 10.0):
                add(reader, "key-join", rep, 0.2 * speed, probe=probe)
        for size in (1000, 100_000):
            for rep in range(11):
                appended = size * (rep // 5)
                add(reader, "key-join", rep, 0.2 * speed * (1.5 if appended else 1), append_rows=size,
                    appended_rows=appended, append_s=size / 1e6 if rep in (5, 10) else math.nan)
        for rep in range(12):
            add(reader, "key-join", rep, 0.2 * speed * (20 if rep == 6 else 1), lose_executor=6,
                executor_lost=True if rep == 6 and reader == "indexed" else math.nan)
    for rep in range(3):   # the OSD index: two objects' indexes in their omaps
        add("offload-index", "key-lookup", rep, 0.3, index_bytes=4e6, index_build_s=0.5, cls_read_bytes=1e4,
            index_partitions=json.dumps([[500_000, 2_000_000], [500_000, 2_000_000]]))
        add("offload", "key-lookup", rep, 0.6, cls_read_bytes=1e6)
    return pd.DataFrame(rows)


def test_the_summary_sets_each_measure_beside_its_goal_and_the_paper():
    """Lookups and joins as the cache's time over the indexed cache's, the key maps' share, the
    slowdown and rate of appends, the lost executor's query and the OSD index's bytes and time
    against offload's; a run without both in-memory readers has no such summary."""
    text = indexed_text(_results())
    rows = {line.split("  ")[0]: " ".join(line.split()) for line in text.splitlines()[2:]}
    assert rows["lookup, keys: 1"].endswith("5.00x (n too small) >= 10x 5-20x (figs. 8, 15)"), rows
    assert rows["join, probe %: 0.01"].endswith("5.00x (n too small) >= 3x 3-8x (fig. 7)"), rows
    assert rows["index memory / cached rows"].endswith("10.59% <= 2 % under 2 % (fig. 11)"), rows
    assert rows["reads while appending 1,000 rows"].startswith("reads while appending 1,000 rows 1.50x"), rows
    assert "1,000,000" in rows["rows appended a second, 1,000 a time"], rows
    assert rows["query after a lost executor / before"].startswith("query after a lost executor / before 20.00x"), rows
    assert rows["slowest query after that / before"].startswith("slowest query after that / before 1.00x"), rows
    assert "1.00% (n too small) <= 1 %" in rows["OSD index, 1-key lookup: bytes read in the OSDs / offload's"], rows
    assert "0.50x (n too small) <= 0.5x" in rows["OSD index, 1-key lookup: time / offload's"], rows
    assert indexed_text(_results().query("reader != 'cache'")) is None


def test_each_figure_is_drawn_from_its_points_and_none_without_them(tmp_path):
    df = _results()
    names = [f for f in figures.names() if figures.get(f).module.endswith("indexed_figures")]
    assert len(names) == 5
    for name in names:
        got = figures.get(name)(None, df, tmp_path)
        assert got == [tmp_path / f"{name}.png"] and got[0].stat().st_size > 10_000, name
    other = df.assign(query="sum", append_rows=0, lose_executor=None, append_s=math.nan)
    assert all(figures.get(name)(None, other, tmp_path) == [] for name in names)
    note = indexed_figures.memory_note(df)
    assert "offload-index: 3.8MiB of indexes in the OSDs (4.0 B an indexed row), built in 0.5 s of OSD time" in note, note
    assert "indexed: 162.1MiB of rows and 17.2MiB of key maps (10.6% of the rows, 18.0 B a row), " \
           "built in 9.0 s; cache: 162.1MiB of rows" in note, note


def test_the_offload_summary_pairs_points_that_leave_a_parameter_unset():
    """Points without a lost executor (``lose_executor`` NaN) beside those with one: each reader is
    paired with each baseline at both (a NaN in a group's key once found no group: a full run of
    indexed.py failed its aggregate stage on it)."""
    s = summary(_results().assign(selectivity=100.0))
    lost = s["lose_executor"].notna()
    assert {("indexed", "cache"), ("indexed", "vanilla")} <= set(zip(s.loc[~lost, "reader"], s.loc[~lost, "baseline"]))
    assert set(zip(s.loc[lost, "reader"], s.loc[lost, "baseline"])) == {("indexed", "cache"), ("indexed", "vanilla")}
