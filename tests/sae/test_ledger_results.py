"""Pure layer: ledger states and resume bookkeeping, tidy results and report plots from a
synthetic run directory (no nodes)."""
import json

import numpy as np
import pandas as pd
import pytest

import sae
from metareserve.errors import UsageError
from sae.ledger import RunLedger
from sae.planner import plan
from sae.report import make_report
from sae.results import RunDir, versions, write_results
from sae.spec import Experiment, Sweep


def _run(tmp_path, sweep):
    e = Experiment(name="synthetic", sweep=sweep, repetitions=3, warmup=1)
    p = plan(e, profile="tiny")
    run = RunDir.new(tmp_path, e.name, "tiny")
    run.write_yaml(run.plan, p.to_dict())
    return p, run, RunLedger.create(run.ledger, p, versions())


def test_ledger_resume_bookkeeping(tmp_path):
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [10, 100]}))
    first, second = p.order
    assert ledger.counts() == {"todo": 6, "running": 0, "done": 0, "failed": 0}
    ledger.mark(first, [0, 1, 2], "running")
    ledger.mark(first, [0, 1, 2], "done", timings={r: {"start": r, "end": r + 1} for r in range(3)})
    ledger.mark(second, [0, 1, 2], "running")
    # A runner killed here leaves 'running' entries: the next session turns them into failures.
    again = RunLedger.load(run.ledger)
    again.begin_session("resume")
    assert again.pending(first) == [] and again.pending(second) == [0, 1, 2]
    assert all(e["error"].startswith("interrupted") for e in again.failures())
    again.mark(second, [0, 1, 2], "running")
    assert {e["attempts"] for e in again.of_point(second).values()} == {2}
    assert len(again.entries) == 6  # never duplicated
    assert (tmp_path / "synthetic" / "latest").resolve() == run.root


def test_ledger_rejects_unknown_format(tmp_path):
    (tmp_path / "ledger.json").write_text(json.dumps({"version": 99}))
    with pytest.raises(UsageError, match="not supported"):
        RunLedger.load(tmp_path / "ledger.json")
    with pytest.raises(UsageError, match="not an sae run directory"):
        RunDir.find(tmp_path / "nowhere")


def _fill(p, run, ledger, rng):
    for pt in p.points:
        sel = pt.params["workload"]["selectivity"]
        for key, e in ledger.of_point(pt.id).items():
            init, comp = rng.uniform(0.5, 1), sel / 20 + rng.uniform(0, 0.5)
            e.update(state="done", start=100.0, end=100 + init + comp,
                     result={"init_s": init, "compute_s": comp, "total_s": init + comp,
                             "rows": sel * 10, "checksum": 7}, auc={"cpu": 1.0})
            # monitor_deploy's export format
            rows = [{"timestamp": 1e9 + t, "node": n, "metric": m, "value": float(rng.uniform(0, 50)),
                     "unit": "%"} for m in ("cpu", "net_rx", "net_tx", "memory")
                    for n in ("node1", "node2") for t in range(5)]
            d = run.metrics / pt.id / f"rep{e['repetition']}"
            d.mkdir(parents=True)
            pd.DataFrame(rows).to_parquet(d / "metrics.parquet")
            pd.DataFrame([{"metric": m, "node": n, "auc": 10.0, "unit": "%·s", "samples": 5}
                          for m in ("cpu", "net_rx", "net_tx") for n in ("node1", "node2", "total")]
                         ).to_parquet(d / "auc.parquet")
    ledger.save()


def test_results_and_report_from_synthetic_run(tmp_path):
    sweep = Sweep(cartesian={"selectivity": [1, 50, 100], "object_size": ["4MiB", "8MiB"],
                             "offload": [True, False]})
    p, run, ledger = _run(tmp_path, sweep)
    _fill(p, run, ledger, np.random.default_rng(0))
    write_results(run)
    df = sae.load_results(tmp_path / "synthetic")
    assert len(df) == len(p.points) * 3 and df["warmup"].sum() == len(p.points)
    assert {"selectivity", "object_size", "offload", "init_s", "compute_s", "auc_cpu"} <= set(df.columns)
    assert list(df.drop_duplicates("point")["point"]) == p.order
    names = sorted(x.name for x in make_report(run.root))
    assert names == ["objectsize.png", "resources-cpu.png", "resources-net.png", "selectivity.png"]
    assert all((run.report / n).stat().st_size > 5000 for n in names)
