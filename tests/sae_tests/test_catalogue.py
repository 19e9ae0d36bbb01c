"""The tiny catalogue end to end on the shared sae cluster (fixtures/sae.py): ``sae run
experiments/`` runs every shipped experiment once, one after another on one deployed stack; each
test below asserts one experiment's real outcome from its run (readers and object layouts agree
on rows and checksums, the axis it varies changes what it must, its figure's data are there and
non-zero), and the catalogue's index links every report."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import sae
from sae.planning.planner import PlannedPoint
from monitor_deploy import read_frame
from sae.results.run.eventlog import input_batches
from sae.results.run.storage_work import json_lines

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))


CI_SETTINGS = [f"--set={s}" for s in (
    "repetitions=1", "warmup=0", "drift=false", "cluster.cores=shared", "spark.jit=quick",
    "bandwidth:sweep.cartesian.link_rate=[200mbit, 1.25gbit/core]", "bandwidth:sweep.cartesian.selectivity=[100]",
    "objectsize_selectivity:sweep.cartesian.selectivity=[1]",
    "scalability:sweep.cartesian.link_multiplier=[2, 1]", "scalability:sweep.cartesian.reader=[offload]",
    "contention:sweep.cartesian.selectivity=[1]",
    "contention:sweep.zipped.storage_load=[0, 1]", "contention:sweep.zipped.storage_scans=[0, 2]",
    "contention:sweep.cartesian.reader=[offload, auto]",
    "bandwidth:sweep.cartesian.reader=[no-offload]", "bandwidth:sweep.cartesian.compression=[none]",
    "storedcompression:sweep.cartesian.stored_compression=[none, zstd]", "formats:sweep.cartesian.selectivity=[100]",
    "formats:data.link_multiplier=1",
    "autoscaler:sweep.cartesian.pg_autoscale=[true]", "versions:sweep.zipped.spark.version=[4.3.0, 3.5.3]",
    "versions:sweep.zipped.spark.pyarrow=[26.0.1, 25.0.1]", "versions:sweep.zipped.ceph.class_arrow=[26.0.1, 25.0.1]")]
"""One query per point, no drift check, every host on every core and JVMs compiling with C1 only
(test_e2e's main job checks the default capacities, warm-up and drift check, and its
selectivities), and the sweeps cut to the values and readers the tests below compare: every
outcome asserted is a count, an answer or a byte figure (and the bandwidth test's floor of bytes
over rate), which one query shows as well as three (two stored codecs need two datasets split,
not four; the autoscaler switched on needs one start, and the next experiment switches it off;
the versions' Spark and Arrow releases both change in one second stack, one start and one
application, not two; the bandwidth sweep ends on the default rate, so the next experiment's shape
changes nothing and reuses its measurement; formats scans its 1 M rows once, not under 4 names:
vanilla's CSV query parses every row in Spark, 75 compute-side CPU-s at 4 M rows); the user's
catalogue runs the files' own sweeps and repetitions through the same code."""
EXCLUDED = ("selectivity", "scale", "indexed", "writes", "objectsize", "projection", "queries")
"""Left out of the catalogue (``--exclude``): test_e2e runs selectivity.py on the same stack, deeper;
scale.py's hosts outnumber the catalogue's 3 (test_scale runs it on 4 hosts of its own);
test_indexed_run runs indexed.py cut to a lookup, a join and an append on the same stack (its
series and lost executor keep their own repetitions whatever the catalogue's); test_writes_run runs
writes.py cut to two jobs through every writer on the same stack (after versions.py's second Spark,
the catalogue's last, a writes run would start Spark again: test_e2e's run in between does anyway);
objectsize.py is objectsize_selectivity.py's grid at one selectivity; what projection.py and
queries.py show, every reader's answer to each column set and query shape and the work the OSDs
take (columns pruned, aggregates, a join's runtime filter), test_spark asserts on the session's
stack in one application (tests/connector/test_spark.py), and their figures are drawn from
recorded runs in the pure tier."""


@pytest.fixture(scope="module")
def catalogue(sae_cluster):
    """``sae run experiments/`` with :data:`CI_SETTINGS` on the shared cluster: (exit
    code, output, catalogue.yaml entries by experiment name, the index page)."""
    root, _ = sae_cluster
    r = subprocess.run([SAE, "run", "experiments/", "--reservation", root / "reservation.yaml",
                        "--out", root / "catalogue-out", *CI_SETTINGS, *[a for n in EXCLUDED for a in ("--exclude", n)]],
                       capture_output=True, text=True, cwd=ROOT)
    index = root / "catalogue-out" / "catalogue" / "latest" / "index.html"
    entries = yaml.safe_load((index.parent / "catalogue.yaml").read_text())["experiments"]
    return r.returncode, r.stderr, {e["experiment"]: e for e in entries}, index


def run_of(catalogue, name: str) -> tuple[Path, pd.DataFrame]:
    """The experiment's run directory and its results, after checking it ran completely."""
    _, output, entries, _ = catalogue
    entry = entries[name]
    assert entry["status"] == "done", f"{name}: {entry['error']}\n{output[-3000:]}"
    run = Path(entry["run"])
    plan = yaml.safe_load((run / "plan.yaml").read_text())
    df = sae.load_results(run)
    assert len(df) == sum(p["repetitions"] for p in plan["points"]) and not df.duplicated(["point", "repetition"]).any()
    assert (df["total_s"] > 0).all()
    return run, df


def figure(run: Path, name: str) -> Path:
    png = run / "report" / name
    assert png.stat().st_size > 10_000, png
    return png


def agree(df: pd.DataFrame, by: list[str], what=("rows_out", "checksum")) -> None:
    """Every repetition of every point in a group of ``by`` gave the same answer."""
    for key, g in df.groupby(by):
        for col in what:
            assert g[col].nunique() == 1, (key, col, sorted(g[col].unique()))


def scanned(df: pd.DataFrame) -> pd.Series:
    return df["rows"] * df["link_multiplier"] * df["copy_multiplier"]


def test_catalogue_index_links_every_report(catalogue, figure):
    code, output, entries, index = catalogue
    assert code == 0, output[-3000:]
    names = {f.stem for f in (ROOT / "experiments").glob("*.py")} - set(EXCLUDED)
    assert set(entries) == names and all(e["status"] == "done" for e in entries.values())
    page = index.read_text()
    links = re.findall(r'<a href="([^"]+/report/index.html)"', page)
    assert len(set(links)) == len(names)
    assert all((index.parent / link).resolve().exists() for link in links)
    images = re.findall(r'<img src="([^"]+\.png)"', page)
    assert len(images) == len(names) and all((index.parent / i).resolve().stat().st_size > 10_000 for i in images)
    # one stack for all: only the first experiment started anything, but for the PG autoscaler
    # switched on by its experiment and off by the next one's start, for the software versions.py
    # switches (test_versions checks what each of its stacks ran) and for the scan library, built
    # for contention's auto reader alone (unless an earlier test built the same one)
    first = min(entries.values(), key=lambda e: e["run"])
    for e in entries.values():
        steps = yaml.safe_load((Path(e["run"]) / "stages.yaml").read_text())
        for s in steps:
            if s["stage"] in ("install", "start", "build") and e is not first and e["experiment"] != "versions":
                changed = [o["message"] for o in s["nodes"].values() if o["changed"]]
                assert all(s["stage"] == "start" and "PG autoscaler turned" in m
                           or s["stage"] == "build" and e["experiment"] == "contention"
                           and re.fullmatch(r"built scan library \w+", m) for m in changed), (e["experiment"], s)
            if s["stage"] == "build" and e["experiment"] != "contention":
                assert "scan library" not in str(s["nodes"]), (e["experiment"], s)   # no auto reader
    figure("catalogue, seconds per experiment: " + ", ".join(f"{n} {e['seconds']:.0f}" for n, e in entries.items()))


def test_runs_share_one_warm_application(catalogue):
    """One warm Spark application serves consecutive runs whose points need the same Spark options,
    stack and hosts' cores (their raw files' ``app`` events name one driver JVM), across bandwidth's
    link rates, contention's second tenants and the autoscaler's switch, and batchsize, whose
    figure reads the event log the application writes (test_batchsize); a change of them (the
    versions' second Spark) gets an application of its own; none outlives the catalogue. Each
    repetition records its job's place in the application (``app_job``: 0 in an application of
    its own)."""
    _, _, entries, index = catalogue
    apps = []   # (experiment, driver JVM, app_key of its first point, of its last point, job), in run order
    for name, e in entries.items():
        run = Path(e["run"])
        plan = yaml.safe_load((run / "plan.yaml").read_text())
        keys = {p["id"]: PlannedPoint.from_dict(p).app_key for p in plan["points"]}
        raws = [r for r in (run / "raw").glob("s*.jsonl") if not r.name.endswith(".ceph.jsonl")]
        for raw in sorted(raws, key=lambda r: int(r.stem.split("-")[1])):   # s<session>-<application>-<point>
            events = json_lines(raw)
            points = [ev["point"] for ev in events if ev.get("event") == "point"]
            jvms = {ev["jvm_pid"] for ev in events if ev.get("event") == "app"}
            jobs = {ev["app_job"] for ev in events if ev.get("event") == "rep"}
            assert len(jvms) == 1 and len(jobs) == 1 and points, (raw, jvms, jobs)
            apps.append((name, jvms.pop(), keys[points[0]], keys[points[-1]], jobs.pop()))
        if raws:   # backend.py scans without Spark
            assert set(sae.load_results(run)["app_job"]) == {a[4] for a in apps if a[0] == name}, name
    assert apps[0][4] == 0
    shared = 0
    for (before, jvm_before, _, last, _), (name, jvm, first, _, job) in zip(apps, apps[1:]):
        same = last == first
        assert (jvm == jvm_before) == same == (job > 0), (before, name, last, first, job)
        shared += same and before != name
    taken_over = {a[0] for a in apps if a[4] > 0}
    assert shared >= 8 and {"autoscaler", "bandwidth", "batchsize", "contention"} <= taken_over, apps   # 9 measured
    assert list((index.parent / "logs").glob("*/driver.log")), "no shared application's driver log fetched"
    left = subprocess.run(["pgrep", "-f", "/sae/shared-"], capture_output=True, text=True)
    assert left.returncode == 1, f"a shared application outlived the catalogue: {left.stdout}"


def test_alleviation(catalogue):
    """Figs. 10-13: the three readers agree; offload's compute side receives far less; the per-host
    CPU, network and storage-device panels and the sides' totals are drawn from real windows."""
    run, df = run_of(catalogue, "alleviation")
    agree(df, ["selectivity"])
    m = df[~df.warmup]
    rx = m.groupby("reader")["compute_rx_bytes"].median()
    assert rx["offload"] * 10 < min(rx["no-offload"], rx["vanilla"]), rx.to_dict()
    assert (m["compute_cpu_s"] > 0).all() and (m["storage_cpu_s"] > 0).all()
    for png in ("points.png", "alleviation.png", "resources-cpu.png", "resources-net.png", "resources-disk.png"):
        figure(run, png)
    window = read_frame(run / "metrics" / m["point"].iloc[0] / f"rep{m['repetition'].iloc[0]}" / "metrics.parquet")
    assert {"disk_read", "disk_write"} <= set(window["metric"]) and "node1" in set(window["node"])




def test_backend(catalogue):
    """Fig. 16: the class's scans without Spark return the rows Spark's filter keeps; larger
    objects mean fewer objects; a strong filter ships far fewer bytes."""
    run, df = run_of(catalogue, "backend")
    for (size, sel), g in df.groupby(["object_size", "selectivity"]):
        total = scanned(g).iloc[0]
        assert g["rows_out"].nunique() == 1 and abs(g["rows_out"].iloc[0] - total * sel / 100) <= total * 0.002
        assert (g["batches"] > 0).all() and g["objects"].nunique() == 1
    objects = df.groupby("object_size")["objects"].first().sort_index()
    assert objects.is_monotonic_decreasing and objects.iloc[0] > objects.iloc[-1]
    reply = df.groupby("selectivity")["reply_bytes"].median()
    assert reply[1] * 10 < reply[100]
    figure(run, "backend.png")


def test_objectsize_selectivity(catalogue):
    """Fig. 17: on the grid, every object size and reader agrees per selectivity; at 1 % offload
    ships far fewer bytes than no-offload at every object size."""
    run, df = run_of(catalogue, "objectsize_selectivity")
    agree(df, ["selectivity"])
    one = df[(df.selectivity == 1) & ~df.warmup].groupby(["object_size", "reader"])["compute_rx_bytes"].median()
    for size in df["object_size"].unique():
        assert one[size, "offload"] * 10 < one[size, "no-offload"], one.to_dict()
    figure(run, "objectsize-selectivity.png")


def test_scalability(catalogue):
    """Fig. 18, the thesis's read-everything query and a 10 % filter: rows kept grow with the link
    multiplier, each size and selectivity gives one answer, and the thesis's series keeps every
    row (offload alone here: the readers' agreement on the same datasets is test_spark's)."""
    run, df = run_of(catalogue, "scalability")
    agree(df, ["selectivity", "link_multiplier"])
    kept = df.groupby(["selectivity", "link_multiplier"])["rows_out"].first()
    per_copy = kept / kept.index.get_level_values("link_multiplier")
    assert per_copy.groupby(level="selectivity").nunique().eq(1).all()
    assert kept.index.nunique() == 2 * df["link_multiplier"].nunique() >= 4
    assert per_copy[100].iloc[0] == df["rows"].iloc[0] and per_copy[10].iloc[0] < 0.2 * per_copy[100].iloc[0]
    figure(run, "scalability.png")


def test_batchsize(catalogue):
    """E1: the answer does not depend on the batch size; a larger batch size gives fewer batches
    (Spark's own count of the columnar batches it consumed, from the event log of the shared
    application, copied into the run after its job while the application went on)."""
    run, df = run_of(catalogue, "batchsize")
    agree(df, ["selectivity"])
    assert set(df["app_job"]) != {0}, "batchsize ran in an application of its own"
    assert list((run / "logs" / "shared").glob("app-*/events/eventlog_v2_app-*/events_*"))
    batches = input_batches(run, df).groupby(df["batch_size"]).median().sort_index()
    assert (batches > 0).all() and batches.is_monotonic_decreasing and batches.nunique() == len(batches), batches
    figure(run, "batchsize.png")


def test_storedcompression(catalogue):
    """E4: every codec and reader gives the same answer; vanilla (which ships the stored bytes)
    receives fewer bytes from compressed objects; offload's replies do not depend on the codec."""
    run, df = run_of(catalogue, "storedcompression")
    agree(df, ["selectivity"])
    rx = df[~df.warmup].groupby(["reader", "stored_compression"])["compute_rx_bytes"].median()
    assert rx["vanilla", "zstd"] < 0.9 * rx["vanilla", "none"], rx.to_dict()
    # the class's own count of its reply bytes: the compute hosts' counters over a one-query point
    # can miss several percent of them (docs: 119.8-120.0 MB whatever the codec)
    replies = df[~df.warmup & (df.reader == "offload")].groupby("stored_compression")["cls_reply_bytes"].median()
    assert abs(replies["zstd"] / replies["none"] - 1) < 0.05, replies.to_dict()
    figure(run, "storedcompression.png")


def test_formats(catalogue):
    """Stored formats: the Parquet, Arrow IPC and CSV objects of one dataset give every reader that
    reads them the same answer (vanilla: Spark's Parquet and CSV readers, no IPC); the OSDs
    scanned every row of each, the IPC and CSV objects as more objects (fewer rows fit); decoding
    an IPC object cost the class far less CPU than decoding Parquet, parsing CSV more."""
    run, df = run_of(catalogue, "formats")
    agree(df, ["selectivity"])
    assert set(zip(df["data_format"], df["reader"])) == {
        ("parquet", "offload"), ("parquet", "no-offload"), ("parquet", "vanilla"), ("ipc", "offload"),
        ("ipc", "no-offload"), ("csv", "offload"), ("csv", "no-offload"), ("csv", "vanilla")}
    cls = df[df.reader != "vanilla"].set_index(["data_format", "reader"])
    assert (cls["cls_rows_in"] == scanned(cls)).all(), cls["cls_rows_in"]
    for fmt in ("ipc", "csv"):
        assert (cls.loc[(fmt, "offload"), "cls_calls"] > cls.loc[("parquet", "offload"), "cls_calls"]).all()
    decode = cls["cls_decode_s"].groupby(level=[0, 1]).median()
    assert decode["ipc", "offload"] * 5 < decode["parquet", "offload"] < decode["csv", "offload"], decode.to_dict()
    figure(run, "formats.png")


def test_versions(catalogue):
    """Two stacks of software on one stack of daemons (CI's cut of the file's three: Spark 4.3.0 on
    Arrow 26.0.1, then Spark 3.5.3 on Arrow 25.0.1, the class's Arrow C++ and the nodes' pyarrow):
    offload and vanilla give the same answer on each; each ran its own Spark, nodes' pyarrow and
    class (versions.lock: Spark's nodes per Spark software, a connector jar per Spark version, a
    class build per Arrow release); offload's compute side received far fewer bytes than
    vanilla's on each."""
    run, df = run_of(catalogue, "versions")
    agree(df, ["selectivity"])
    stacks = (("4.3.0", "26.0.1"), ("3.5.3", "25.0.1"))
    software = set(zip(df["spark_version"], df["spark_pyarrow"], df["class_arrow"], df["reader"]))
    assert software == {(v, a, a, r) for v, a in stacks for r in ("offload", "vanilla")}, software
    lock = yaml.safe_load((run / "versions.lock").read_text())
    ran = {label: {(n["spark"], n["pyarrow"]) for n in nodes.values()} for label, nodes in lock["spark"].items()}
    assert ran == {"4.3.0": {("4.3.0", "26.0.1")}, "3.5.3 with pyarrow 25.0.1": {("3.5.3", "25.0.1")}}, lock["spark"]
    for kind, versions in (("connector (Spark", ("4.3.0", "3.5.3")), ("object_class (Arrow", ("26.0.1", "25.0.1"))):
        built = {k: v for k, v in lock["builds"].items() if k.startswith(kind)}
        assert set(built) == {f"{kind} {v})" for v in versions} and len(set(built.values())) == 2, lock["builds"]
    rx = df[~df.warmup].groupby(["spark_version", "class_arrow", "reader"])["compute_rx_bytes"].median()
    for v, a in stacks:
        assert rx[v, a, "offload"] * 10 < rx[v, a, "vanilla"], rx.to_dict()
    figure(run, "versions.png")




def test_bandwidth(catalogue):
    """Query time vs the emulated link rate: every rate, codec and reader agrees; each point ran at
    its declared rate; shipping every row uncompressed took at least as long as the declared rate
    allows for the bytes the compute side received, the same bytes as at the default rate (the
    shaper held; a time ratio between the rates would depend on how busy the shared cores and a
    cold application were)."""
    run, df = run_of(catalogue, "bandwidth")
    agree(df, ["selectivity"])
    m = df[~df.warmup]
    rate = m.groupby("link_rate")["link_rate_declared_bps"].first()["200mbit"]
    assert rate == pytest.approx(2e8, rel=0.01)
    full = m[(m.reader == "no-offload") & (m.compression == "none") & (m.selectivity == 100)]
    times = full.groupby("link_rate")["total_s"].median()
    shipped = full.groupby("link_rate")["compute_rx_bytes"].median()
    assert shipped["200mbit"] == pytest.approx(shipped["1.25gbit/core"], rel=0.05), shipped.to_dict()
    assert times["200mbit"] >= 0.9 * shipped["200mbit"] * 8 / rate, (times.to_dict(), shipped.to_dict())
    figure(run, "bandwidth.png")


def test_autoscaler(catalogue):
    """Ceph's PG autoscaler switched on the running stack and back: the OSDs' PG count is recorded
    after every query; the next experiment's start turned it off again (the catalogue's next file
    runs on the stack every tiny profile shares; test_ceph_cluster checks that turning it off
    puts the computed counts back)."""
    run, df = run_of(catalogue, "autoscaler")
    agree(df, ["selectivity"])
    assert set(df["pg_autoscale"]) == {True}
    assert df["osd_pgs"].notna().all() and (df["osd_pgs"] > 0).all(), df["osd_pgs"]
    steps = yaml.safe_load((run / "stages.yaml").read_text())
    assert any("PG autoscaler turned on" in o["message"] for s in steps if s["stage"] == "start" for o in s["nodes"].values())
    after, _ = run_of(catalogue, "backend")
    steps = yaml.safe_load((after / "stages.yaml").read_text())
    assert any("PG autoscaler turned off" in o["message"] for s in steps if s["stage"] == "start" for o in s["nodes"].values())
    figure(run, "autoscaler.png")


def test_contention(catalogue):
    """Both second tenants at once on the storage hosts (each keeps running beside the other):
    auto gives offload's answer (test_spark checks auto against every reader); the CPU load got
    CPU and the second application had scans answered during every repetition they ran, and
    neither is recorded where none ran; auto read every object once, pushed or whole; no tenant
    outlived its application; the storage hosts' CPU beside the tenants is what their cores could
    give in the query's own time."""
    run, df = run_of(catalogue, "contention")
    agree(df, ["selectivity"])
    assert set(df["reader"]) == {"offload", "auto"}
    busy = df[(df.storage_load > 0) & (df.storage_scans > 0)]
    idle = df[(df.storage_load == 0) & (df.storage_scans == 0)]
    assert len(busy) + len(idle) == len(df) and not busy.empty
    assert (busy["tenant_cpu_s"] > 0.2 * busy["total_s"]).all(), busy["tenant_cpu_s"]
    assert (busy["tenant_scans"] > 0).all() and busy["tenant_scan_cpu_s"].notna().all(), busy["tenant_scans"]
    assert idle[["tenant_cpu_s", "tenant_scans", "tenant_scan_cpu_s"]].isna().all().all()
    # beside the tenants the storage hosts' CPU is read over the query alone: never more than its cores could give
    cores = busy["storage_cores_declared"].fillna(os.cpu_count())
    assert (busy["storage_cpu_s"] <= 1.15 * cores * busy["total_s"]).all(), busy[["storage_cpu_s", "total_s"]]
    objects = df.loc[df.reader == "offload", "cls_calls"].iloc[0]
    auto = df[df.reader == "auto"]
    assert (auto["cls_calls"] + auto["cls_objects_read_whole"] == objects).all(), auto[["cls_calls", "cls_objects_read_whole"]]
    figure(run, "contention.png")
    for tenant in ("stress-ng", "tenant-backend_scan"):
        left = subprocess.run(["pgrep", "-f", tenant], capture_output=True, text=True)
        assert left.returncode == 1, f"a tenant ({tenant}) outlived its application: {left.stdout}"

