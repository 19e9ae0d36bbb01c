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

An interval over one run's repetitions holds nothing of what moves between runs (the JIT's state,
the page cache, the machine's speed that hour). Judging two runs (:mod:`sae.results.analysis.compare`),
the unit is therefore a run's median: :func:`across_runs` tests the log of the ratio of two
groups of run medians with Student's t, its variance pooled (:class:`Spread`) from each group's own
runs and from other runs of one code on the same machine (an A/A calibration,
:mod:`sae.results.analysis.calibration`). The percentile bootstrap's own two-sided p-value
(:attr:`Interval.p`: twice the share of resampled ratios on the far side of 1) serves where
there is nothing across runs. :func:`adjust` corrects a family of p-values for multiplicity.
"""
from __future__ import annotations

import dataclasses
import functools
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
ALPHA = 0.05
"""What an adjusted p-value must be below for a verdict other than ``same``."""
MIN_DF = 2
"""Fewest degrees of freedom of a run-to-run spread a test across runs rests on (3 runs of one
code, or 2 on each side): from one difference of two runs, Student's t with 1 degree of
freedom could never call anything."""
MULTIPLICITY = {"fdr": "Benjamini-Hochberg false discovery rate", "holm": "Holm's step-down"}
"""The corrections :func:`adjust` knows, by name."""


@dataclasses.dataclass(frozen=True)
class Interval:
    """A ratio of medians (``estimate``) with its interval ``low``..``high`` (NaN when there is
    none), the group sizes ``n`` (numerator, denominator) and ``p``, the two-sided p-value of a
    ratio of 1 (NaN without an interval)."""

    estimate: float
    low: float = math.nan
    high: float = math.nan
    n: tuple[int, int] = (0, 0)
    confidence: float = CONFIDENCE
    p: float = math.nan

    @property
    def known(self) -> bool:
        """Whether there is an interval (enough values in both groups)."""
        return not (math.isnan(self.low) or math.isnan(self.high))

    def inverse(self) -> "Interval":
        """The interval of 1 / ratio (the percentile bootstrap's bounds invert with it)."""
        inv = lambda v: 1 / v if v and not math.isnan(v) else math.nan  # noqa: E731
        return Interval(inv(self.estimate), inv(self.high), inv(self.low), self.n[::-1], self.confidence, self.p)

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


def fixed_width(head: list[str], rows: list[list[str]]) -> list[str]:
    """A table as left-aligned, space-separated lines."""
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [head, *rows]]


def _clean(values) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return np.sort(a[~np.isnan(a)])   # sorted: the interval does not depend on the values' order


def ratio_of_medians(numerator, denominator, *, confidence: float = CONFIDENCE, seed: int = SEED,
                     resamples: int = RESAMPLES, min_n: int = MIN_N) -> Interval:
    """median(``numerator``) / median(``denominator``) with its percentile-bootstrap interval and
    p-value, each group resampled independently (see the module docstring); NaN values are dropped.
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
        return Interval(estimate, estimate, estimate, n, confidence, bootstrap_p(np.full(resamples, estimate)))
    low, high, p = _bootstrap(num.tobytes(), den.tobytes(), confidence, seed, resamples)
    return Interval(estimate, low, high, n, confidence, p)


@functools.lru_cache(maxsize=4096)
def _bootstrap(num: bytes, den: bytes, confidence: float, seed: int, resamples: int) -> tuple[float, float, float]:
    """(low, high, p) of the ratio of medians of two sorted groups (their float64 bytes): seeded, so
    the same groups give the same interval, and a report asks for many of them more than once."""
    def statistic(a, b, axis=-1):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.median(a, axis=axis) / np.median(b, axis=axis)

    from scipy import stats   # here, not at import: scipy would double the CLI's start-up
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # degenerate resamples (a median of 0) only widen the bounds
        res = stats.bootstrap((np.frombuffer(num), np.frombuffer(den)), statistic, paired=False, vectorized=True,
                              method="percentile", confidence_level=confidence, n_resamples=resamples,
                              rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return float(ci.low), float(ci.high), bootstrap_p(res.bootstrap_distribution)


def bootstrap_p(ratios: np.ndarray) -> float:
    """Two-sided p-value of a ratio of 1 from resampled ``ratios``: twice the share on the far side
    of 1 (ties count), counted as ``(k + 1) / (B + 1)`` so it is never 0; consistent with the
    percentile interval (below 1 - confidence exactly when the interval excludes 1)."""
    far = min(np.count_nonzero(ratios <= 1), np.count_nonzero(ratios >= 1))
    return min(1.0, 2 * (far + 1) / (len(ratios) + 1))


@dataclasses.dataclass(frozen=True)
class Spread:
    """How much a point's median moves from one run to the next: ``ss``, the sum of squared
    deviations of the logs of run medians from the mean of their group (runs of one code), and its
    degrees of freedom ``df`` (runs less groups). Spreads of separate groups add up (pooling)."""

    ss: float = 0.0
    df: int = 0

    @classmethod
    def of(cls, groups) -> "Spread":
        """The pooled spread of ``groups`` of log run medians (NaN values dropped)."""
        ss, df = 0.0, 0
        for g in groups:
            g = np.asarray(g, dtype=float)
            g = g[~np.isnan(g)]
            if len(g) > 1:
                ss, df = ss + float(((g - g.mean()) ** 2).sum()), df + len(g) - 1
        return cls(ss, df)

    def __add__(self, other: "Spread") -> "Spread":
        return Spread(self.ss + other.ss, self.df + other.df)

    @property
    def sd(self) -> float:
        """The standard deviation of one run's log median (NaN without degrees of freedom)."""
        return math.sqrt(self.ss / self.df) if self.df else math.nan

    def band(self, confidence: float = CONFIDENCE) -> float:
        """How far one run's median strays from its code's typical value, as a share
        (``0.12``: ±12 %), at ``confidence`` (Student's t with :attr:`df`); NaN below :data:`MIN_DF`."""
        if self.df < MIN_DF:
            return math.nan
        from scipy import stats
        return math.expm1(stats.t.ppf(0.5 + confidence / 2, self.df) * self.sd)


def logs(values) -> np.ndarray:
    """The natural logs of positive ``values``; NaN for the others."""
    a = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, np.log(np.where(a > 0, a, 1.0)), math.nan)


def log_se(interval: Interval) -> float:
    """The standard error of a ratio's log its interval implies (its log width over that of a
    normal interval at its confidence); 0 without an interval."""
    if not interval.known or interval.low <= 0:
        return 0.0
    from scipy import stats
    return math.log(interval.high / interval.low) / (2 * float(stats.norm.ppf(0.5 + interval.confidence / 2)))


def across_runs(numerator, denominator, prior: Spread = Spread(), *, floor: float = 0.0,
                confidence: float = CONFIDENCE) -> tuple[Interval, Spread]:
    """The ratio of two groups of run medians judged across runs: the ratio of their geometric
    means with its interval and p-value by Student's t on the logs of the run medians, the
    variance pooled from both groups' own runs and ``prior`` (other runs' spread, e.g. a
    calibration's), its standard error no less than ``floor`` (the within-run sampling error of
    the two medians, :func:`log_se`: a spread estimated from few runs can come out smaller than
    that by chance); and the pooled :class:`Spread`. No interval and no p (NaN) when the pooled
    spread has fewer than :data:`MIN_DF` degrees of freedom; NaN throughout when a group has no
    positive median."""
    num, den = logs(numerator), logs(denominator)
    num, den = num[~np.isnan(num)], den[~np.isnan(den)]
    n = (len(num), len(den))
    if not len(num) or not len(den):
        return Interval(math.nan, n=n, confidence=confidence), prior
    pooled = prior + Spread.of([num, den])
    d = float(num.mean() - den.mean())
    if pooled.df < MIN_DF:
        return Interval(math.exp(d), n=n, confidence=confidence), pooled
    se = max(pooled.sd * math.sqrt(1 / len(num) + 1 / len(den)), floor)
    if se == 0:   # every run's median the same: any difference is beyond the spread
        return Interval(math.exp(d), math.exp(d), math.exp(d), n, confidence, 1.0 if d == 0 else 0.0), pooled
    from scipy import stats
    q = float(stats.t.ppf(0.5 + confidence / 2, pooled.df))
    p = float(2 * stats.t.sf(abs(d) / se, pooled.df))
    return Interval(math.exp(d), math.exp(d - q * se), math.exp(d + q * se), n, confidence, p), pooled


def adjust(pvalues, method: str = "fdr") -> list[float]:
    """``pvalues`` adjusted for multiplicity over their family (:data:`MULTIPLICITY`): ``fdr``,
    Benjamini-Hochberg (:func:`scipy.stats.false_discovery_control`; with every null true it also
    bounds the chance of any false call by the level); ``holm``, Holm's step-down (the chance of
    any false call, whatever holds)."""
    ps = np.asarray(pvalues, dtype=float)
    if not len(ps):
        return []
    if method == "fdr":
        from scipy import stats
        return [float(p) for p in stats.false_discovery_control(ps, method="bh")]
    order = np.argsort(ps)
    steps = np.minimum(1.0, np.maximum.accumulate((len(ps) - np.arange(len(ps))) * ps[order]))
    out = np.empty(len(ps))
    out[order] = steps
    return [float(p) for p in out]


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
