"""Pure: ``sae compare``, ``sae calibrate`` and ``sae history`` over synthetic run directories laid
out as real ones (``ledger.json``, ``versions.lock``, ``results.parquet``: one row per point ×
repetition). Recorded runs: test_recorded.py."""
import json

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

import sae
from metareserve.errors import UsageError
from monitor_deploy import write_frame
from sae.cli import main
from sae.results.analysis import calibration
from sae.results.analysis.compare import Rule, compare
from sae.results.analysis.history import calibrate, history

POINTS = [{"reader": "offload", "selectivity": 1}, {"reader": "offload", "selectivity": 100},
          {"reader": "vanilla", "selectivity": 100}]
BASE = {"total_s": 1.0, "compute_rx_bytes": 1e8, "compute_cpu_s": 2.0, "storage_cpu_s": 0.5}


def write_run(out, stamp, *, points=POINTS, slower=1.0, reps=8, seed=0, stored="none", commit="a" * 40,
              experiment="sel", results=True, dirty=False, pyarrow="15.0.0", turns=False):
    """A run directory ``out/<experiment>/<stamp>-tiny`` whose every point took ``slower`` times the
    base values (a point's ``slower`` on top; spread ±2 %), 1 warm-up (10x slower) and ``reps - 1``
    measured repetitions, run point after point or (``turns``) repetition after repetition."""
    root = out / experiment / f"{stamp}-tiny"
    root.mkdir(parents=True)
    (root / "ledger.json").write_text(json.dumps({"version": 1, "entries": {}}))
    (root / "versions.lock").write_text(yaml.safe_dump({"version": 2, "controller": {"pyarrow": pyarrow},
                                                        "sae": {"commit": commit, "dirty": dirty}, "nodes": {}}))
    rng = np.random.default_rng(seed)
    started = pd.Timestamp(stamp).timestamp()
    rows = []
    for order, p in enumerate(points):
        for rep in range(reps):
            factor = slower * p.get("slower", 1.0) * (10 if rep == 0 else rng.uniform(0.98, 1.02))
            at = started + 10 * (rep * len(points) + order if turns else len(rows))
            rows.append({"experiment": experiment, "profile": "tiny", "point": f"p{order}", "order": order,
                         "repetition": rep, "warmup": rep == 0, "drift": False, "start": at, "end": at + 1,
                         **{k: v * factor for k, v in BASE.items()}, "stored_compression": stored,
                         "object_size": 16 << 20, "columns": [], **{k: v for k, v in p.items() if k != "slower"}})
    if results:
        df = pd.DataFrame(rows)
        write_frame(df.assign(seq=df["start"].rank(method="first").astype(int) - 1), root / "results.parquet")
    return root


@pytest.fixture(autouse=True)
def sae_home(tmp_path, monkeypatch):
    """Calibration records under the test's own $SAE_HOME."""
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "sae-home"))
    return tmp_path / "sae-home"


def calibrated(tmp_path, n=3, day=1, **kwargs):
    """A/A calibration runs (``n`` from December ``day`` on, one code, before the compared ones)
    recorded in $SAE_HOME."""
    record, _ = calibrate([write_run(tmp_path, f"202312{day + i:02d}-120000", seed=10 + day + i, **kwargs)
                           for i in range(n)])
    return record


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_identical_runs_are_the_same_everywhere(tmp_path):
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", seed=0)
    c = compare([a, b])
    assert [p.label for p in c.points] == ["reader=offload, selectivity=1", "reader=offload, selectivity=100",
                                           "reader=vanilla, selectivity=100"]
    ratios = [m for m in c.measures if m.ratio is not None]
    assert len(ratios) == 3 * 4 and {m.verdict for m in ratios} == {"same"}
    assert all(m.n == 7 and m.ratio.estimate == pytest.approx(1) for m in ratios)   # warm-ups left out
    assert not c.unmatched and not c.failures and "what differs: nothing recorded" in c.text()


def test_a_small_difference_the_interval_resolves_reads_same_within_the_margin(tmp_path):
    """3.5 % slower with a ±2 % spread over 20 repetitions, calibrated on 6 runs: the intervals
    exclude 1, but the ratio is within the 5 % margin (conbench's threshold), so it reads same;
    with no margin (--same-within 0) worse."""
    calibrated(tmp_path, n=6, reps=21)
    a = write_run(tmp_path, "20240101-120000", reps=21)
    b = write_run(tmp_path, "20240102-120000", slower=1.035, seed=1, reps=21)
    times = [m for m in compare([a, b]).measures if m.metric == "total_s" and m.ratio is not None]
    assert all(m.ratio.low > 1 and m.across.low > 1 for m in times) and {m.verdict for m in times} == {"same"}
    strict = [m for m in compare([a, b], same_within=0).measures if m.metric == "total_s" and m.ratio is not None]
    assert {m.verdict for m in strict} == {"worse"}
    r = invoke("compare", a, b, "--same-within", "0")
    assert r.exit_code == 0 and "worse" in r.output
    r = invoke("compare", a, b, "--same-within", "-1")
    assert r.exit_code == 2 and "--same-within" in r.output
    with pytest.raises(UsageError, match="same within 2"):
        compare([a, b], same_within=2)


def test_a_2x_slowdown_is_worse_with_its_interval_and_fails_the_rule(tmp_path):
    calibrated(tmp_path)
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", slower=2.0, seed=1)
    c = compare([a, b], rules=["time>5%", "bytes<50%"])
    times = [m for m in c.measures if m.metric == "total_s" and m.ratio is not None]
    for m in times:
        assert m.ratio.low > 1.9 and m.ratio.high < 2.1 and m.ratio.low <= m.ratio.estimate <= m.ratio.high
        assert m.verdict == "worse"
    assert [f.rule.text for f in c.failures] == ["time>5%"] * 3
    text = c.text()
    assert "passed bytes<50%" in text
    assert "failed time>5%: B at reader=offload, selectivity=1: total_s 1.9" in text
    assert "B/A" in text and "worse" in text and "(7)" in text
    improved = compare([b, a], rules=["time>5%"])
    assert not improved.failures and {m.verdict for m in improved.measures if m.metric == "total_s"} == \
        {"baseline", "better"}


def test_a_run_wide_difference_is_shown_and_not_matched_on(tmp_path):
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", stored="zstd", commit="b" * 40)
    c = compare([a, b])
    assert len(c.points) == 3 and not c.unmatched
    assert "stored_compression: A none, B zstd" in c.differences
    assert f"B vs A: sae commit {'a' * 12} -> {'b' * 12}" in c.differences
    assert all("stored_compression" not in p.label for p in c.points)


def test_points_in_one_run_only_are_listed_unmatched(tmp_path):
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", points=POINTS[:2] + [{"reader": "vanilla", "selectivity": 1}])
    c = compare([a, b])
    assert [u.text() for u in c.unmatched] == ["reader=vanilla, selectivity=100 (only in A)",
                                               "reader=vanilla, selectivity=1 (only in B)"]
    assert len(c.points) == 2 and "unmatched (not measured by every side)" in c.text()


def test_too_few_repetitions_say_so(tmp_path):
    a = write_run(tmp_path, "20240101-120000", reps=3)
    b = write_run(tmp_path, "20240102-120000", reps=3, slower=2.0)
    c = compare([a, b], rules=["time>5%"])
    assert {m.verdict for m in c.measures if m.ratio is not None} == {"unknown"}
    assert "(n too small)" in c.text() and not c.failures


def test_frame_has_a_row_per_point_metric_and_run(tmp_path):
    runs = [write_run(tmp_path, f"2024010{i}-120000", slower=1 + i / 10, seed=i) for i in range(1, 4)]
    df = sae.compare(runs, metrics=("time",)).frame()
    assert len(df) == 3 * 1 * 3 and set(df["run"]) == {"A", "B", "C"}
    assert set(df.loc[df["run"] == "A", "verdict"]) == {"baseline"} and df.loc[df["run"] == "A", "ratio"].isna().all()
    assert {"reader", "selectivity", "point", "median", "n", "low", "high", "across_low", "across_high", "df", "p",
            "p_adjusted", "calibrated", "runs"} <= set(df.columns)


@pytest.mark.parametrize("rule", ["time>>5%", "time>5", "speed", "time<100%", "time > -3%"])
def test_bad_rules_are_refused_in_one_line(tmp_path, rule):
    with pytest.raises(UsageError, match="METRIC>PERCENT%"):
        Rule.parse(rule)
    a, b = write_run(tmp_path, "20240101-120000"), write_run(tmp_path, "20240102-120000")
    r = invoke("compare", a, b, "--fail-on", rule)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and repr(rule) in r.output


def test_rule_on_a_column_no_run_has(tmp_path):
    a, b = write_run(tmp_path, "20240101-120000"), write_run(tmp_path, "20240102-120000")
    r = invoke("compare", a, b, "--fail-on", "colour>5%")
    assert r.exit_code == 2 and "rule 'colour>5%': no run has a column 'colour'" in r.output


def test_cli_exit_codes_and_html(tmp_path):
    calibrated(tmp_path)
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", slower=2.0, seed=1)
    same = write_run(tmp_path, "20240103-120000", seed=2)
    r = invoke("compare", a, same, "--fail-on", "time>5%")
    assert r.exit_code == 0, r.output
    assert "passed time>5%" in r.output
    r = invoke("compare", a, b, "--fail-on", "time>5%", "--html", tmp_path / "page")
    assert r.exit_code == 1
    assert sum(line.startswith("failed time>5%") for line in r.output.splitlines()) == 3
    page = (tmp_path / "page" / "index.html").read_text()
    for metric in ("total_s", "compute_rx_bytes", "compute_cpu_s", "storage_cpu_s"):
        png = tmp_path / "page" / f"compare-{metric}.png"
        assert png.read_bytes()[:4] == b"\x89PNG" and f'alt="compare-{metric}"' in page
    assert "failed time&gt;5%" in page


def test_cli_refuses_missing_runs_in_one_line(tmp_path):
    a = write_run(tmp_path, "20240101-120000")
    pending = write_run(tmp_path, "20240102-120000", results=False)
    for args, message in [((a,), "two or more run directories"),
                          ((a, tmp_path / "nowhere"), "not an sae run directory"),
                          ((a, pending), "no results.parquet yet; run 'sae report")]:
        r = invoke("compare", *args)
        assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_uncalibrated_runs_read_hedged_and_fail_rules_only_when_allowed(tmp_path):
    """Without a calibration and with one run a side nothing measured the spread between runs: a
    2x slowdown reads worse? (the repetitions support it, nothing says it exceeds the run-to-run
    spread) and fails a rule only with --uncalibrated-ok."""
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", slower=2.0, seed=1)
    c = compare([a, b], rules=["time>5%"])
    assert {m.verdict for m in c.judged} == {"worse?"} and not any(m.calibrated for m in c.judged)
    assert not c.failures and all(m.across.low != m.across.low for m in c.judged)   # no interval across runs
    text = c.text()
    assert "uncalibrated: no calibration of sel on this machine and stack" in text
    assert "passed time>5% (3 of 3 ratios judged; 3 uncalibrated, which rules judge only with --uncalibrated-ok)" \
        in text
    allowed = compare([a, b], rules=["time>5%"], uncalibrated_ok=True)
    assert len(allowed.failures) == 3 and allowed.failures[0].text().endswith("of A's (uncalibrated)")
    assert invoke("compare", a, b, "--fail-on", "time>5%").exit_code == 0
    assert invoke("compare", a, b, "--fail-on", "time>5%", "--uncalibrated-ok").exit_code == 1


def test_a_calibration_is_of_one_machine_and_stack(tmp_path):
    """A record of another stack is not found for these runs, and refused when named; a matching
    one is used unless --calibration none."""
    other = calibrated(tmp_path, pyarrow="16.0.0")
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", slower=2.0, seed=1)
    assert not any(m.calibrated for m in compare([a, b]).judged)
    r = invoke("compare", a, b, "--calibration", other.path)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "recorded for another machine, stack or experiment" in r.output
    assert "stack.controller.pyarrow 16.0.0 -> 15.0.0" in r.output
    record = calibrated(tmp_path, day=10)
    c = compare([a, b])
    assert c.calibration.path == record.path and all(m.calibrated for m in c.judged)
    assert f"calibration: 3 runs of sel (1 commit) on this machine and stack, recorded in {record.path}" in c.text()
    explicit = compare([a, b], calibration=str(record.path))
    assert [m.verdict for m in explicit.judged] == [m.verdict for m in c.judged]
    r = invoke("compare", a, b, "--calibration", "none")
    assert r.exit_code == 0 and "uncalibrated: --calibration none" in r.output and "worse?" in r.output
    r = invoke("compare", a, b, "--calibration", tmp_path / "nowhere.yaml")
    assert r.exit_code == 2 and "no calibration record there" in r.output


def test_sides_of_three_runs_are_judged_across_runs(tmp_path):
    """3 runs a side: Student's t on their medians' logs, the spread from the runs themselves; 30 %
    slower reads worse, the same code same; a side whose runs ran other code is warned of."""
    olds = [write_run(tmp_path, f"2024010{i + 1}-120000", seed=i) for i in range(3)]
    news = [write_run(tmp_path, f"2024010{i + 4}-120000", seed=i + 3, slower=1.3) for i in range(3)]
    same = [write_run(tmp_path, f"2024011{i + 1}-120000", seed=i + 6) for i in range(3)]
    c = compare([olds, news])
    assert {m.verdict for m in c.judged} == {"worse"} and all(m.runs == 3 and m.spread.df == 4 for m in c.judged)
    assert all(m.ratio is None and m.across.low > 1.2 for m in c.judged)
    text = c.text()
    assert "baseline A: 3 runs: " in text and "the compared runs' own spread between runs" in text
    assert {m.verdict for m in compare([olds, same]).judged} == {"same"}
    df = c.frame()
    assert set(df["runs"]) == {3} and df["low"].isna().all() and df.loc[df["run"] == "B", "across_low"].notna().all()
    r = invoke("compare", ",".join(map(str, olds)), ",".join(map(str, news)))
    assert r.exit_code == 0 and "B: 3 runs: " in r.output and "worse" in r.output
    mixed = write_run(tmp_path, "20240120-120000", seed=9, commit="c" * 40)
    c = compare([olds, same[:2] + [mixed]])
    assert f"B's runs differ: {mixed.name}: sae commit {'a' * 12} -> {'c' * 12}" in c.warnings


def test_an_axis_inside_one_run(tmp_path):
    """--axis object_size: one run's points compared along it. Where its values took turns the
    verdict is plain; where they ran one after the other it reads worse? at most."""
    two = [{**p, "object_size": size, "slower": slower} for p in POINTS[:2]
           for size, slower in ((16 << 20, 1.0), (32 << 20, 1.5))]
    turns = write_run(tmp_path, "20240101-120000", points=two, turns=True)
    c = compare([turns], axis="object_size")
    assert [s.name for s in c.sides] == ["object_size=16MiB", "object_size=32MiB"]
    assert {m.verdict for m in c.judged if m.metric == "total_s"} == {"worse"} and len(c.points) == 2
    text = c.text()
    assert "judging: the axis object_size inside one run" in text and "took turns at 2 of 2 points" in text
    assert "what differs: object_size: A 16MiB, B 32MiB" in text
    apart = write_run(tmp_path, "20240102-120000", points=two)
    c = compare([apart], axis="object_size")
    assert {m.verdict for m in c.judged} == {"worse?"} and "took turns at 0 of 2 points" in c.text()
    assert "a verdict there reads worse? or better? at most" in c.text()
    r = invoke("compare", turns, "--axis", "object_size", "--fail-on", "time>5%")
    assert r.exit_code == 1 and "failed time>5%: B at " in r.output
    for args, message in [((turns, "--axis", "colour"), "--axis colour: not a parameter of"),
                          ((turns, "--axis", "stored_compression"), "measured one value of it (none)"),
                          ((turns, apart, "--axis", "object_size"), "compares the points of one run"),
                          ((turns, "--axis", "object_size", "--calibration", "c.yaml"), "leave --calibration out")]:
        r = invoke("compare", *args)
        assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_multiplicity_is_stated_and_holm_is_stricter(tmp_path):
    record = calibrated(tmp_path)
    a = write_run(tmp_path, "20240101-120000")
    b = write_run(tmp_path, "20240102-120000", slower=1.2, seed=1)
    fdr, holm = compare([a, b], calibration=record), compare([a, b], calibration=record, multiplicity="holm")
    assert "multiplicity: Benjamini-Hochberg false discovery rate at 5% over the 12 judged point-metrics" in fdr.text()
    assert "multiplicity: Holm's step-down at 5%" in holm.text()
    assert all(h.p_adjusted >= f.p_adjusted for h, f in zip(holm.judged, fdr.judged))
    assert all(m.p <= m.p_adjusted for m in fdr.judged)
    with pytest.raises(UsageError, match="multiplicity 'bonferroni': one of fdr, holm"):
        compare([a, b], multiplicity="bonferroni")
    r = invoke("compare", a, b, "--multiplicity", "holm")
    assert r.exit_code == 0 and "Holm's step-down" in r.output


def test_calibrate_records_runs_and_adds_to_the_record(tmp_path, sae_home):
    runs = [write_run(tmp_path, f"2024010{i + 1}-120000", seed=i) for i in range(3)]
    r = invoke("calibrate", *runs[:2])
    assert r.exit_code == 2 and "2 runs of 1 commit give 1 degrees of freedom of spread; a calibration needs 2" \
        in r.output and not (sae_home / "calibrations").exists()
    dirty = write_run(tmp_path, "20240105-120000", seed=5, dirty=True)
    r = invoke("calibrate", *runs, dirty)
    assert r.exit_code == 2 and f"{dirty}: ran from a checkout with uncommitted changes" in r.output
    r = invoke("calibrate", *runs)
    assert r.exit_code == 0, r.output
    assert "calibration: 3 runs of sel (1 commit) on this machine and stack" in r.output
    assert "reader=offload, selectivity=1    total_s" in r.output
    (path,) = (sae_home / "calibrations").glob("sel-*.yaml")
    assert len(calibration.load(path).runs) == 3
    write_run(tmp_path, "20240106-120000", seed=6, commit="b" * 40)
    write_run(tmp_path, "20240107-120000", seed=7, commit="b" * 40)
    write_run(tmp_path, "20231230-120000", seed=8, pyarrow="16.0.0")   # older: the newest run says the stack
    r = invoke("calibrate", tmp_path / "sel")   # an experiment's directory: every run in it
    assert r.exit_code == 0, r.output
    assert "calibration: 5 runs of sel (2 commits)" in r.output
    assert "skipped " in r.output and "uncommitted changes" in r.output and "pyarrow 15.0.0 -> 16.0.0" in r.output
    record = calibration.load(path)
    assert len(record.runs) == 5 and record.df() == 2 + 1
    out = tmp_path / "mine.yaml"
    assert invoke("calibrate", *runs, "--out", out).exit_code == 0 and len(calibration.load(out).runs) == 3


def test_a_calibration_record_is_data_read_back_whole(tmp_path):
    record = calibrated(tmp_path)
    again = calibration.load(record.path)
    assert again.to_dict() == record.to_dict() and again.identity == record.identity
    key = next(iter(record.points))
    assert again.spread(key, "total_s") == record.spread(key, "total_s") and again.spread(key, "total_s").df == 2
    record.path.write_text("version: 1\nexperiment: sel\n")
    with pytest.raises(UsageError, match=f"{record.path}: not a calibration record \\(no 'machine'\\)"):
        calibration.load(record.path)


def test_the_reports_caveat_says_what_its_intervals_hold(tmp_path):
    a = write_run(tmp_path, "20240101-120000")
    assert calibration.caveat(a).startswith("within-run only: the intervals hold the spread of this run's repetitions")
    record = calibrated(tmp_path)
    text = calibration.caveat(a)
    assert text.startswith(f"calibrated on 3 runs ({record.path}): from one run to the next a point's median total_s "
                           f"moves by up to ±")


def steady_history(tmp_path, slowdowns):
    """One run a day, each ``slowdown`` times the base values (the same spread within each run)."""
    for i, slower in enumerate(slowdowns):
        write_run(tmp_path, f"202401{i + 1:02d}-120000", slower=slower)


def test_history_flags_an_outlier_run_and_not_a_steady_series(tmp_path):
    steady_history(tmp_path, [1.0, 1.02, 0.99, 1.01, 1.0, 1.5])
    write_run(tmp_path, "20240120-120000", results=False)
    h = history(tmp_path, "sel", lookback=5, threshold=5)
    assert [r.label for r in h.runs] == [f"202401{i:02d}-120000-tiny" for i in range(1, 7)]
    assert len(h.skipped) == 1 and "20240120-120000-tiny: no results.parquet yet" in h.skipped[0]
    flagged = {(e.run.label, e.metric) for e in h.flagged}
    assert {run for run, _ in flagged} == {"20240106-120000-tiny"}
    assert {metric for _, metric in flagged} == set(BASE)
    first = [e for e in h.entries if e.run is h.runs[0]]
    assert all(e.note == "fewer than 5 earlier runs" for e in first)
    text = h.text()
    assert "flagged: 20240106-120000-tiny at reader=offload, selectivity=1: total_s 1.51 (7) z 43.5, " in text
    assert "skipped" in text and " !" in text
    df = h.frame()
    assert len(df) == 6 * 3 * 4 and df["flagged"].sum() == 3 * 4


def test_history_of_identical_runs_says_there_is_no_deviation(tmp_path):
    for day in range(1, 7):   # the very same values every run
        write_run(tmp_path, f"2024010{day}-120000")
    h = history(tmp_path / "sel", "sel")
    assert not h.flagged
    assert {e.note for e in h.entries if e.run is h.runs[5]} == {"earlier medians all equal"}


def test_history_cli_and_html(tmp_path):
    steady_history(tmp_path, [1.0, 1.02, 0.99, 1.01, 1.0, 0.98])
    r = invoke("history", "sel", "--out", tmp_path, "--lookback", 5, "--html", tmp_path / "page")
    assert r.exit_code == 0, r.output
    assert "history of sel" in r.output and "flagged:" not in r.output
    page = (tmp_path / "page" / "index.html").read_text()
    for metric in BASE:
        assert (tmp_path / "page" / f"history-{metric}.png").read_bytes()[:4] == b"\x89PNG"
        assert f'alt="history-{metric}"' in page


@pytest.mark.parametrize("args, message", [
    (["--lookback", 4], "lookback 4: give a whole number of earlier runs, 5 or more"),
    (["--threshold", 0], "threshold 0.0: give a finite |z| above 0"),
    (["--threshold", "inf"], "threshold inf"),
    (["--threshold", "nan"], "threshold nan"),
    (["--out", "nowhere"], "no runs of experiment 'sel'"),
])
def test_history_refuses_bad_flags_in_one_line(tmp_path, args, message):
    steady_history(tmp_path, [1.0])
    args = [a if a != "nowhere" else tmp_path / "nowhere" for a in args]
    r = invoke("history", "sel", *(["--out", tmp_path] if "--out" not in args else []), *args)
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_run_from_before_the_pyarrow_axis_matches_by_what_its_versions_lock_recorded(tmp_path):
    """A run written before ``spark_pyarrow`` was a column gets it from its versions.lock (the
    Spark nodes' pyarrow; the older per-node layout), so its points match a newer run's; a lock
    that names two values says nothing, and the column stays missing."""
    old = write_run(tmp_path, "20240101-120000")
    lock = yaml.safe_load((old / "versions.lock").read_text())
    lock["nodes"] = {"node2": {"spark": "4.3.0", "pyarrow": "26.0.1"}, "node3": {"spark": "4.3.0", "pyarrow": "26.0.1"}}
    (old / "versions.lock").write_text(yaml.safe_dump(lock))
    new = write_run(tmp_path, "20240102-120000",
                    points=[{**p, "spark_version": "4.3.0", "spark_pyarrow": "26.0.1"} for p in POINTS])
    c = compare([old, new])
    assert not c.unmatched and len([m for m in c.measures if m.ratio is not None]) == 3 * 4
    assert set(sae.load_results(old)["spark_pyarrow"]) == {"26.0.1"}
    lock["nodes"]["node3"]["pyarrow"] = "25.0.1"
    (old / "versions.lock").write_text(yaml.safe_dump(lock))
    assert "spark_pyarrow" not in sae.load_results(old) and set(sae.load_results(old)["spark_version"]) == {"4.3.0"}
