"""Pure: the bootstrap interval of a ratio of medians and its verdict, the test across runs and the
multiplicity corrections, on known data."""
import math

import numpy as np
import pytest
from scipy import stats

from sae.results.analysis.statistics import (Interval, Spread, across_runs, adjust, bootstrap_p, log_se,
                                             ratio_of_medians, verdict)


def test_ratio_of_medians_interval_contains_the_truth_and_is_reproducible():
    rng = np.random.default_rng(0)
    base, off = rng.normal(10.0, 0.5, 20), rng.normal(2.0, 0.1, 20)
    iv = ratio_of_medians(base, off)
    assert iv.estimate == pytest.approx(np.median(base) / np.median(off))
    assert iv.low < 5.0 < iv.high and iv.high - iv.low < 1.0 and iv.n == (20, 20)
    assert ratio_of_medians(base, off) == iv   # fixed seed: the same report every time
    assert verdict(iv) == "better" and verdict(ratio_of_medians(off, base)) == "worse"


def test_groups_are_resampled_independently():
    # unpaired: sizes may differ, and the order of the values does not matter
    a, b = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02], [2.0, 2.2, 1.8, 2.1, 1.9]
    iv = ratio_of_medians(b, a)
    assert iv.n == (5, 6) and iv == ratio_of_medians(b, a[::-1])
    assert iv.low <= iv.estimate <= iv.high


def test_overlapping_groups_read_same():
    a = np.random.default_rng(1).normal(5, 1, 10)
    iv = ratio_of_medians(a, a[::-1] * 1.01)
    assert iv.low < 1 < iv.high and verdict(iv) == "same"


def test_too_few_values_give_no_interval():
    iv = ratio_of_medians([4.0, 4.2], [2.0, 2.1, 1.9, 2.0, 2.0])
    assert iv.estimate == pytest.approx(4.1 / 2.0) and not iv.known
    assert iv.text() == "2.05x (n too small)" and verdict(iv) == "unknown"
    assert math.isnan(ratio_of_medians([], [1.0]).estimate) and ratio_of_medians([1.0], []).text() == "-"
    assert math.isnan(ratio_of_medians([1.0] * 5, [0.0] * 5).estimate)


def test_constant_values_and_nan():
    iv = ratio_of_medians([100.0] * 6 + [math.nan], [2.0] * 5)
    assert (iv.estimate, iv.low, iv.high, iv.n) == (50.0, 50.0, 50.0, (6, 5))
    assert iv.text() == "50.0x [50.0, 50.0]"


def test_text_and_inverse():
    iv = Interval(2.5, 2.0, 3.125, (5, 6))
    assert iv.text() == "2.50x [2.00, 3.12]"
    inv = iv.inverse()
    assert (inv.estimate, inv.low, inv.high, inv.n) == (0.4, 0.32, 0.5, (6, 5))
    assert Interval(98.31, 97.0, 99.44).text() == "98.3x [97.0, 99.4]"


def test_the_bootstrap_p_value_agrees_with_its_interval():
    rng = np.random.default_rng(2)
    base = rng.normal(10.0, 0.5, 8)
    for shift, excludes in ((1.0, False), (1.3, True), (0.7, True)):
        iv = ratio_of_medians(base * shift * rng.normal(1, 0.01, 8), base)
        assert (iv.p < 0.05) == excludes == (not iv.low <= 1 <= iv.high)
        assert iv.inverse().p == iv.p
    assert math.isnan(ratio_of_medians([1.0, 2.0], [1.0] * 5).p)
    assert ratio_of_medians([2.0] * 5, [1.0] * 5).p == bootstrap_p(np.full(9999, 2.0)) == 2 / 10000


def test_a_spread_pools_groups_of_runs_of_one_code():
    one, two = np.log([1.0, 1.1, 0.9]), np.log([2.0, 2.2])
    s = Spread.of([one, two, np.log([5.0])])   # a lone run adds nothing
    assert s.df == 3 and s.ss == pytest.approx(((one - one.mean()) ** 2).sum() + ((two - two.mean()) ** 2).sum())
    assert (s + Spread(1.0, 2)) == Spread(s.ss + 1.0, 5)
    assert math.isnan(Spread.of([one[:2]]).band()) and math.isnan(Spread().sd)
    assert s.band() == pytest.approx(math.expm1(stats.t.ppf(0.975, 3) * s.sd))


def test_across_runs_is_students_t_on_the_logs_of_run_medians():
    new, old = [2.0, 2.1, 1.9], [1.0, 1.05, 0.95]
    iv, pooled = across_runs(new, old)
    ref = stats.ttest_ind(np.log(new), np.log(old))
    assert iv.estimate == pytest.approx(2.0) and iv.p == pytest.approx(ref.pvalue) and pooled.df == 4
    assert iv.low < 2.0 < iv.high and iv.n == (3, 3)
    one, none = across_runs([2.0], [1.0])
    assert one.estimate == 2.0 and not one.known and math.isnan(one.p) and none.df == 0
    calibrated, pooled = across_runs([2.0], [1.0], Spread(0.02, 4))   # one run a side, a calibration's spread
    se = math.sqrt(0.02 / 4 * 2)
    assert pooled == Spread(0.02, 4) and calibrated.p == pytest.approx(2 * stats.t.sf(math.log(2) / se, 4))
    floored, _ = across_runs([2.0], [1.0], Spread(0.02, 4), floor=1.0)   # the runs' own sampling error, larger
    assert floored.p == pytest.approx(2 * stats.t.sf(math.log(2) / 1.0, 4)) and floored.p > calibrated.p
    assert log_se(Interval(1.0, 0.5, 2.0)) == pytest.approx(math.log(4) / (2 * stats.norm.ppf(0.975)))
    assert log_se(Interval(1.0)) == 0.0
    flat, _ = across_runs([2.0, 2.0], [1.0, 1.0, 1.0])
    assert (flat.low, flat.high, flat.p) == (2.0, 2.0, 0.0)
    assert math.isnan(across_runs([0.0], [1.0])[0].estimate)


def test_adjust_for_multiplicity():
    ps = [0.01, 0.04, 0.03, 0.005]
    assert adjust(ps, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(ps, "fdr") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust([], "fdr") == [] and adjust([0.9, 0.8], "holm") == pytest.approx([1.0, 1.0])
