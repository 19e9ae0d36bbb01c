"""Pure: what the summary and the report state, from a synthetic recorded run (no cluster):
every ratio with its 95 % interval, the headline, the readers' definitions, the correctness check
and the experiment's description."""
import numpy as np
import pandas as pd
import pytest

import sae
from sae.planning import readers
from sae.results.analysis.summary import SPREAD_CAVEAT, caveats, correctness, summary, summary_text
from sae.results.drawing.report import make_report
from sae.results.run.directory import write_results
from sae.planning.spec import Sweep
from test_ledger_results import READERS, _fill, _run


def _recorded(tmp_path, repetitions=7, seed=3):
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [1, 100], "reader": READERS}),
                          figures=("selectivity", "compute-side"), repetitions=repetitions)
    _fill(p, run, ledger, np.random.default_rng(seed))
    run.write_yaml(run.spec, {"version": 1, "experiment": {"name": "synthetic",
                                                          "description": "A synthetic selectivity sweep"}})
    write_results(run)
    return run


def test_every_ratio_has_its_interval(tmp_path):
    run = _recorded(tmp_path)
    s = summary(sae.load_results(run.root))
    assert set(s["n_offload"]) == {6} and set(s["n_baseline"]) == {6}
    for ratio in ("time_x", "bytes_x", "compute_cpu_x"):
        assert (s[f"{ratio}_low"] <= s[ratio]).all() and (s[ratio] <= s[f"{ratio}_high"]).all()
    one = s[(s["selectivity"] == 1) & (s["baseline"] == "no-offload")].iloc[0]
    assert one["bytes_x_low"] == one["bytes_x_high"] == 50   # bytes repeat exactly: no spread
    text = summary_text(s)
    assert "50.0x [50.0, 50.0]" in text and "4.00x [4.00, 4.00]" in text and "95 % bootstrap interval" in text
    assert "6/6" in text


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """A recorded run with its report made (the tests below read it, none changes it)."""
    run = _recorded(tmp_path_factory.mktemp("reported"))
    make_report(run.root)
    return run


def test_summary_ends_with_correctness_and_a_headline_per_selectivity(reported):
    run = reported
    lines = (run.report / "summary.txt").read_text().splitlines()
    assert lines[-3] == "correctness: every reader returned the same rows and checksum at every point"
    low, high = lines[-2:]
    assert low.startswith("At 1 % selectivity offload's compute side received 50.0x [50.0, 50.0] fewer "
                          "bytes than no-offload and 45.0x [45.0, 45.0] fewer than vanilla, its queries "
                          "took "), low
    assert high.startswith("At 100 % selectivity offload's compute side received 50.0x [50.0, 50.0] fewer"), high
    for head in (low, high):
        assert "of no-offload's and" in head and "of vanilla's time" in head and "n too small" not in head
        # 2 compute hosts x 1 + storage 3 CPU-s against 2 x 4 + 3: both sides together, 5/11 of either's
        assert "both sides together spent 0.45x [0.45, 0.45] of no-offload's and 0.45x [0.45, 0.45] of " \
               "vanilla's CPU-seconds" in head


def test_total_cpu_beside_each_sides(tmp_path):
    run = _recorded(tmp_path)
    s = summary(sae.load_results(run.root))
    assert (s["offload_total_cpu_s"] == s["offload_compute_cpu_s"] + s["offload_storage_cpu_s"]).all()
    assert s["total_cpu_x"].to_numpy() == pytest.approx(11 / 5)
    head = summary_text(s).splitlines()[1].split()
    assert head[-6:] == ["total", "CPU", "s", "off/base", "total", "CPU"]


def test_caveats_name_the_store_the_one_machine_the_links_and_the_intervals(tmp_path):
    run = _recorded(tmp_path)
    df = sae.load_results(run.root)
    plain = df.assign(store="bluestore", link_multiplier=1)
    assert caveats(run, plain) == [SPREAD_CAVEAT]   # no capacities recorded, no links: intervals only
    df = df.assign(store="memstore", link_multiplier=4, rows=1_000_000)
    said = caveats(run, df, "intervals from 3 runs")
    assert said[0].startswith("the OSDs keep their objects in memory (memstore)")
    assert "linked up to 4 times, so a query scans 4x the 1,000,000 stored rows" in said[1]
    assert said[-1] == "intervals from 3 runs"
    make_report(run.root, spread_caveat="intervals from 3 runs")
    assert "caveat: intervals from 3 runs" in (run.report / "summary.txt").read_text()


def test_too_few_repetitions_say_so(tmp_path):
    run = _recorded(tmp_path, repetitions=3)
    text = summary_text(summary(sae.load_results(run.root)))
    assert "50.0x (n too small)" in text and "[" not in text.splitlines()[1]


def test_index_html_states_headline_readers_correctness_and_description(reported):
    run = reported
    html = (run.report / "index.html").read_text()
    assert html.index("At 1 % selectivity offload") < html.index("<h2>Summary")
    assert "A synthetic selectivity sweep" in html
    for r in readers.STANDARD:   # the run's readers are defined, a reader it did not run is not
        assert r.definition and r.definition.replace("'", "&#39;") in html
    assert readers.AUTO.definition.replace("'", "&#39;") not in html
    assert "every reader returned the same rows and checksum at every point" in html


def test_correctness_names_disagreements():
    df = pd.DataFrame({"selectivity": [1, 1, 1, 100, 100, 100], "reader": READERS * 2,
                       "rows_out": [10, 10, 10, 1000, 1000, 999], "checksum": [7, 7, 7, 9, 9, 8],
                       "warmup": False})
    text = correctness(df)
    assert text.startswith("readers disagree") and "selectivity=100" in text and "vanilla: rows 999 checksum 8" in text
    assert "selectivity=1:" not in text
    assert correctness(df[df["selectivity"] == 1]) == \
        "every reader returned the same rows and checksum at every point"


def test_percentiles_only_with_enough_values_and_log_selectivity_axis(tmp_path):
    import matplotlib.pyplot as plt
    from sae.results.analysis.measured import BAND_MIN, stats
    from sae.results.analysis.summary import point_table
    from sae.results.drawing.plotting import selectivity_axis, whiskers
    run = _recorded(tmp_path)
    df = sae.load_results(run.root)
    t = point_table(df)
    assert t["p1"].isna().all() and t["p99"].isna().all() and (t["min"] <= t["p50"]).all() and set(t["n"]) == {6}
    s = stats(df[df["reader"] == "offload"], ["selectivity"]).sort_values("selectivity")
    few = whiskers(s)   # 6 values: the whiskers reach the min and the max
    assert few[0] == pytest.approx(s["median"] - s["min"]) and few[1] == pytest.approx(s["max"] - s["median"])
    many = s.assign(n=BAND_MIN)
    assert whiskers(many)[1] == pytest.approx(s["p99"] - s["median"])
    fig, ax = plt.subplots()
    selectivity_axis(ax, [1, 10, 50, 100])
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "10", "50", "100"]
    plt.close(fig)


def test_compute_side_figure_without_any_complete_window(tmp_path):
    """Prometheus down for the whole run: no bytes or CPU anywhere, the figure is still drawn
    (a log axis over no positive value is not)."""
    import numpy as np
    from sae.results.drawing.figures import plot_compute_side
    df = pd.DataFrame({"selectivity": [50, 50, 100, 100], "reader": ["offload"] * 4, "point": ["a", "a", "b", "b"],
                       "repetition": [0, 1, 0, 1], "warmup": [False] * 4, "drift": [False] * 4,
                       "compute_rx_bytes": [np.nan] * 4, "compute_cpu_s": [np.nan] * 4,
                       "total_s": [1.0, 1.1, 2.0, 2.1]})
    assert plot_compute_side(df, tmp_path).stat().st_size > 1000
