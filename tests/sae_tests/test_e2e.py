"""Real local-cluster tests: ``sae run experiments/selectivity.py --profile tiny`` (its headline points) end to end on its
own 3-host cluster; ``sae.run`` from plain Python (run markers need no logging configuration);
a run on the same cluster that reuses stack and data, whose warm application and then runner are
killed with SIGKILL mid-sweep, finished by ``sae resume`` with every point exactly once; faults:
an OSD, a Spark worker or Prometheus killed mid-sweep (Ctrl-C: tests/notebook/test_interrupt.py)."""
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import metareserve
import sae
from fixtures.processes import kill_all, tree
from fixtures.sae import FAKE_STAGES
from metareserve.capacity import online_cpus
from monitor_deploy import Monitoring, MonitorOptions, read_frame
from sae.running.execute import SETTLE_MIN
from sae.running.shared_app import PREFIX

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
SETUP = ("install", "start", "generate", "deploy", "build")
SHARED_APP = f"/sae/{PREFIX}"
"""What a catalogue's shared application's processes name: its serve directory on the driver node."""


@pytest.fixture(scope="module")
def env(sae_cluster):
    """The sae runs' own local cluster (fixtures/sae.py; the session's runs other packages' Ceph)."""
    return sae_cluster


def sae_cli(*args, **kw):
    return subprocess.run([SAE, *map(str, args)], capture_output=True, text=True, cwd=ROOT, **kw)


def ledger(run_dir: Path) -> dict:
    return json.loads((run_dir / "ledger.json").read_text())


FAULT_PROFILE = ("repetitions={repetitions}, warmup=0, drift=False, cluster={{'cores': 'shared'}}, "
                 "spark={{'jit': 'quick', {spark}}},")
"""What the fault tests change in the tiny profile besides the sweep: no warm-up (their outcomes
are answers and states, not times), every host on every core (the Spark application starts in
~30 s instead of ~45 s on 2 cores) and C1-only JVMs (``spark.jit``: a cold application's first
queries take half the CPU); the main job below checks the default capacities, warm-up and drift
check. ``{spark}``: more ``spark`` fields."""


def _experiment(root: Path, name: str, selectivities, repetitions: int, extra: str = "", spark: str = "") -> Path:
    """selectivity.py's tiny profile cut to a few points of the offload reader (:data:`FAULT_PROFILE`,
    ``extra``: more profile fields, ``spark``: more fields of its spark section): same stack and data."""
    f = root / f"{name}.py"
    f.write_text(
        "import dataclasses, runpy\n"
        "from sae import Sweep\n"
        f"base = runpy.run_path({str(ROOT / 'experiments' / 'selectivity.py')!r})['experiment']\n"
        f"tiny = dict(base.profiles['tiny'], {FAULT_PROFILE.format(repetitions=repetitions, spark=spark)} {extra}\n"
        f"            sweep=Sweep(cartesian={{'selectivity': {list(selectivities)}, 'reader': ['offload']}}))\n"
        f"experiment = dataclasses.replace(base, name={name!r}, profiles={{**base.profiles, 'tiny': tiny}})\n")
    return f


def _wait(proc, until, what: str, timeout: float = 600):
    """Poll ``until()`` while ``proc`` runs; fail with its output if it ends or time runs out."""
    deadline = time.time() + timeout
    while proc.poll() is None and time.time() < deadline:
        if until():
            return
        time.sleep(0.3)
    raise AssertionError(f"never saw {what}: {proc.poll()=} " + (proc.stdout.read()[-3000:] if proc.poll() is not None else ""))


def _states(run_dir: Path, point: str) -> list[str]:
    return [e["state"] for e in ledger(run_dir)["entries"].values() if e["point"] == point]


def test_second_run_reuses_then_kill_app_and_runner_then_resume(env):
    """Three points in one warm application, run as a catalogue (``sae run DIR/``: its shared
    application, sae.running.shared_app): kill -9 the application during point 2 (the runner evicts
    the killed driver's CephFS session at once, so nothing waits for the MDS to time it out, and
    goes on with point 3 in a new application), then kill -9 the runner during point 3; ``sae
    resume`` of the run (its own application; it stops the shared one the killed catalogue left)
    goes through every setup stage changing nothing, and finishes every point exactly once."""
    root, res = env
    catalogue = root / "killed-catalogue"
    catalogue.mkdir()
    exp = _experiment(catalogue, "killed", [10, 50, 100], 2)
    plan = json.loads(sae_cli("plan", exp, "--json").stdout)
    p1, p2, p3 = plan["order"]
    proc = subprocess.Popen([SAE, "run", f"{catalogue}/", "--reservation", str(root / "reservation.yaml"),
                             "--out", str(root / "out")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    run_dir = root / "out" / "killed" / "latest"
    try:
        _wait(proc, lambda: (run_dir / "ledger.json").exists() and "done" in _states(run_dir, p2),
              "point 2 half done")
        run = run_dir.resolve()
        raws = glob.glob(f"{res.state_root}/*/sae/{run.name}/*.jsonl")
        assert len(raws) == 1, raws
        app = json.loads(Path(raws[0]).read_text().splitlines()[0])
        jvm = Path(f"/proc/{app['jvm_pid']}/cmdline").read_bytes().decode(errors="replace")
        assert SHARED_APP in jvm, "the catalogue's run is not in its shared application"
        for pid in (app["jvm_pid"], app["pid"]):
            os.kill(pid, signal.SIGKILL)
        _wait(proc, lambda: "running" in _states(run_dir, p3), "point 3 running in a new application")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    said = proc.stdout.read()
    assert f"evicted the CephFS sessions of dead clients: client." in said and \
        f"(pid {app['jvm_pid']} on node2)" in said, said[-3000:]
    killed = ledger(run)
    assert proc.returncode == -9 and killed["executed"] == [p1]
    assert "failed" in _states(run, p2) and "done" in _states(run, p2)
    r = sae_cli("resume", run)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not _processes_naming(SHARED_APP), "the killed catalogue's shared application outlived the resume"
    # the resume, a second run on the deployed stack, went through every setup stage and changed
    # nothing (the killed driver's CephFS session was gone already: no start evicted it)
    steps = [s for s in yaml.safe_load((run / "stages.yaml").read_text()) if s["session"] == 2]
    assert {s["stage"] for s in steps} >= set(SETUP)
    for s in steps:
        changed = {node: o["message"] for node, o in s["nodes"].items() if o["changed"]}
        if s["stage"] in SETUP:
            assert not changed, s
    done = ledger(run)
    assert len(done["entries"]) == 6 and all(e["state"] == "done" for e in done["entries"].values())
    assert sorted(done["executed"]) == sorted(plan["order"]) and len(done["executed"]) == 3  # once each
    assert max(e["attempts"] for e in done["entries"].values()) == 2 and len(done["runs"]) == 2
    df = sae.load_results(run)
    assert len(df) == 6 and not df.duplicated(["point", "repetition"]).any()
    assert df.groupby("selectivity")["rows_out"].nunique().eq(1).all()
    again = sae_cli("resume", run)
    assert again.returncode == 0 and "nothing to resume" in again.stdout


def _processes_naming(text: str) -> list[str]:
    """Command lines of this machine's processes (every local host's) that contain ``text``."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            cmd = Path(d, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            out.append(cmd)
    return out


def _exact(run: Path, planned: dict) -> pd.DataFrame:
    """The run's results: every point x repetition once, one answer per selectivity."""
    df = sae.load_results(run)
    assert len(df) == sum(p["repetitions"] for p in planned["points"])
    assert not df.duplicated(["point", "repetition"]).any()
    assert df.groupby("selectivity")["rows_out"].nunique().eq(1).all()
    assert df.groupby("selectivity")["checksum"].nunique().eq(1).all()
    return df


def _resume_exact(run: Path, planned: dict) -> tuple[pd.DataFrame, float]:
    """``sae resume`` the run; its exact results (:func:`_exact`) and how long the resume took."""
    start = time.time()
    r = sae_cli("resume", run)
    assert r.returncode == 0, r.stderr[-3000:]
    return _exact(run, planned), time.time() - start


def _run_with_fault(root: Path, exp: Path, name: str, planned: dict, fault):
    """``sae run`` until the first point has a done repetition, then ``fault(proc)``; returns
    (exit code, output, seconds from the fault to the run's end, run directory)."""
    proc = subprocess.Popen([SAE, "run", str(exp), "--reservation", str(root / "reservation.yaml"),
                             "--out", str(root / "out")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    run_dir = root / "out" / name / "latest"
    try:
        _wait(proc, lambda: (run_dir / "ledger.json").exists() and "done" in _states(run_dir, planned["order"][0]),
              "a repetition done", timeout=900)
        at = time.time()
        fault(proc)
        out, _ = proc.communicate(timeout=900)
        return proc.returncode, out, time.time() - at, run_dir.resolve()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_killed_spark_worker_mid_query_never_gives_a_wrong_number(env, figure):
    """Fault: kill -9 of a Spark worker and its executor mid-sweep: Spark runs the lost tasks on
    the other worker (or the repetition fails and ``sae resume`` reruns it, its start stage
    bringing the worker back); every recorded answer is exact."""
    root, res = env
    exp = _experiment(root, "worker", [50, 100], 2)
    planned = json.loads(sae_cli("plan", exp, "--json").stdout)
    lost = []

    def kill_worker(_):
        worker = int(next(Path(res.state_root, "node3", "spark", "pids").glob("*Worker*.pid")).read_text())
        lost.extend(tree(worker))
        kill_all(lost)
    code, out, ended_after, run = _run_with_fault(root, exp, "worker", planned, kill_worker)
    assert len(lost) > 1, "the worker had no executor to lose"
    assert code in (0, 1), out[-3000:]
    took = 0.0
    if code:
        assert out.strip().splitlines()[-1].startswith("error: "), out[-3000:]
        _, took = _resume_exact(run, planned)
    df = _exact(run, planned)
    assert set(df.loc[df.selectivity == 100, "rows_out"]) == {df["rows"].iloc[0] * df["link_multiplier"].iloc[0]}
    figure(f"killed the worker on node3: run ended after {ended_after:.1f}s (exit {code}); "
           f"{df['attempts'].gt(1).sum()} repetitions rerun; resume {took:.1f}s")


def test_prometheus_killed_mid_run_marks_windows_and_the_run_completes(env, figure):
    """Fault: kill -9 of Prometheus mid-sweep: the run completes with every answer; repetitions
    without a full metric window are marked so (``metric_window``), their bytes and CPU left
    empty rather than zero, and the report says so. The next run's start stage restarts it."""
    root, res = env
    exp = _experiment(root, "blind", [50, 100], 2)
    planned = json.loads(sae_cli("plan", exp, "--json").stdout)
    prometheus = Path(res.state_root, "node1", "monitor", "prometheus.pid")
    code, out, _, run = _run_with_fault(root, exp, "blind", planned,
                                        lambda _: os.kill(int(prometheus.read_text()), signal.SIGKILL))
    assert code == 0, out[-3000:]
    df = _exact(run, planned)
    blind = df[df["metric_window"] != "complete"]
    assert len(blind) and set(blind["metric_window"]) <= {"partial", "missing"}
    assert blind[["compute_rx_bytes", "compute_cpu_s", "storage_cpu_s"]].isna().all().all()
    assert df["exclusive"].all()
    summary = (run / "report" / "summary.txt").read_text()
    warnings = [line for line in summary.splitlines() if "no complete metric window" in line]
    assert len(warnings) == 1, summary
    warning = warnings[0]
    figure(f"Prometheus killed after the first repetition: run completed (exit 0), answers exact; {warning}")


HEADLINE = ("--set", "sweep.cartesian.selectivity=[100, 1]", "--set", "repetitions=2", "--set", "spark.jit=quick")
"""The main job cut to its headline points and 2 repetitions each, a warm-up and a measured one
(the default capacities, the warm-up and the drift check kept), its JVMs compiling with C1 only
(its cold application's three pre-warm queries on one compute core are mostly C2 compiling; the
default JIT adds no flag, jit_conf's tests show): the 50 and 10 % points are the same code at
other thresholds, and the intervals the README's 6 repetitions give are sae.results.analysis.statistics's,
tested on their own; the README's first command, measured on a new machine, runs it all."""


def test_tiny_selectivity_end_to_end(env):
    root, res = env
    planned = json.loads(sae_cli("plan", "experiments/selectivity.py", *HEADLINE, "--json").stdout)
    r = sae_cli("run", "experiments/selectivity.py", "--profile", "tiny", *HEADLINE, "--reservation",
                root / "reservation.yaml", "--out", root / "out")
    assert r.returncode == 0, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    assert (root / "out" / "selectivity" / "latest").resolve() == run
    for name in ("spec.yaml", "plan.yaml", "versions.lock", "ledger.json", "stages.yaml"):
        assert (run / name).exists(), name
    builds = yaml.safe_load((run / "versions.lock").read_text())["builds"]   # what the OSDs and Spark ran
    assert len(builds["object_class (Arrow 26.0.1)"]) == 16 and builds["connector (Spark 4.3.0)"].startswith(
        "sae-connector-")
    build = [s for s in yaml.safe_load((run / "stages.yaml").read_text()) if s["stage"] == "build"]
    assert build and "scan library" not in str(build), build   # none of its readers scans in the task
    # run follows the plan's order
    assert ledger(run)["executed"] == planned["order"]
    df = sae.load_results(run)
    assert len(df) == sum(p["repetitions"] for p in planned["points"])   # per point; the drift check's too
    assert not df.duplicated(["point", "repetition"]).any()
    assert df[~df.drift].groupby("point")["warmup"].sum().eq(planned["warmup"]).all()
    # real outcomes: the filter keeps its selectivity of the rows, the three readers agree exactly
    assert set(df["reader"]) == {"offload", "no-offload", "vanilla"}
    total = df["rows"].iloc[0] * df["link_multiplier"].iloc[0] * df["copy_multiplier"].iloc[0]   # rows scanned
    for (sel, _), g in df.groupby(["selectivity", "reader"]):
        assert g["rows_out"].nunique() == 1 and abs(g["rows_out"].iloc[0] - total * sel / 100) <= total * 0.002
    assert df.groupby("selectivity")["checksum"].nunique().eq(1).all()
    assert (df["init_s"] > 0).all() and (df["compute_s"] > 0).all()
    # a Prometheus window per repetition, with per-node CPU
    for p, rep in df[["point", "repetition"]].itertuples(index=False):
        m = read_frame(run / "metrics" / p / f"rep{rep}" / "metrics.parquet")
        assert {"node1", "node2", "node3"} <= set(m.loc[m.metric == "cpu", "node"])
    assert df["auc_cpu_total"].notna().all()
    # compute and storage apart: at 1 % the compute side receives far fewer bytes with offload
    assert {"compute_rx_bytes", "compute_cpu_s", "storage_cpu_s", "storage_tx_bytes"} <= set(df.columns)
    rx = df[df.selectivity == 1].groupby("reader")["compute_rx_bytes"].median()
    assert rx["offload"] * 10 < min(rx["no-offload"], rx["vanilla"]), rx.to_dict()
    # Spark's own task CPU (from the event log): in every repetition, less than the compute hosts'
    # CPU around it where its window is complete (their JVMs and the driver spend more), and at 1 %
    # offload's tasks do less
    windowed = df[df["compute_cpu_s"].notna()]
    assert (df["compute_task_cpu_s"] > 0).all() and len(windowed) > len(df) / 2, df["compute_task_cpu_s"]
    assert (windowed["compute_task_cpu_s"] < windowed["compute_cpu_s"]).all(), \
        windowed[["reader", "compute_task_cpu_s", "compute_cpu_s"]]
    tasks = df[(df.selectivity == 1) & ~df.warmup].groupby("reader")["compute_task_cpu_s"].median()
    assert tasks["offload"] < tasks["no-offload"], tasks.to_dict()
    # the application's idle window (after its queries): each side's hosts spent CPU in it, a small
    # share of a core per host, recorded beside every row of its points: node3 runs only an
    # executor (a plain compute host), node2 the driver too, node1 the monitors beside the OSD
    assert len(list((run / "metrics" / "idle").glob("*/counters.parquet"))) >= 1
    for column in ("compute_idle_cpu_rate", "compute_idle_services_cpu_rate", "storage_idle_services_cpu_rate"):
        assert df[column].notna().all() and df[column].between(1e-4, 0.5).all(), (column, df[column].describe())
    assert (df["compute_idle_services_cpu_rate"] > df["compute_idle_cpu_rate"]).all()
    assert "storage_idle_cpu_rate" not in df or df["storage_idle_cpu_rate"].isna().all()
    # the default capacities (storage and compute on a core each, 1.25 Gbit/s per core) were put in
    # force and measured: declared and measured in every row, the link within 15 % of its rate
    cores = len(online_cpus())
    assert (df["compute_cores_declared"] == (cores + 1) // 2).all() and (df["storage_cores_declared"] == cores // 2).all()
    assert (df["link_rate_declared_bps"] == 1.25e9 * (cores // 2)).all()   # node1 -> node2
    assert (df["link_rate_measured_bps"] / df["link_rate_declared_bps"]).between(0.85, 1.15).all(), \
        df["link_rate_measured_bps"]
    assert (df["compute_cores_measured"] > 0.3).all() and (df["storage_cores_measured"] > 0.3).all()
    assert "capacities, declared / measured: compute cores 1 / " in (run / "report" / "summary.txt").read_text()
    for png in ("selectivity.png", "compute-side.png", "resources-cpu.png", "resources-net.png", "storage-phases.png",
                "storage-ops.png"):
        assert (run / "report" / png).stat().st_size > 10_000
    storage_work_is_per_repetition(df[~df.warmup], total)
    storage_work_lies_in_its_window(run, df[~df.warmup])
    pauses_end_once_every_host_is_scraped(run, df, pause=2.0)
    assert (run / "report" / "index.html").stat().st_size > 50_000
    # the run marker was published live: Prometheus holds one window per repetition
    windows_match_rows(res, run, df)
    status = sae_cli("status", run)
    assert status.returncode == 0 and f"{len(df)} done, 0 failed" in status.stdout
    # no secret of the stack (Spark's RPC secret, Ceph keys) is written into the run directory
    secrets = [p.read_text().strip() for p in Path(res.state_root).glob("*/spark/auth-secret")]
    secrets += [line.split("=", 1)[1].strip() for k in Path(res.state_root).glob("*/ceph/*keyring")
                for line in k.read_text().splitlines() if line.strip().startswith("key")]
    assert secrets
    leaks = [str(f) for f in run.rglob("*") if f.is_file() and any(x.encode() in f.read_bytes() for x in secrets)]
    assert leaks == [], f"secrets written into {leaks}"


def storage_work_is_per_repetition(df: pd.DataFrame, total: int) -> None:
    """Every reader's storage operations from the OSDs' counters (vanilla's through ceph-fuse
    too); the sae-ceph readers' class phases and counts from the connector's metrics."""
    assert (df["osd_read_ops"] > 0).all(), df[["point", "repetition", "osd_read_ops"]]
    bluestore = df["store"] == "bluestore"   # memstore has no store counters
    assert (df.loc[bluestore, "osd_store_read_bytes"] > 0).all() and df.loc[~bluestore, "osd_store_read_bytes"].isna().all()
    sae_ceph = df[df.reader != "vanilla"]
    assert (sae_ceph["cls_rows_in"] == total).all()
    assert (sae_ceph["cls_rows_out"] == sae_ceph["rows_out"].where(sae_ceph.reader == "offload", total)).all()
    assert (sae_ceph["cls_calls"] <= sae_ceph["osd_read_ops"]).all()   # each call is one of the OSDs' read ops
    store = sae_ceph[sae_ceph["store"] == "bluestore"]
    assert (store["cls_read_bytes"] <= 1.1 * store["osd_store_read_bytes"]).all()
    assert df.loc[df.reader == "vanilla", "cls_total_s"].isna().all()


def storage_work_lies_in_its_window(run: Path, df: pd.DataFrame) -> None:
    """The report draws each host's CPU over the interval it was measured in: after the reading
    that closes a query's window, the storage host (node1) is idle over the next measurement
    interval (drawn at the scrape times, the cgroup exporter's lag pushed query work past it).
    Checked where that interval ends before the next query starts: the pause ends once every host
    is scraped, so mostly only after the run's last query, whose window holds two readings past it."""
    from sae.results.drawing.figures import host_rates
    queries = sorted((e["start"], e["end"]) for f in (run / "raw").glob("*.jsonl") if not f.name.endswith(".ceph.jsonl")
                     for e in map(json.loads, f.read_text().splitlines()) if e.get("event") == "rep")
    checked = 0
    for row in df.itertuples():
        following = min((s for s, _ in queries if s > row.end), default=float("inf"))
        c = read_frame(run / "metrics" / row.point / f"rep{row.repetition}" / "counters.parquet")
        cpu = c[(c.counter == "cpu_seconds") & (c.node == "node1")]
        closing = cpu.loc[cpu["measured"] >= row.end, "measured"].min()   # the reading that closes the window
        second = cpu.loc[cpu["measured"] > closing, "measured"].min()
        if not second <= following:
            continue
        t, rates = host_rates(c, row.start, row.end, pad=float(second - row.end) + 0.1)
        after = (t + row.start >= closing) & (t + row.start < second)
        during = (t >= 0) & (t <= row.end - row.start)
        idle = rates["cpu_seconds"]["node1"][after].mean()
        assert idle < 0.3, (row.point, row.repetition, idle, rates["cpu_seconds"]["node1"][during].mean())
        checked += 1
    assert checked >= 1, "no query's window holds a reading after its closing one before the next query"


def pauses_end_once_every_host_is_scraped(run: Path, df: pd.DataFrame, pause: float) -> None:
    """The pause before each query but an application's first ends once Prometheus holds every
    host's counters read after it began (sae.running.execute.settle_config), not after the whole
    ``pause``: shorter on the whole, never under SETTLE_MIN, and still every query has, for every
    host, a scrape that counter_totals takes as after it (its lag allowed for) before the next
    query starts, so no window borrows its neighbour's readings."""
    lag, gaps, starts = MonitorOptions().vhost_interval, [], []
    for f in (run / "raw").glob("*.jsonl"):
        if not f.name.endswith(".ceph.jsonl"):
            reps = sorted((e for e in map(json.loads, f.read_text().splitlines()) if e.get("event") == "rep"),
                          key=lambda e: e["seq"])
            gaps += [b["start"] - a["end"] for a, b in zip(reps, reps[1:])]
            starts += [e["start"] for e in reps]
    assert gaps and min(gaps) >= SETTLE_MIN and statistics.median(gaps) < 0.8 * pause, sorted(gaps)
    for row in df.itertuples():
        later = [s for s in starts if s > row.end]
        if later:
            c = read_frame(run / "metrics" / row.point / f"rep{row.repetition}" / "counters.parquet")
            for node, g in c[c.counter == "cpu_seconds"].groupby("node"):
                assert ((g["timestamp"] >= row.end + lag) & (g["timestamp"] <= min(later))).any(), \
                    (row.point, row.repetition, node, row.end, min(later), sorted(g["timestamp"]))


def windows_match_rows(res, run: Path, df: pd.DataFrame) -> None:
    """Prometheus holds the run marker's window of every repetition, within 2 s of its row."""
    windows = Monitoring(res).marker.windows(df["start"].min() - 60, df["end"].max() + 60)
    marked = {(w.point, int(w.repetition)): w for w in windows if w.run_id == run.name}
    for row in df.itertuples():
        w = marked[(row.point, row.repetition)]
        assert abs(w.start - row.start) < 2 and abs(w.end - row.end) < 2


def test_killed_osd_fails_the_point_naming_its_host_then_resume_is_exact(env, figure):
    """Fault: kill -9 of an OSD (bluestore, so its data survives) during a sweep point: the run's
    storage watch stops the application within seconds (not the client's op timeout) and the
    point's repetitions fail, naming the OSD and its host; ``sae resume`` restarts it and finishes
    with the same answers as the repetitions done before. The last run on the sae cluster: its
    bluestore stack would otherwise be replaced by memstore again for the next run."""
    root, res = env
    exp = _experiment(root, "osd", [10], 2, extra="ceph={'store': 'bluestore', 'osd_size': '2GiB'},",
                      spark="'conf': {'spark.task.maxFailures': '1'}")
    planned = json.loads(sae_cli("plan", exp, "--json").stdout)
    killed = {}

    def kill_osd(_):   # the stack (bluestore) was deployed by this run
        pidfile = Path(sorted(glob.glob(f"{res.state_root}/*/ceph/run/ceph-osd.*.pid"))[0])
        killed.update(host=pidfile.parts[-4], osd=pidfile.name[len("ceph-"):-len(".pid")])
        os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
    code, out, failed_after, run = _run_with_fault(root, exp, "osd", planned, kill_osd)
    assert code == 1, out[-3000:]
    host, osd = killed["host"], killed["osd"]
    last = out.strip().splitlines()[-1]
    assert last.startswith("error: ") and f"{osd} on {host} down" in last, last
    assert failed_after <= 30, f"the killed OSD was reported after {failed_after:.0f}s"
    _, took = _resume_exact(run, planned)
    figure(f"killed {osd} on {host}: run failed after {failed_after:.1f}s with {last!r}; resume took {took:.1f}s")


def test_reserve_and_teardown_without_reservation(tmp_path, own_reservations):
    """Without --reservation sae reserves its own cluster and, with --teardown, releases it
    (install/start skipped, data/build stages replaced by no-ops: reserve, distribute, stop and
    release are real)."""
    if os.geteuid() != 0:
        pytest.skip("local cluster tests need root")
    f = tmp_path / "own.py"
    f.write_text(
        "from sae import Experiment, Sweep\n" + FAKE_STAGES +
        f"experiment = Experiment(name='own{os.getpid() % 10000}', sweep=Sweep(cartesian={{'selectivity': [50]}}),\n"
        "    repetitions=1, warmup=0, stages={s: nothing for s in ('generate', 'deploy', 'build')}\n"
        "    | {'run': fake_run})\n")
    # its own $SAE_HOME: with the developer's, it would share (and tear down) their local cluster
    r = sae_cli("run", f, "--teardown", "--skip", "install", "--skip", "start", "--out", tmp_path / "out",
                env=dict(os.environ, SAE_HOME=str(tmp_path / "home")))
    assert r.returncode == 0, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    name = yaml.safe_load((run / "reservation.yaml").read_text())["name"]
    assert name == f"sae-own{os.getpid() % 10000}"
    steps = [s["stage"] for s in yaml.safe_load((run / "stages.yaml").read_text())]
    assert steps[:2] == ["reserve", "distribute"] and steps[-2:] == ["stop", "release"]
    outcomes = {s["stage"]: s["outcome"] for s in json.loads((run / "ledger.json").read_text())["steps"]}
    assert outcomes["install"] == outcomes["start"] == "skipped" and outcomes["generate"] == "done"
    assert name not in [x.name for x in metareserve.list_reservations()]
