"""Pure: the bootstrap interval of a ratio of medians and its verdict, on known data."""
import math

import numpy as np
import pytest

from sae.results.statistics import Interval, ratio_of_medians, verdict


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
