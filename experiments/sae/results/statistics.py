"""Confidence intervals for the report: how sure a ratio of two readers' medians is.

A ratio compares two groups of measured repetitions (e.g. a baseline's query times and
offload's at the same point). Its interval is a **percentile bootstrap** of the ratio of the
groups' medians (:func:`scipy.stats.bootstrap`, ``paired=False``): each group is resampled with
replacement on its own, independently of the other (the repetitions of two readers are not
pairs: repetition 3 of one reader has nothing to do with repetition 3 of another), the ratio of
the two resampled medians is computed 9999 times, and the 2.5th and 97.5th percentiles of those
ratios bound the 95 % interval. The random generator has a fixed seed, so the same results give
the same interval in every report.

With fewer than :data:`MIN_N` values in a group there is no interval: a bootstrap over 2 or 3
values only reshuffles them and would pretend a certainty the data do not have. The interval is
then left out and said to be missing (``n too small``).

:func:`verdict` reads an interval: it excludes 1 and the ratio is off by more than a margin
(better or worse: a difference the repetitions support and large enough to matter, conbench's
rule of a percent-change threshold, 5 % by default), or not (same).
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

MIN_N = 5
"""Fewest values per group for an interval."""
CONFIDENCE = 0.95
SEED = 32
"""The bootstrap's seed: the same values always give the same interval."""
RESAMPLES = 9999
SAME_WITHIN = 0.05
"""A ratio within this share of 1 reads ``same`` whatever its interval (conbench's default
threshold): two runs of the same code differ by a few percent the bootstrap can resolve."""


@dataclasses.dataclass(frozen=True)
class Interval:
    """A ratio of medians (``estimate``) with its bootstrap interval ``low``..``high`` (NaN when
    there is none) and the group sizes ``n`` (numerator, denominator)."""

    estimate: float
    low: float = math.nan
    high: float = math.nan
    n: tuple[int, int] = (0, 0)
    confidence: float = CONFIDENCE

    @property
    def known(self) -> bool:
        """Whether there is an interval (enough values in both groups)."""
        return not (math.isnan(self.low) or math.isnan(self.high))

    def inverse(self) -> "Interval":
        """The interval of 1 / ratio (the percentile bootstrap's bounds invert with it)."""
        inv = lambda v: 1 / v if v and not math.isnan(v) else math.nan  # noqa: E731
        return Interval(inv(self.estimate), inv(self.high), inv(self.low), self.n[::-1], self.confidence)

    def text(self, unit: str = "x") -> str:
        """``3.52x [3.10, 3.91]``; ``3.52x (n too small)`` without an interval; ``-`` if unknown."""
        if math.isnan(self.estimate):
            return "-"
        if not self.known:
            return f"{number(self.estimate)}{unit} (n too small)"
        return f"{number(self.estimate)}{unit} [{number(self.low)}, {number(self.high)}]"


def number(value: float) -> str:
    """A ratio printed with three significant digits or one decimal: 0.35, 2.61, 98.3."""
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _clean(values) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return np.sort(a[~np.isnan(a)])   # sorted: the interval does not depend on the values' order


def ratio_of_medians(numerator, denominator, *, confidence: float = CONFIDENCE, seed: int = SEED,
                     resamples: int = RESAMPLES, min_n: int = MIN_N) -> Interval:
    """median(``numerator``) / median(``denominator``) with its percentile-bootstrap interval,
    each group resampled independently (see the module docstring); NaN values are dropped.
    No interval (NaN bounds) when a group has fewer than ``min_n`` values; NaN throughout when
    a group is empty or the denominator's median is not positive."""
    num, den = _clean(numerator), _clean(denominator)
    n = (len(num), len(den))
    if not len(num) or not len(den) or np.median(den) <= 0:
        return Interval(math.nan, n=n, confidence=confidence)
    estimate = float(np.median(num) / np.median(den))
    if min(n) < min_n:
        return Interval(estimate, n=n, confidence=confidence)
    if np.ptp(num) == 0 and np.ptp(den) == 0:   # nothing varies: every resample gives the estimate
        return Interval(estimate, estimate, estimate, n, confidence)

    def statistic(a, b, axis=-1):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.median(a, axis=axis) / np.median(b, axis=axis)

    from scipy import stats
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # degenerate resamples (a median of 0) only widen the bounds
        res = stats.bootstrap((num, den), statistic, paired=False, vectorized=True, method="percentile",
                              confidence_level=confidence, n_resamples=resamples,
                              rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return Interval(estimate, float(ci.low), float(ci.high), n, confidence)


def verdict(interval: Interval, within: float = SAME_WITHIN) -> str:
    """How a ratio ``reference / subject`` reads (> 1: the subject spends less): ``better`` when
    its interval lies wholly above 1 and the ratio above ``1 + within``, ``worse`` when wholly
    below 1 and the ratio below ``1 / (1 + within)``, else ``same``; ``unknown`` without an
    interval."""
    if not interval.known:
        return "unknown"
    if interval.low > 1 and interval.estimate > 1 + within:
        return "better"
    if interval.high < 1 and interval.estimate < 1 / (1 + within):
        return "worse"
    return "same"
