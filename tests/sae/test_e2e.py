"""Real local-cluster tests: ``sae run experiments/selectivity.py --profile tiny`` end to end on its
own 3-host cluster, then a second run on the same cluster that reuses stack and data, is killed
with SIGKILL mid-sweep and finished by ``sae resume`` with every point exactly once."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import metareserve
import sae
from metareserve.errors import NothingToDo
from monitor_deploy import Monitoring
from sae.clean import stop_stack

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
SETUP = ("install", "start", "generate", "deploy", "build")


@pytest.fixture(scope="module")
def env():
    """Its own local cluster (the session's may run other packages' Ceph), always released."""
    if os.geteuid() != 0:
        pytest.skip("local cluster tests need root")
    # Not under pytest's basetemp: concurrent pytest sessions prune old ones while this runs.
    root = Path(tempfile.mkdtemp(prefix="sae-e2e-"))
    res = metareserve.reserve(provider="local", name=f"t{os.getpid() % 100000}sae", nodes=3,
                              out=root / "reservation.yaml")
    try:
        yield root, res
    finally:
        try:
            stop_stack(res)
        finally:
            try:
                metareserve.release(res)
            except NothingToDo:
                pass
            shutil.rmtree(root, ignore_errors=True)


def sae_cli(*args, **kw):
    return subprocess.run([SAE, *map(str, args)], capture_output=True, text=True, cwd=ROOT, **kw)


def ledger(run_dir: Path) -> dict:
    return json.loads((run_dir / "ledger.json").read_text())


def test_tiny_selectivity_end_to_end(env):
    root, res = env
    planned = json.loads(sae_cli("plan", "experiments/selectivity.py", "--json").stdout)
    r = sae_cli("run", "experiments/selectivity.py", "--profile", "tiny", "--reservation",
                root / "reservation.yaml", "--out", root / "out")
    assert r.returncode == 0, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    assert (root / "out" / "selectivity" / "latest").resolve() == run
    for name in ("spec.yaml", "plan.yaml", "versions.lock", "ledger.json", "stages.yaml"):
        assert (run / name).exists(), name
    # run follows the plan's order
    assert ledger(run)["executed"] == planned["order"]
    df = sae.load_results(run)
    assert len(df) == len(planned["order"]) * planned["repetitions"]
    assert not df.duplicated(["point", "repetition"]).any()
    assert df.groupby("point")["warmup"].sum().eq(planned["warmup"]).all()
    # real outcomes: the filter keeps its selectivity of the rows, offload on/off agree exactly
    total = df["rows"].iloc[0]
    for (sel, _), g in df.groupby(["selectivity", "offload"]):
        assert g["rows_out"].nunique() == 1 and abs(g["rows_out"].iloc[0] - total * sel / 100) <= total * 0.002
    assert df.groupby("selectivity")["checksum"].nunique().eq(1).all()
    assert (df["init_s"] > 0).all() and (df["compute_s"] > 0).all()
    # a Prometheus window per repetition, with per-node CPU
    for p, rep in df[["point", "repetition"]].itertuples(index=False):
        m = pd.read_parquet(run / "metrics" / p / f"rep{rep}" / "metrics.parquet")
        assert {"node1", "node2", "node3"} <= set(m.loc[m.metric == "cpu", "node"])
    assert df["auc_cpu_total"].notna().all()
    for png in ("selectivity.png", "resources-cpu.png", "resources-net.png"):
        assert (run / "report" / png).stat().st_size > 10_000
    # the run marker was published live: Prometheus holds one window per repetition
    windows = Monitoring(res).marker.windows(df["start"].min() - 60, df["end"].max() + 60)
    marked = {(w.point, int(w.repetition)): w for w in windows if w.run_id == run.name}
    for row in df.itertuples():
        w = marked[(row.point, row.repetition)]
        assert abs(w.start - row.start) < 2 and abs(w.end - row.end) < 2
    status = sae_cli("status", run)
    assert status.returncode == 0 and f"{len(df)} done, 0 failed" in status.stdout


def _kill_experiment(root: Path) -> Path:
    """selectivity.py's tiny profile cut to 2 points × 2 repetitions: same stack and data."""
    f = root / "kill.py"
    f.write_text(
        "import dataclasses, runpy\n"
        "from sae import Sweep\n"
        f"base = runpy.run_path({str(ROOT / 'experiments' / 'selectivity.py')!r})['experiment']\n"
        "tiny = dict(base.profiles['tiny'], repetitions=2,\n"
        "            sweep=Sweep(cartesian={'selectivity': [10, 100], 'offload': [True]}))\n"
        "experiment = dataclasses.replace(base, name='killed', profiles={'tiny': tiny})\n")
    return f


def test_second_run_reuses_then_kill_and_resume(env):
    root, _ = env
    exp = _kill_experiment(root)
    proc = subprocess.Popen([SAE, "run", str(exp), "--reservation", str(root / "reservation.yaml"),
                             "--out", str(root / "out")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    run_dir = root / "out" / "killed" / "latest"
    try:
        while proc.poll() is None:  # until the first point is done and the second one runs
            if (run_dir / "ledger.json").exists():
                led = ledger(run_dir)
                if led["executed"] and any(e["state"] == "running" for e in led["entries"].values()):
                    break
            time.sleep(0.5)
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    run = run_dir.resolve()
    killed = ledger(run)
    assert proc.returncode == -9 and len(killed["executed"]) == 1
    # the second run on this cluster changed nothing in setup stages
    steps = yaml.safe_load((run / "stages.yaml").read_text())
    assert {s["stage"] for s in steps} >= set(SETUP)
    for s in steps:
        if s["stage"] in SETUP:
            assert not any(o["changed"] for o in s["nodes"].values()), s
    r = sae_cli("resume", run)
    assert r.returncode == 0, r.stderr[-3000:]
    done = ledger(run)
    plan = yaml.safe_load((run / "plan.yaml").read_text())
    assert len(done["entries"]) == 4 and all(e["state"] == "done" for e in done["entries"].values())
    assert done["executed"] == plan["order"]  # each point executed exactly once
    assert max(e["attempts"] for e in done["entries"].values()) == 2 and len(done["runs"]) == 2
    df = sae.load_results(run)
    assert len(df) == 4 and not df.duplicated(["point", "repetition"]).any()
    again = sae_cli("resume", run)
    assert again.returncode == 0 and "nothing to resume" in again.stdout


def test_reserve_and_teardown_without_reservation(tmp_path):
    """Without --reservation sae reserves its own cluster and, with --teardown, releases it
    (install/start skipped, data/build stages replaced by no-ops: reserve, distribute, stop and
    release are real)."""
    if os.geteuid() != 0:
        pytest.skip("local cluster tests need root")
    f = tmp_path / "own.py"
    f.write_text(
        "from sae import Experiment, Sweep\n"
        "def nothing(ctx):\n    return None\n"
        "def fake_run(ctx):\n"
        "    pending = ctx.ledger.pending(ctx.point.id)\n"
        "    ctx.ledger.mark(ctx.point.id, pending, 'done', timings={r: {'start': 1.0, 'end': 2.0} for r in pending})\n"
        f"experiment = Experiment(name='own{os.getpid() % 10000}', sweep=Sweep(cartesian={{'selectivity': [50]}}),\n"
        "    repetitions=1, warmup=0, stages={s: nothing for s in ('generate', 'deploy', 'build')}\n"
        "    | {'run': fake_run})\n")
    r = sae_cli("run", f, "--teardown", "--skip", "install", "--skip", "start", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    name = yaml.safe_load((run / "reservation.yaml").read_text())["name"]
    assert name == f"sae-own{os.getpid() % 10000}"
    steps = [s["stage"] for s in yaml.safe_load((run / "stages.yaml").read_text())]
    assert steps[:2] == ["reserve", "distribute"] and steps[-2:] == ["stop", "release"]
    outcomes = {s["stage"]: s["outcome"] for s in json.loads((run / "ledger.json").read_text())["steps"]}
    assert outcomes["install"] == outcomes["start"] == "skipped" and outcomes["generate"] == "done"
    assert name not in [x.name for x in metareserve.list_reservations()]
