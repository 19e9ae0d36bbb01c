"""Real local cluster: ``sae run experiments/indexed.py`` cut by ``--set`` to a few points on the
shared sae cluster (tests/fixtures/sae.py): lookups of 1 and 10,000 keys (an IN list of 10,000
values in every OSD call), a join with a 1 % probe and a series
of two joins with an append between them, read by the indexed cache, Spark's cache and vanilla in
one Spark application (the indexed cache's jar compiled on the driver node and shipped with it),
the lookups and the join by offload-index too (the build indexing each object's pickup times in
its omap), and last the series of three joins that loses an executor before its second (a worker
host's executor JVM killed, the Spark master starting its replacement). Every reader returns the
same rows and checksum at every point, after the append and after the loss; the in-memory readers
record what they hold, the cache what the loss took; offload-index's scans probe the index its
build made. Left to the README's command: the offload reader (the key queries read through the
connector as offload-index's do, without the index) and longer series. Appended rows that join the
probe (here a 1 % probe rarely holds an appended key), in Spark's local mode:
tests/sae_tests/test_keyed_app.py."""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import sae

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
ROWS = 200_000
APPEND = 1000
LOST_AT = 1
"""The repetition of the losing series an executor is killed before (of 3)."""
CUT = [f"--set={s}" for s in (
    "repetitions=2", "warmup=0", "drift=false", "cluster.cores=shared", "spark.jit=quick", f"data.rows={ROWS}",
    "data.object_size=4MiB",
    f"sweep.cartesian.lose_executor=[null, {LOST_AT}]", f"sweep.repetitions.lose_executor={{{LOST_AT}: 3}}",
    "sweep.cartesian.keys=[1, 10000]", "sweep.cartesian.probe=[1]", f"sweep.cartesian.append_rows=[0, {APPEND}]",
    "sweep.cartesian.reader=[indexed, cache, vanilla, offload-index]",
    "workload.append_every=1")]
"""The tiny profile cut to answers and states, not times (as the catalogue's CI settings): two
repetitions per point, no warm-up or drift check, every host on every core, C1-only JVMs, 200 K
trips stored once in two objects (two partitions read, each cached on one of the two executors, so
the loss takes one; one object's file Spark splits in two, one split empty); lookups of 1 and
10,000 keys, the join with a 1 % probe; the series appends 1000 rows before its second query; the losing series three joins, an executor killed before the
second; four readers, the appending series three and the losing two (the experiment's).
17 points, 36 queries (each after the tiny profile's 2-s pause, which its 1-s scrapes need)."""
SERIES = {"indexed", "cache", "vanilla"}
LOSING = {"indexed", "cache"}
READERS = SERIES | {"offload-index"}


STEP = re.compile(r"sae (\w+)\]? step \d+/\d+ \([^)]*\) ([\d.]+)s")
"""A finished step's line on ``sae run``'s output (sae.running.console): its stage and seconds."""


@pytest.fixture(scope="module")
def run(sae_cluster):
    """(the run directory, when it started, its seconds, seconds by stage)."""
    root, _ = sae_cluster
    start = time.time()
    r = subprocess.run([SAE, "run", "experiments/indexed.py", "--reservation", str(root / "reservation.yaml"),
                        "--out", str(root / "indexed-out"), *CUT], capture_output=True, text=True, cwd=ROOT)
    seconds = time.time() - start
    assert r.returncode == 0, r.stderr[-3000:]
    stages = {}
    for stage, s in STEP.findall(r.stderr):
        stages[stage] = stages.get(stage, 0.0) + float(s)
    stages["the rest (the run steps)"] = seconds - sum(stages.values())
    return Path(r.stdout.strip().splitlines()[-1]), start, seconds, stages


def without_loss(df):
    """The points that lose no executor."""
    return df[df["lose_executor"].isna()]


def test_every_reader_answers_alike_before_and_after_an_append(run, figure):
    run, start, seconds, stages = run
    df = sae.load_results(run)
    first, last = df["start"].astype(float).min(), df["end"].astype(float).max()
    df = without_loss(df)
    figure(f"sae run {seconds:.0f} s: " + ", ".join(f"{k} {v:.0f}" for k, v in stages.items())
           + f"; its first query {first - start:.0f} s in, its queries {last - first:.0f} s, after them {start + seconds - last:.0f} s")
    # per reader a lookup of 1 and one of 10,000 keys and a join; per series reader the series
    assert set(df["reader"]) == READERS and len(df) == 2 * (3 * len(READERS) + len(SERIES))
    assert set(df.loc[df["append_rows"] == APPEND, "reader"]) == SERIES
    for key, g in df.groupby(["query", "keys", "append_rows", "repetition"]):
        assert g[["rows_out", "checksum"]].drop_duplicates().shape[0] == 1, (key, g[["reader", "rows_out", "checksum"]])
        assert (g["rows_out"] > 0).all(), key
    series = df[df["append_rows"] == APPEND]
    assert (series["appended_rows"] == series["repetition"] * APPEND).all(), series[["reader", "appended_rows"]]
    assert series.loc[series["repetition"] == 1, "append_s"].gt(0).all()
    assert series.loc[series["repetition"] == 0, "append_s"].isna().all()
    assert "every reader returned the same rows and checksum" in (run / "report" / "summary.txt").read_text()


def test_the_in_memory_readers_record_what_they_hold(run, figure):
    run = run[0]
    df = without_loss(sae.load_results(run))
    appended = df["appended_rows"].fillna(0)
    index, cache = df["reader"] == "indexed", df["reader"] == "cache"
    assert (df.loc[index, "index_bytes"] > 0).all() and (df.loc[index, "cached_bytes"] > df.loc[index, "index_bytes"]).all()
    assert (df.loc[index, "cached_rows"] == ROWS + appended[index]).all()
    assert df.loc[index, "index_build_s"].gt(0).all() and df.loc[index, "index_build_s"].nunique() == 1   # once per app
    parts = json.loads(df.loc[index & (appended == 0), "index_partitions"].iloc[0])
    assert sum(r for r, _ in parts) == ROWS and sum(b for _, b in parts) == df.loc[index & (appended == 0), "index_bytes"].iloc[0]
    assert (df.loc[cache, "cached_bytes"] > 0).all() and df.loc[cache, "index_bytes"].isna().all()
    assert (df.loc[cache, "cached_rows"] == ROWS + appended[cache]).all()
    assert df.loc[(df["reader"] == "vanilla") & (appended == 0), ["cached_bytes", "index_bytes"]].isna().all().all()
    vanilla_series = (df["reader"] == "vanilla") & (appended > 0)   # its appended batch, cached
    assert (df.loc[vanilla_series, "cached_rows"] == APPEND).all() and (df.loc[vanilla_series, "cached_bytes"] > 0).all()
    steps = yaml.safe_load((run / "stages.yaml").read_text())
    assert any("indexed cache" in o["message"] for s in steps if s["stage"] == "build" for o in s["nodes"].values())
    plain = df[df["append_rows"] == 0]
    first = plain.groupby("reader").first()
    figure(f"{ROWS} rows held: indexed {first.loc['indexed', 'cached_bytes'] / 2**20:.1f} MiB of rows + "
           f"{first.loc['indexed', 'index_bytes'] / 2**20:.1f} MiB of key maps, built in "
           f"{first.loc['indexed', 'index_build_s']:.1f} s; cache {first.loc['cache', 'cached_bytes'] / 2**20:.1f} MiB, "
           f"built in {first.loc['cache', 'index_build_s']:.1f} s")
    times = plain.groupby(["query", "reader"])["total_s"].median().unstack()
    for query, t in times.iterrows():
        figure(f"{query} median s: " + ", ".join(f"{r} {t[r]:.2f}" for r in ("indexed", "cache", "vanilla")
                                                  if r in t and t[r] == t[r]))


def test_the_osd_index_is_built_beside_each_object_and_probed(run, figure):
    """offload-index: the build indexed every object's pickup times in its omap, and every scan
    carried the index flag (the OSDs' probe time). The lookup's keys reach the scans as values, so
    the OSDs found its key's rows in the index; the join's keys reach no scan (the probe view is
    cached, and Spark's dynamic pruning wants a selection on the other side): docs/experiments.md,
    "Indexed"."""
    run = run[0]
    df = sae.load_results(run)
    steps = yaml.safe_load((run / "stages.yaml").read_text())
    built = [o["message"] for s in steps if s["stage"] == "build" for o in s["nodes"].values()
             if "index of tpep_pickup_datetime" in o["message"]]
    assert built and f"{ROWS} rows" in built[0], steps
    ix = df[df["reader"] == "offload-index"]
    assert (ix["cls_index_s"] > 0).all(), ix[["query", "cls_index_s"]]
    assert (df.loc[df["reader"] != "offload-index", "cls_index_s"].fillna(0) == 0).all()
    lookups = ix[ix["query"] == "key-lookup"]   # 10,000 keys: an IN list of 10,000 values in every OSD call
    assert (lookups["cls_index_rows"] >= lookups["rows_out"]).all() and (lookups["rows_out"] >= 1).all(), \
        lookups[["keys", "cls_index_rows", "rows_out"]]
    assert set(lookups["keys"]) == {1, 10_000}
    lookup = lookups[lookups["keys"] == 1]
    assert (ix.loc[ix["query"] == "key-join", "cls_index_rows"] == 0).all()
    # what the indexes hold and took, per object, in every offload-index row: the build's figures
    objects = ix["index_partitions"].map(json.loads)
    assert (objects.map(lambda o: sum(r for r, _ in o)) == ROWS).all(), ix["index_partitions"]
    assert (objects.map(lambda o: sum(b for _, b in o)) == ix["index_bytes"]).all()
    assert (ix["index_bytes"] == int(re.search(r"(\d+) bytes", built[0]).group(1))).all(), (built, ix["index_bytes"])
    assert (ix["index_build_s"] > 0).all(), ix["index_build_s"]
    figure(f"{built[0]}; one-key lookup through offload-index: {lookup['cls_index_rows'].median():.0f} rows from the "
           f"index, {lookup['cls_read_bytes'].median() / 2**20:.2f} MiB read in the OSDs, {lookup['total_s'].median():.2f} s")


def test_after_a_lost_executor_every_reader_answers_alike_and_the_cache_is_made_again(run, figure):
    """Killed before repetition 1 of the series, once (by the reader whose query comes first): the
    master's replacement is up before that query, every reader's answer is the plain join's, the
    cache's blocks on the lost executor are missing at the loss and cached again by its query."""
    df = sae.load_results(run[0])
    lost = df[df["lose_executor"].notna()].sort_values("seq")
    assert set(lost["reader"]) == LOSING and len(lost) == 3 * len(LOSING), lost[["reader", "repetition"]]
    assert lost["executors"].nunique() == 1 and lost["executors"].iloc[0] >= 2, lost["executors"]
    join = without_loss(df)
    join = join[(join["query"] == "key-join") & (join["append_rows"] == 0)]
    assert lost[["rows_out", "checksum"]].drop_duplicates().values.tolist() == \
        join[["rows_out", "checksum"]].drop_duplicates().values.tolist()
    killed = lost[lost["executor_lost"].eq(True)]
    assert len(killed) == 1 and killed["repetition"].iloc[0] == LOST_AT, lost[["reader", "repetition", "executor_lost"]]
    assert killed["seq"].iloc[0] == lost.loc[lost["repetition"] == LOST_AT, "seq"].min()
    cache = lost[lost["reader"] == "cache"].set_index("repetition")["cached_bytes"]
    assert cache[0] == cache[2] > cache[LOST_AT] > 0, cache   # one executor's partition gone, then made again
    figure(f"the cache held {cache[0] / 2**20:.1f} MiB, {cache[LOST_AT] / 2**20:.1f} MiB after the loss; "
           f"the join after it: " + ", ".join(f"{r} {g.loc[g['repetition'] == LOST_AT, 'total_s'].iloc[0]:.2f} s"
                                              for r, g in lost.groupby("reader")))


def test_its_figures_are_drawn(run):
    run = run[0]
    for png in ("indexed-lookups.png", "indexed-joins.png", "indexed-append-reads.png", "indexed-appends.png",
                "indexed-executor-loss.png"):
        assert (run / "report" / png).stat().st_size > 10_000, png
