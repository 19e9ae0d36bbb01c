"""Pure layer: ledger states and resume bookkeeping, tidy results and report plots from a
synthetic run directory (no nodes)."""
import json
import shutil

import numpy as np
import pandas as pd
import pytest

import sae
from monitor_deploy import read_frame
from metareserve.errors import UsageError
from sae.results.run.ledger import RunLedger
from sae.planning.planner import plan
from sae.results.analysis.summary import summary, summary_text
from sae.results.drawing.report import make_report
from sae.results.run.directory import RunDir, versions, write_results
from sae.planning.spec import Experiment, SparkSpec, Sweep, Workload


def _run(tmp_path, sweep, figures=("points",), repetitions=3, **sections):
    e = Experiment(name="synthetic", sweep=sweep, repetitions=repetitions, warmup=1, figures=figures, **sections)
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


ROLES = {"node1": "storage", "node2": "compute", "node3": "compute"}
# bytes the compute side receives per repetition: offload ships 1/50 of what the baselines ship
RX = {"offload": 2e6, "no-offload": 100e6, "vanilla": 90e6}


def _fill(p, run, ledger, rng):
    """Done repetitions with timings, monitor_deploy's window files and raw counters, in which
    each compute host receives half of RX[reader] and the storage host sends all of it."""
    run.write_yaml(run.layout, {"version": 1, "roles": {
        "ceph-mon": ["node1"], "ceph-osd": ["node1"], "prometheus": ["node1"],
        "spark-master": ["node2"], "driver": ["node2"], "spark-worker": ["node2", "node3"]}})
    for pt in p.points:
        sel, reader = pt.spec.workload.selectivity, pt.spec.workload.reader
        for key, e in ledger.of_point(pt.id).items():
            t0 = 1e9 + 100 * (pt.index * 10 + e["repetition"])
            init, comp = rng.uniform(0.5, 1), sel / 20 + rng.uniform(0, 0.5)
            e.update(state="done", start=t0 + 2, end=t0 + 2 + init + comp,
                     result={"init_s": init, "compute_s": comp, "total_s": init + comp,
                             "rows": sel * 10, "checksum": 7}, auc={"cpu": 1.0})
            # monitor_deploy's export format
            rows = [{"timestamp": t0 + t, "node": n, "metric": m, "value": float(rng.uniform(0, 50)),
                     "unit": "%"} for m in ("cpu", "net_rx", "net_tx", "memory")
                    for n in ROLES for t in range(5)]
            d = run.metrics / pt.id / f"rep{e['repetition']}"
            d.mkdir(parents=True)
            pd.DataFrame(rows).to_parquet(d / "metrics.parquet")
            pd.DataFrame([{"metric": m, "node": n, "auc": 10.0, "unit": "%·s", "samples": 5}
                          for m in ("cpu", "net_rx", "net_tx") for n in (*ROLES, "total")]
                         ).to_parquet(d / "auc.parquet")
            # counters move only between the repetition's start and end, at a constant rate
            span, samples = e["end"] - e["start"], []
            for t in sorted({*np.arange(t0, e["end"] + 3, 1.0), e["start"], e["end"]}):
                f = min(max((t - e["start"]) / span, 0), 1)
                for n, role in ROLES.items():
                    rx = RX[reader] / 2 if role == "compute" else 0
                    tx = RX[reader] if role == "storage" else 0
                    cpu = (1.0 if reader == "offload" else 4.0) if role == "compute" else 3.0
                    samples += [(t, n, "net_rx_bytes", "device=eth0", 1e9 + f * rx),
                                (t, n, "net_tx_bytes", "device=eth0", 1e9 + f * tx),
                                (t, n, "cpu_seconds", "", 50 + f * cpu)]
            pd.DataFrame(samples, columns=["timestamp", "node", "counter", "series", "value"]
                         ).to_parquet(d / "counters.parquet")
    ledger.save()


READERS = ["offload", "no-offload", "vanilla"]


def test_results_and_report_from_synthetic_run(tmp_path):
    sweep = Sweep(cartesian={"selectivity": [1, 50, 100], "object_size": ["4MiB", "8MiB"],
                             "reader": READERS})
    p, run, ledger = _run(tmp_path, sweep, figures=("objectsize-selectivity", "compute-side", "objectsize"))
    _fill(p, run, ledger, np.random.default_rng(0))
    write_results(run)
    df = sae.load_results(tmp_path / "synthetic")
    assert len(df) == len(p.points) * 3 and df["warmup"].sum() == len(p.points)
    assert {"selectivity", "object_size", "reader", "init_s", "compute_s", "auc_cpu"} <= set(df.columns)
    assert list(df.drop_duplicates("point")["point"]) == p.order
    # the sides' hosts and resources during each repetition, from the raw counters
    assert set(df["compute_hosts"]) == {"node2,node3"} and set(df["storage_hosts"]) == {"node1"}
    for reader, g in df.groupby("reader"):
        assert g["compute_rx_bytes"].to_numpy() == pytest.approx(RX[reader])
        assert g["storage_tx_bytes"].to_numpy() == pytest.approx(RX[reader])
        assert g["compute_cpu_s"].to_numpy() == pytest.approx(2 * (1.0 if reader == "offload" else 4.0))
        assert g["storage_cpu_s"].to_numpy() == pytest.approx(3.0)
    names = sorted(x.name for x in make_report(run.root))
    assert names == ["compute-side.png", "index.html", "objectsize-selectivity.png", "objectsize.png",
                     "resources-cpu.png", "resources-net.png", "summary.csv", "summary.txt"]
    assert all((run.report / n).stat().st_size > 5000 for n in names if n.endswith(".png"))


def test_summary_ratios_offload_vs_each_baseline(tmp_path):
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [1, 100], "reader": READERS}))
    _fill(p, run, ledger, np.random.default_rng(1))
    write_results(run)
    s = summary(sae.load_results(run.root))
    one = s[(s["selectivity"] == 1) & (s["baseline"] == "no-offload")].iloc[0]
    assert one["bytes_x"] == pytest.approx(50) and one["compute_cpu_x"] == pytest.approx(4)
    assert one["paper_bytes_x"] == 48.9 and one["paper_compute_cpu_x"] == 8.0
    assert s[(s["selectivity"] == 1) & (s["baseline"] == "vanilla")].iloc[0]["bytes_x"] == pytest.approx(45)
    assert s[s["selectivity"] == 100]["paper_bytes_x"].isna().all()
    text = summary_text(s)
    assert "50.0x" in text and "48.9x" in text and "vanilla" in text


def test_host_roles_from_layouts():
    from metareserve import Layout
    assert Layout({"ceph-osd": ["node1", "node2"], "spark-worker": ["node2", "node3"],
                   "prometheus": ["node4"]}).host_roles() == {"node1": "storage", "node2": "both",
                                                              "node3": "compute"}


def test_repetitions_without_a_full_metric_window_are_marked_not_zero(tmp_path):
    """Prometheus down during one repetition (its scrapes stop at the start) and during the export
    of another (no window): both are marked, their side columns empty, the report warns."""
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [1], "reader": READERS}))
    _fill(p, run, ledger, np.random.default_rng(2))
    off = next(pt for pt in p.points if pt.spec.workload.reader == "offload")
    entries = sorted(ledger.of_point(off.id).values(), key=lambda e: e["repetition"])
    gap, gone = entries[1], entries[2]
    counters = run.metrics / off.id / f"rep{gap['repetition']}" / "counters.parquet"
    c = read_frame(counters)
    c[(c.timestamp <= gap["start"]) | (c.timestamp > gap["end"] + 2)].to_parquet(counters)
    shutil.rmtree(run.metrics / off.id / f"rep{gone['repetition']}")
    write_results(run)
    df = sae.load_results(run.root).set_index(["point", "repetition"])
    assert df.loc[(off.id, gap["repetition"]), "metric_window"] == "partial"
    assert df.loc[(off.id, gone["repetition"]), "metric_window"] == "missing"
    for key in [(off.id, gap["repetition"]), (off.id, gone["repetition"])]:
        assert df.loc[key, ["compute_rx_bytes", "compute_cpu_s"]].isna().all()
    others = df.drop(index=[(off.id, gap["repetition"]), (off.id, gone["repetition"])])
    assert set(others["metric_window"]) == {"complete"} and others["compute_rx_bytes"].gt(0).all()
    assert df["exclusive"].eq(False).all()   # the synthetic run holds no lease
    make_report(run.root)
    warning = next(line for line in (run.report / "summary.txt").read_text().splitlines()
                   if "no complete metric window" in line)
    assert warning.startswith("warning: 2 of ") and "1 partial, 1 missing" in warning
    assert "no complete metric window" in (run.report / "index.html").read_text()


def test_a_quick_jit_run_says_its_times_are_not_the_default_jvms(tmp_path):
    """spark.jit: quick is recorded per row (spark_jit) and the report warns about its times."""
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [1], "reader": READERS}),
                          spark=SparkSpec(jit="quick"))
    _fill(p, run, ledger, np.random.default_rng(3))
    write_results(run)
    df = sae.load_results(run.root)
    assert set(df["spark_jit"]) == {"quick"}
    make_report(run.root)
    warning = next(line for line in (run.report / "summary.txt").read_text().splitlines() if "spark.jit" in line)
    measured = int((~df["warmup"]).sum())
    assert 0 < measured < len(df)   # warm-ups are not counted
    assert warning.startswith(f"warning: {measured} of {measured} measured repetitions ran with spark.jit: quick")
    assert "C1 only" in (run.report / "index.html").read_text()


def test_scalability_figure_draws_one_speedup_line_per_selectivity(tmp_path):
    """Fig. 18 with the thesis's read-everything series and a filtered one: bars per size, reader
    and selectivity, and a speedup line for each selectivity (not one averaged over both)."""
    sweep = Sweep(cartesian={"selectivity": [100, 10], "link_multiplier": [2, 1], "reader": ["offload", "vanilla"]})
    p, run, ledger = _run(tmp_path, sweep, figures=("scalability",))
    _fill(p, run, ledger, np.random.default_rng(3))
    write_results(run)
    from matplotlib.lines import Line2D
    from sae.results.drawing.plotting import keeping_figures
    with keeping_figures() as kept:
        make_report(run.root)
    fig = next(f for path, f in kept if path.name == "scalability.png")
    lines = [ln.get_label() for ax in fig.axes for ln in ax.get_lines() if isinstance(ln, Line2D)
             and ln.get_label().startswith("speedup")]
    assert sorted(lines) == ["speedup (vanilla / offload), 10 %", "speedup (vanilla / offload), 100 %"]


def test_beside_a_tenant_only_what_it_touches_is_read_over_the_query(tmp_path):
    """Beside a second tenant on the storage host (a steady CPU-second per second there), the
    storage side's CPU is read over the repetition's own interval (1.3 s of the tenant's), while
    the compute side's bytes, which arrive in a burst between two scrapes, stay read at the
    quiet scrapes around the query: all 1000 of them, where interpolation would miss part."""
    from monitor_deploy import write_frame
    from sae.results.run.directory import TENANT_TOUCHED, side_resources

    def burst(t):   # bytes to node2 during the query [10.3, 11.6]; nothing in the pauses
        return 1000 * min(max((t - 10.3) / 0.3, 0), 1)
    rows = [(t, "node2", "net_rx_bytes", "", burst(t)) for t in np.arange(0, 20, 1.0)]
    rows += [(t, "node1", "cpu_seconds", "", t) for t in np.arange(0, 20, 1.0)]
    for counter in ("cpu_seconds", "net_rx_bytes", "net_tx_bytes"):
        rows += [(t, n, counter, "", 0.0) for t in np.arange(0, 20, 1.0) for n in ("node1", "node2")
                 if (n, counter) not in (("node2", "net_rx_bytes"), ("node1", "cpu_seconds"))]
    write_frame(pd.DataFrame(rows, columns=["timestamp", "node", "counter", "series", "value"]),
                tmp_path / "counters.parquet")
    roles = {"node1": "storage", "node2": "compute"}
    tenant = side_resources(tmp_path, 10.3, 11.6, roles, after=8.2, before=13.9, busy=TENANT_TOUCHED)
    assert tenant["compute_rx_bytes"] == pytest.approx(1000) and tenant["storage_cpu_s"] == pytest.approx(1.3)
    quiet = side_resources(tmp_path, 10.3, 11.6, roles, after=8.2, before=13.9)
    assert quiet["compute_rx_bytes"] == pytest.approx(1000) and quiet["storage_cpu_s"] >= 2.0
    everything_own = side_resources(tmp_path, 10.3, 11.6, roles)
    assert everything_own["compute_rx_bytes"] < 900


@pytest.mark.parametrize("figure, sweep, workload", [
    ("projection", Sweep(cartesian={"columns": [(), ("total_amount", "VendorID"), ("total_amount",)],
                                    "reader": ["offload", "no-offload"]}), {}),
    ("queries", Sweep(cartesian={"query": ["groupby", "join"], "reader": READERS}), {"selectivity": 100}),
])
def test_axis_figures_the_ci_catalogue_leaves_out_draw_from_a_synthetic_run(tmp_path, figure, sweep, workload):
    """projection.png and queries.png (tests/sae_tests/test_catalogue.py leaves their experiments
    out: test_spark asserts what they show on a real stack) from a run's results."""
    p, run, ledger = _run(tmp_path, sweep, figures=(figure,), workload=Workload(**workload))
    _fill(p, run, ledger, np.random.default_rng(3))
    write_results(run)
    names = {x.name for x in make_report(run.root)}
    assert f"{figure}.png" in names and (run.report / f"{figure}.png").stat().st_size > 10_000
