"""Pure: verdicts on recorded runs (``recorded/<pair>/``: A, B and ``pair.yaml``; recorded/README.md).

The pairs are real runs of experiments/selectivity.py cut to its 100 % and 1 % points, recorded
back to back on one quiet 2-core machine right after a new install. So:

* an A/A pair (the same code and configuration) reads ``same`` at 95 % of its judged
  point-metrics or more, calibrated on the other A/A pairs' runs (never on its own);
* an A/B pair (B beside a CPU tenant of four times the storage host's core) shows the tenant's
  slowdown within the pair, uncalibrated (``worse?``, the interval above 1, at 1 % for offload and
  no-offload, whose work the storage host does); calibrated on every A/A pair's runs, the
  slowdown exceeds the machine's run-to-run spread and reads ``worse``, the interval across runs
  above 1, and a ``time>5%`` rule fails on it.
"""
from pathlib import Path

import pytest
import yaml

import sae
from sae.results.analysis.compare import compare
from sae.results.analysis.history import calibrate

RECORDED = Path(__file__).parent / "recorded"
PAIRS = {p.name: yaml.safe_load((p / "pair.yaml").read_text()) for p in sorted(RECORDED.iterdir())
         if (p / "pair.yaml").is_file()}
AA = [name for name, about in PAIRS.items() if about["kind"] == "aa"]
AB = [name for name, about in PAIRS.items() if about["kind"] == "ab"]
FILES = {"results.parquet", "ledger.json", "versions.lock", "lease.yaml"}
"""What a trimmed run directory holds (recorded/trim.py)."""
SAME = 0.95
SLOWED = [("offload", "1"), ("no-offload", "1")]
"""The points a CPU tenant on the storage host slows (reader, selectivity)."""


def runs(pairs) -> list[Path]:
    return [RECORDED / p / side for p in pairs for side in ("A", "B")]


def calibration(tmp_path, pairs):
    """An A/A calibration of the runs of ``pairs``, recorded under ``tmp_path``."""
    record, skipped = calibrate(runs(pairs), out=tmp_path / "calibration.yaml")
    assert not skipped
    return record


def test_the_recorded_pairs_are_trimmed_run_directories():
    assert len(AA) >= 3 and AB, "recorded/ needs 3 A/A pairs (each calibrated on the others) and an A/B pair"
    for name, about in PAIRS.items():
        assert about["kind"] in ("aa", "ab") and isinstance(about["synthetic"], bool) and about["about"], name
        for run in runs([name]):
            assert {f.name for f in run.iterdir()} <= FILES and (run / "results.parquet").is_file(), run
            assert "checkout" not in (yaml.safe_load((run / "versions.lock").read_text())["sae"]), run


@pytest.mark.parametrize("pair", AA)
def test_an_aa_pair_reads_same(tmp_path, pair):
    c = compare(runs([pair]), calibration=calibration(tmp_path, [p for p in AA if p != pair]))
    judged = c.judged
    assert len(judged) >= 4 and all(m.calibrated for m in judged)
    same = [m for m in judged if m.verdict == "same"]
    assert len(same) >= SAME * len(judged), "\n" + c.text()
    assert "calibration: " in c.text() and "multiplicity: Benjamini-Hochberg" in c.text()


@pytest.mark.parametrize("pair", AA)
def test_an_aa_pair_uncalibrated_claims_nothing(pair):
    """Without a calibration no verdict reads worse or better outright, and no rule fails."""
    c = compare(runs([pair]), calibration=None, rules=["time>5%", "storage_cpu>5%"])
    assert {m.verdict for m in c.judged} <= {"same", "worse?", "better?"} and not c.failures
    assert "uncalibrated: --calibration none" in c.text()


def _at(c, points):
    """``{(reader, selectivity): measure}`` of the query time at ``points``, B against A."""
    time = {(dict(m.point.params)["reader"], dict(m.point.params)["selectivity"]): m
            for m in c.measures if m.metric == "total_s" and not m.baseline}
    return {p: time[p] for p in points}


@pytest.mark.parametrize("pair", AB)
def test_an_ab_pair_shows_the_slowdown_within_the_pair(pair):
    c = compare(runs([pair]), calibration=None, rules=["time>5%"])
    for point, m in _at(c, SLOWED).items():
        assert m.verdict == "worse?" and m.ratio.low > 1, f"{point}\n{c.text()}"
    assert "uncalibrated: --calibration none" in c.text() and not c.failures


@pytest.mark.parametrize("pair", AB)
def test_an_ab_pair_calibrated_on_the_aa_pairs_reads_worse(tmp_path, pair):
    c = compare(runs([pair]), calibration=calibration(tmp_path, AA), rules=["time>5%"])
    for point, m in _at(c, SLOWED).items():
        assert m.calibrated and m.verdict == "worse" and m.across.low > 1, f"{point}\n{c.text()}"
    assert "calibration: " in c.text() and c.failures


def test_trim_keeps_what_compare_reads(tmp_path):
    """A trimmed copy of a recorded run loads to the same results (less the detail columns) and
    compares as it."""
    from recorded.trim import DETAIL, trim
    source = RECORDED / AA[0] / "A"
    dest = trim(source, tmp_path / "run")
    assert {f.name for f in dest.iterdir()} == {f.name for f in source.iterdir()}
    before, after = sae.load_results(source), sae.load_results(dest)
    assert list(after.columns) == [c for c in before.columns if not c.startswith(DETAIL)]
    assert after.equals(before[after.columns])
    assert {m.verdict for m in compare([source, dest], calibration=None).judged} == {"same"}
