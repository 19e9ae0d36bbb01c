"""Runs compared from their results: the same points measured on two or more sides (the first is
the baseline), each metric's median per side, the ratio side / baseline and a verdict, and rules
such as ``time>5%`` that fail on a regression the verdict supports.

A side is one run directory, several runs of one code (judged across runs), or, with ``axis``, the
points of one run at one value of a parameter (an axis inside one run). Points are matched by
their configuration: the parameter columns of results.parquet
(:func:`sae.results.run.directory.flat_params`), less the parameters that differ between the sides as a
whole (one value on each side, not the same on all, e.g. ``stored_compression``): those are what
the comparison is about and are shown, with the differences in the runs' provenance
(``versions.lock``), as "what differs". Statistics are over measured repetitions only
(:func:`sae.results.analysis.measured.measured`).

What a verdict rests on (:mod:`sae.results.analysis.statistics`):

* separate runs: Student's t on the logs of the sides' run medians, the run-to-run spread pooled
  from the sides' own runs and the A/A calibration of the baseline's machine and stack
  (:mod:`sae.results.analysis.calibration`), the standard error no less than the within-run intervals
  imply; with one run a side, the within-run bootstrap interval must exclude 1 as well. Without
  :data:`~sae.results.analysis.statistics.MIN_DF` degrees of freedom of spread the comparison is
  uncalibrated: the within-run bootstrap's p-value alone, and a verdict reads ``worse?`` or
  ``better?`` at most.
* an axis inside one run: the within-run bootstrap; where the two values' repetitions did not
  take turns (``seq``), ``worse?`` or ``better?`` at most.

Either way the p-values of every judged point-metric are adjusted together for multiplicity
(:func:`sae.results.analysis.statistics.adjust`) and a ratio within ``same_within`` of 1 reads ``same``."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import string
from pathlib import Path

import numpy as np
import pandas as pd

from metareserve.errors import UsageError

from ...planning.spec import SECTIONS
from ..run import provenance
from ..run.directory import QUALIFIED, RunDir, load_results
from . import calibration as calibrations, statistics
from .calibration import Calibration, Identity
from .measured import measured, shown
from .statistics import ALPHA, MIN_DF, MULTIPLICITY, Interval, Spread

METRICS = ("total_s", "compute_rx_bytes", "compute_cpu_s", "storage_cpu_s")
"""What is compared unless asked otherwise (lower is better for each)."""
ALIASES = {"time": "total_s", "bytes": "compute_rx_bytes", "cpu": "compute_cpu_s", "storage_cpu": "storage_cpu_s"}
"""A rule's short metric names → their column."""
PARAMETERS = tuple(QUALIFIED.get(f.name, f.name) for cls in SECTIONS.values() for f in dataclasses.fields(cls))
"""The parameter columns of results.parquet (one per field of the experiment's sections)."""
RULE = re.compile(r"^\s*(\w+)\s*([<>])\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$", re.ASCII)
GRAMMAR = "METRIC>PERCENT% or METRIC<PERCENT%, METRIC one of time, bytes, cpu, storage_cpu or a results column"
HEDGED = "?"
"""Appended to ``worse``/``better`` where nothing measured the spread the difference must exceed."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """``time>5%``: fails when, at some matched point, a side's verdict is ``worse`` and its
    ratio to the baseline lies wholly above 1.05 (the interval across runs where there is one,
    else the within-run one): a regression beyond 5 % the verdict supports; ``time<5%``: when the
    verdict is ``better`` and the interval lies wholly below 0.95. An uncalibrated verdict
    (``worse?``) fails a rule only when ``uncalibrated_ok``."""

    text: str
    metric: str
    above: bool
    percent: float

    @classmethod
    def parse(cls, text: str) -> "Rule":
        """The rule ``text``; UsageError naming it and the grammar when it is not one."""
        m = RULE.match(text)
        percent = float(m.group(3)) if m else math.nan
        if not m or (m.group(2) == "<" and percent >= 100):
            raise UsageError(f"rule {text!r}: expected {GRAMMAR} (below 100 with <), e.g. time>5%")
        return cls(text.strip(), ALIASES.get(m.group(1), m.group(1)), m.group(2) == ">", percent)

    def fails(self, measure: "Measure", uncalibrated_ok: bool = False) -> bool:
        """Whether ``measure``'s verdict and ratio lie beyond the rule's bound."""
        want = "worse" if self.above else "better"
        if measure.verdict != want and not (uncalibrated_ok and measure.verdict == want + HEDGED):
            return False
        iv = measure.interval
        return iv.low > 1 + self.percent / 100 if self.above else iv.high < 1 - self.percent / 100


@dataclasses.dataclass(eq=False)
class Run:
    """One run of a comparison: its ``label`` (A, B, ... or its directory's name), directory,
    provenance (``versions.lock``) and measured repetitions."""

    label: str
    root: Path
    provenance: dict
    results: pd.DataFrame = dataclasses.field(repr=False)

    @classmethod
    def load(cls, path, label: str | None = None) -> "Run":
        """The run directory at ``path`` (or the ``latest`` under it); UsageError naming it when it
        has no results or no measured repetition."""
        run = RunDir.find(path)
        if not run.results.exists():
            raise UsageError(f"{run.root}: no results.parquet yet; run 'sae report {run.root}' to write it")
        df = measured(load_results(run.root))
        if df.empty:
            raise UsageError(f"{run.root}: no measured repetition in results.parquet (only warm-ups); "
                             f"finish it with 'sae resume {run.root}'")
        return cls(label or run.root.name, run.root, run.read_yaml(run.versions) or {}, df)


@dataclasses.dataclass(eq=False)
class Side:
    """One side of a comparison: its ``label`` (A, B, ...), its runs (one, several of one code, or
    the one run an axis divides), their measured repetitions (``_run``: the index of the run),
    ``what`` it is as the notes name it, and a short ``name`` (the figures' legend)."""

    label: str
    runs: list[Run]
    results: pd.DataFrame = dataclasses.field(repr=False)
    what: str
    name: str

    @classmethod
    def of_runs(cls, label: str, runs: list[Run]) -> "Side":
        """The side of ``runs``, all their measured repetitions."""
        one = len(runs) == 1
        return cls(label, runs, pd.concat([r.results.assign(_run=i) for i, r in enumerate(runs)], ignore_index=True),
                   str(runs[0].root) if one else f"{len(runs)} runs: " + ", ".join(str(r.root) for r in runs),
                   runs[0].root.name if one else f"{len(runs)} runs")

    @property
    def provenance(self) -> dict:
        """The provenance of its first run."""
        return self.runs[0].provenance

    @property
    def root(self) -> Path:
        """The directory of its first run."""
        return self.runs[0].root

    def at(self, point: "Point", metric: str) -> tuple[pd.Series, list[float]]:
        """The measured values of ``metric`` at ``point`` and each run's median of them."""
        rows = self.results[self.results["_point"] == point.label]
        return rows[metric], [float(v) for v in rows.groupby("_run")[metric].median().dropna()]


@dataclasses.dataclass(frozen=True)
class Point:
    """A configuration measured by the sides: ``label`` (``reader=offload, selectivity=1``; ``all``
    when there is one) and its parameters as text."""

    label: str
    params: tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Unmatched:
    """A point not every side measured, and the sides that did."""

    point: Point
    runs: tuple[str, ...]

    def text(self) -> str:
        return f"{self.point.label} (only in {', '.join(self.runs)})"


@dataclasses.dataclass(frozen=True)
class Measure:
    """One side's ``metric`` at one point: its ``median`` (a side of several runs: the geometric
    mean of its runs' medians) over ``n`` measured values from ``runs`` runs. But for the
    baseline: the ratio side / baseline as ``ratio``, with its bootstrap interval over the
    repetitions (one run a side), and as ``across``, with its interval across runs
    (:func:`~sae.results.analysis.statistics.across_runs`; the pooled ``spread`` behind it); whether the
    verdict is ``calibrated`` (the spread between runs was known, or an axis's values took turns),
    the p-value adjusted for multiplicity (``p_adjusted``) and the ``verdict``: ``worse``,
    ``better``, ``same``, ``unknown`` (nothing to judge by) or ``baseline``; ``worse?`` or
    ``better?`` where it is not calibrated."""

    point: Point
    metric: str
    side: Side
    median: float
    n: int
    runs: int
    ratio: Interval | None = None
    across: Interval | None = None
    spread: Spread = Spread()
    calibrated: bool = False
    p_adjusted: float = math.nan
    verdict: str = "baseline"

    @property
    def baseline(self) -> bool:
        return self.ratio is None and self.across is None

    @property
    def estimate(self) -> float:
        """The ratio side / baseline (NaN for the baseline)."""
        return (self.across or self.ratio or Interval(math.nan)).estimate

    @property
    def interval(self) -> Interval:
        """The interval a rule reads: across runs where there is one, else within the run."""
        if self.across is not None and self.across.known:
            return self.across
        return self.ratio or self.across or Interval(math.nan)

    @property
    def p(self) -> float:
        """The p-value it is judged by: across runs where the spread is known, else the bootstrap's."""
        return self.interval.p

    @property
    def judgeable(self) -> bool:
        """Whether there is a p-value, and (one run a side) a within-run interval, to judge by."""
        return not self.baseline and not math.isnan(self.p) and (self.ratio is None or self.ratio.known)

    def judged(self, p_adjusted: float, same_within: float) -> "Measure":
        """This measure with ``p_adjusted`` and its verdict (module docstring)."""
        w, est = self.ratio, self.estimate
        if not self.judgeable:
            verdict = "unknown"
        elif p_adjusted < ALPHA and est > 1 + same_within and (w is None or w.low > 1):
            verdict = "worse" if self.calibrated else "worse" + HEDGED
        elif p_adjusted < ALPHA and est < 1 / (1 + same_within) and (w is None or w.high < 1):
            verdict = "better" if self.calibrated else "better" + HEDGED
        else:
            verdict = "same"
        return dataclasses.replace(self, p_adjusted=p_adjusted, verdict=verdict)


@dataclasses.dataclass(frozen=True)
class Failure:
    """A rule that failed: the side and point where the ratio lies beyond its bound."""

    rule: Rule
    measure: Measure
    baseline: str

    def text(self) -> str:
        m = self.measure
        return (f"failed {self.rule.text}: {m.side.label} at {m.point.label}: {m.metric} {m.interval.text()} "
                f"of {self.baseline}'s" + ("" if m.calibrated else " (uncalibrated)"))


def value_text(column: str, value) -> str:
    """A parameter's value as text that is equal across runs for equal values (``10`` whether
    stored as 10 or 10.0; lists as JSON; missing: ``-``)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    value = value.item() if isinstance(value, np.generic) else value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return shown(column, int(value) if isinstance(value, float) and value.is_integer() else value)


def as_numbers(runs: list[Run], metrics) -> None:
    """Make each metric a float column of every run's results (NaN where a run lacks it)."""
    for run in runs:
        for metric in metrics:
            run.results[metric] = run.results[metric].astype(float) if metric in run.results else math.nan


def configurations(runs: list[Run]) -> tuple[dict[str, list[str]], list[str]]:
    """The parameters that differ between the runs as a whole (column → each run's one value)
    and the columns points are matched by (the others that vary); adds each run's parameters as
    text and its point label (``_point``) to its results."""
    for run in runs:
        for column in PARAMETERS:
            values = run.results[column] if column in run.results else pd.Series(None, index=run.results.index)
            run.results[f"_{column}"] = [value_text(column, v) for v in values]
    per_run = {c: [set(r.results[f"_{c}"]) for r in runs] for c in PARAMETERS}
    differing = {c: [next(iter(v)) for v in sets] for c, sets in per_run.items()
                 if all(len(v) == 1 for v in sets) and len(set.union(*sets)) > 1}
    combined = pd.concat([r.results for r in runs])
    keys = [c for c in PARAMETERS if c not in differing and combined[f"_{c}"].nunique() > 1]
    for run in runs:
        run.results["_point"] = [", ".join(f"{k}={row[f'_{k}']}" for k in keys) or "all"
                                 for _, row in run.results.iterrows()]
    return differing, keys


def points(runs: list[Run], keys: list[str]) -> list[Point]:
    """Every point of the runs, in the order the runs ran them (the baseline's first)."""
    out = {}
    for run in runs:
        order = run.results.sort_values("order") if "order" in run.results else run.results
        for label, row in order.drop_duplicates("_point").set_index("_point").iterrows():
            out.setdefault(label, Point(label, tuple((k, row[f"_{k}"]) for k in keys)))
    return list(out.values())


def differences(runs: list[Run], differing: dict[str, list[str]], *, consecutive: bool = False) -> list[str]:
    """What differs between the runs, one phrase each: the run-wide parameters (each run's value)
    and the provenance, each run's against the baseline's (``consecutive``: against the run before)."""
    out = [f"{c}: " + ", ".join(f"{r.label} {v}" for r, v in zip(runs, values)) for c, values in differing.items()]
    for i, run in enumerate(runs[1:], 1):
        ref = runs[i - 1] if consecutive else runs[0]
        out += [f"{run.label} vs {ref.label}: {change}"
                for change in provenance.compare(ref.provenance, run.provenance)]
    return out


def median_text(metric: str, median: float, n: int) -> str:
    """``0.52 (5)``, ``12.3 (5)``; bytes in MB: ``119.9 MB (5)``; ``-`` when unknown."""
    if math.isnan(median):
        return "-"
    value = f"{median / 1e6:.1f} MB" if metric.endswith("bytes") else statistics.number(median)
    return f"{value} ({n})"


def p_text(p: float) -> str:
    """``0.012``, ``<0.001``; ``-`` when there is none."""
    return "-" if math.isnan(p) else "<0.001" if p < 0.001 else f"{p:.3f}"


def ratio_text(ratio: float) -> str:
    """``1.23x``; ``-`` when unknown."""
    return "-" if math.isnan(ratio) else f"{statistics.number(ratio)}x"


def bounds_text(iv: Interval | None) -> str:
    """``[0.85, 1.78]``; ``-`` without bounds."""
    return f"[{statistics.number(iv.low)}, {statistics.number(iv.high)}]" if iv is not None and iv.known else "-"


@dataclasses.dataclass(eq=False)
class Comparison:
    """The sides (the first is the baseline), what differs between them, every matched point's
    :class:`Measure` per metric and side, the points not every side measured, the rules with the
    :class:`Failure` of each that failed, what is judged (``judging``: runs, or an axis inside one
    run), what the verdicts rest on (``basis``: the calibration), the multiplicity correction
    and ``warnings``."""

    sides: list[Side]
    differences: list[str]
    points: list[Point]
    unmatched: list[Unmatched]
    metrics: tuple[str, ...]
    measures: list[Measure]
    rules: tuple[Rule, ...]
    failures: list[Failure]
    judging: str
    basis: list[str]
    warnings: list[str]
    calibration: Calibration | None = None
    multiplicity: str = "fdr"
    same_within: float = statistics.SAME_WITHIN
    uncalibrated_ok: bool = False

    @property
    def judged(self) -> list[Measure]:
        """The measures judged (a p-value adjusted with the others)."""
        return [m for m in self.measures if m.judgeable]

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Header and rows (point × metric) shared by the text and the page."""
        base, others = self.sides[0], self.sides[1:]
        named = (lambda s, x: x) if len(others) == 1 else (lambda s, x: f"{s.label} {x}")
        head = ["point", "metric", *(f"{s.label} median (n)" for s in self.sides),
                *(h for s in others for h in (f"{s.label}/{base.label}",
                                              *(named(s, x) for x in ("across runs", "p adj", "verdict"))))]
        cells = {(m.point.label, m.metric, m.side.label): m for m in self.measures}
        rows = []
        for point in self.points:
            for metric in self.metrics:
                got = [cells.get((point.label, metric, s.label)) for s in self.sides]
                rows.append([point.label, metric, *(median_text(metric, m.median, m.n) if m else "not measured"
                                                    for m in got),
                             *(c for m in got[1:] for c in (
                                 (m.ratio.text() if m.ratio else ratio_text(m.estimate),
                                  bounds_text(m.across), p_text(m.p_adjusted), m.verdict) if m else ("-",) * 4))])
        return head, rows

    def notes(self) -> list[str]:
        base = self.sides[0]
        return [f"baseline {base.label}: {base.what}", *(f"{s.label}: {s.what}" for s in self.sides[1:]),
                f"judging: {self.judging}",
                "what differs: " + ("; ".join(self.differences) or "nothing recorded"),
                *self.basis,
                f"multiplicity: {MULTIPLICITY[self.multiplicity]} at {ALPHA:.0%} over the {len(self.judged)} judged "
                f"point-metrics (p adj: each p-value adjusted)",
                f"median (n): over the measured repetitions (several runs: the geometric mean of their medians); "
                f"{self.sides[-1].label}/{base.label}: side / baseline (< 1: the side spends less) [95 % bootstrap "
                f"interval over one run's repetitions, none below {statistics.MIN_N}]; across runs: [95 % interval "
                f"from the spread between runs]; verdict: worse or better when p adj < {ALPHA:g}, the ratio is more "
                f"than {self.same_within:.0%} from 1 and, one run a side, the within-run interval excludes 1; worse? "
                f"or better? where nothing measured the spread between runs; else same; unknown without an interval",
                *(["unmatched (not measured by every side): " + "; ".join(u.text() for u in self.unmatched)]
                  if self.unmatched else [])]

    def passed(self) -> list[str]:
        """One line per rule that held, saying how many of its ratios it could judge."""
        failed = {f.rule for f in self.failures}
        lines = []
        for r in self.rules:
            if r in failed:
                continue
            ratios = [m for m in self.measures if m.metric == r.metric and not m.baseline]
            judged = [m for m in ratios if m.judgeable]
            hedged = sum(m.verdict.endswith(HEDGED) for m in judged)
            lines.append(f"passed {r.text} ({len(judged)} of {len(ratios)} ratios judged"
                         + ("; too few repetitions to judge any" if ratios and not judged else "")
                         + (f"; {hedged} uncalibrated, which rules judge only with --uncalibrated-ok"
                            if hedged and not self.uncalibrated_ok else "") + ")")
        return lines

    def text(self) -> str:
        """The comparison as a console table, with what differs, what it rests on and the rules."""
        return "\n".join([*self.notes(), *(f"warning: {w}" for w in self.warnings), *statistics.fixed_width(*self.table()),
                          *self.passed(), *(f.text() for f in self.failures)])

    def frame(self) -> pd.DataFrame:
        """One row per point × metric × side: the point's parameters, ``point``, ``metric``, ``run``
        (the side's label), ``run_dir`` (its first run's directory), ``runs``, ``median``, ``n``,
        ``ratio`` with ``low``/``high`` (its within-run interval), ``across_low``/``across_high``
        (across runs), ``df`` (of the spread behind them), ``p`` and ``p_adjusted``,
        ``calibrated`` and ``verdict`` (NaN where a value does not apply, e.g. for the baseline)."""
        nan = Interval(math.nan)
        return pd.DataFrame([{**dict(m.point.params), "point": m.point.label, "metric": m.metric,
                              "run": m.side.label, "run_dir": str(m.side.root), "runs": m.runs, "median": m.median,
                              "n": m.n, "ratio": m.estimate, "low": (m.ratio or nan).low,
                              "high": (m.ratio or nan).high, "across_low": (m.across or nan).low,
                              "across_high": (m.across or nan).high, "df": m.spread.df,
                              "p": math.nan if m.baseline else m.p, "p_adjusted": m.p_adjusted,
                              "calibrated": m.calibrated, "verdict": m.verdict} for m in self.measures])


def label(i: int) -> str:
    """A side's label: A, B, ... Z, R27, ..."""
    return string.ascii_uppercase[i] if i < 26 else f"R{i + 1}"


def axis_sides(path, axis: str) -> list[Side]:
    """The points of the run at ``path`` divided by their value of the parameter ``axis``, in the
    order the run measured the values (the first is the baseline); UsageError naming the run when
    ``axis`` is not a parameter of it or has one value there."""
    run = Run.load(path)
    column = QUALIFIED.get(axis, axis)
    df = run.results
    varied = ", ".join(c for c in PARAMETERS if c in df and df[c].astype(str).nunique() > 1) or "none"
    if column not in PARAMETERS or column not in df:
        raise UsageError(f"--axis {axis}: not a parameter of {run.root}; parameters that vary there: {varied}")
    text = pd.Series([value_text(column, v) for v in df[column]], index=df.index)
    values = list(dict.fromkeys(text.loc[df.sort_values("order").index] if "order" in df else text))
    if len(values) < 2:
        raise UsageError(f"--axis {axis}: {run.root} measured one value of it ({values[0]}); an axis needs two or "
                         f"more; parameters that vary there: {varied}")
    return [Side(label(i), [run], df[text == v].assign(_run=0), f"{column}={v} in {run.root}", f"{column}={v}")
            for i, v in enumerate(values)]


def took_turns(side: Side, base: Side, point: Point) -> bool:
    """Whether the two sides' measured repetitions at ``point`` took turns (their places in the
    order the run executed them, ``seq``, interleave rather than follow one another)."""
    if "seq" not in side.results or "seq" not in base.results:
        return False
    a, b = (s.results.loc[s.results["_point"] == point.label, "seq"].dropna() for s in (side, base))
    return bool(len(a) and len(b) and a.min() < b.max() and b.min() < a.max())


def calibration_for(choice, base: Side) -> tuple[Calibration | None, str]:
    """The calibration the baseline is judged by (``choice``: ``auto``, the record of its
    machine, stack and experiment if there is one; a record's path or a :class:`Calibration`;
    None or ``none``: no calibration) and, without one, why. UsageError when a given record is of
    another machine, stack or experiment."""
    if choice is None or choice == "none":
        return None, "--calibration none"
    experiment = str(base.results["experiment"].iloc[0]) if "experiment" in base.results else calibrations.MISSING
    identity = Identity.of(base.root, base.provenance, experiment)
    if isinstance(choice, str) and choice == "auto":
        found = calibrations.find(identity)
        return found, "" if found else \
            f"no calibration of {experiment} on this machine and stack in {calibrations.home()}"
    cal = choice if isinstance(choice, Calibration) else calibrations.load(choice)
    if cal.identity != identity:
        raise UsageError(f"{cal.path or 'calibration'}: recorded for another machine, stack or experiment than "
                         f"{base.root} ({'; '.join(cal.identity.differences(identity))}); record this one with "
                         f"'sae calibrate', or pass --calibration none")
    return cal, ""


def runs_basis(cal: Calibration | None, why: str, measures: list[Measure]) -> list[str]:
    """What the verdicts of a comparison of runs rest on, in lines for its notes."""
    judged = [m for m in measures if not m.baseline and m.judgeable]
    spread = max((m.spread.df for m in judged if m.calibrated), default=0)
    test = (f"Student's t on the logs of run medians (up to {spread} degrees of freedom; its standard error no "
            f"less than the within-run intervals imply)")
    if cal:
        lines = [f"calibration: {cal.describe()}: each point's spread between runs, pooled with the compared runs' "
                 f"own; {test}"]
    elif spread:
        lines = [f"calibration: none ({why}); the compared runs' own spread between runs: {test}"]
    else:
        lines = [f"uncalibrated: {why}, and too few runs a side: nothing measures how far a point's median moves from "
                 f"one run to the next, so a verdict reads worse? or better? at most (the repetitions of each run "
                 f"support the difference, not that it exceeds the spread between runs); record a calibration with "
                 f"'sae calibrate RUN RUN RUN', or compare 3 runs a side; rules judge such verdicts only with "
                 f"--uncalibrated-ok"]
    loose = sum(not m.calibrated for m in judged)
    if cal and loose:
        lines.append(f"uncalibrated: {loose} judged point-metrics the calibration does not hold (no recorded point "
                     f"with their parameters, or too few runs there): worse? or better? at most")
    return lines


def side_warnings(sides: list[Side], cal: Calibration | None) -> list[str]:
    """Runs of one side that differ (code, software), and sides on another machine or stack than
    the calibration's."""
    out = [f"{s.label}'s runs differ: {r.root.name}: {change}" for s in sides for r in s.runs[1:]
           for change in provenance.compare(s.runs[0].provenance, r.provenance)]
    if cal:
        for s in sides[1:]:
            other = Identity.of(s.root, s.provenance, cal.identity.experiment)
            if other != cal.identity:
                out.append(f"{s.label} ran on another machine or stack than the calibration's, which holds the "
                           f"baseline's spread: {'; '.join(cal.identity.differences(other))}")
    return out


def measure(sides: list[Side], matched: list[Point], present: dict[str, tuple[str, ...]], metrics,
            cal: Calibration | None, axis: str | None) -> list[Measure]:
    """Each side's :class:`Measure` of each metric at each matched point, not yet judged: across
    runs (Student's t, the spread of ``cal`` at the baseline's point pooled in), or, along an
    ``axis``, within the run."""
    base = sides[0]
    out = []
    for point in matched:
        rows = base.results[base.results["_point"] == point.label]
        key = cal.match({c: rows[f"_{c}"].iloc[0] for c in PARAMETERS}) if cal else None
        for metric in metrics:
            base_values, base_medians = base.at(point, metric)
            for side in [s for s in sides if s.label in present[point.label]]:
                values, medians = side.at(point, metric)
                median = float(values.median()) if len(side.runs) == 1 else \
                    float(np.exp(np.nanmean(statistics.logs(medians)))) if medians else math.nan
                m = Measure(point, metric, side, median, int(values.count()), len(side.runs))
                if side is not base:
                    within = statistics.ratio_of_medians(values, base_values) \
                        if len(side.runs) == len(base.runs) == 1 else None
                    if axis is None:
                        across, spread = statistics.across_runs(
                            medians, base_medians, cal.spread(key, metric) if key else Spread(),
                            floor=statistics.log_se(within) if within else 0.0)
                        m = dataclasses.replace(m, ratio=within, across=across, spread=spread,
                                                calibrated=spread.df >= MIN_DF)
                    else:
                        m = dataclasses.replace(m, ratio=within, calibrated=took_turns(side, base, point))
                out.append(m)
    return out


def judge(measures: list[Measure], multiplicity: str, same_within: float) -> list[Measure]:
    """``measures`` with their verdicts, the p-values of the judgeable ones adjusted together."""
    family = [m for m in measures if m.judgeable]
    adjusted = dict(zip(map(id, family), statistics.adjust([m.p for m in family], multiplicity)))
    return [m if m.baseline else m.judged(adjusted.get(id(m), math.nan), same_within) for m in measures]


def compare(sides, *, metrics=METRICS, rules=(), same_within: float = statistics.SAME_WITHIN, calibration="auto",
            axis: str | None = None, multiplicity: str = "fdr", uncalibrated_ok: bool = False) -> Comparison:
    """Compare two or more sides (the first is the baseline) at every point they share, per
    metric (lower is better). A side is a run directory, or a list of run directories of one code
    (judged across runs); with ``axis`` (a parameter), give one run directory: its points are
    compared along that parameter, inside the run. ``calibration``: ``auto`` (the record of the
    baseline's machine, stack and experiment, if any), a record's path or
    :class:`~sae.results.analysis.calibration.Calibration`, or None; ``rules``: :class:`Rule` or their text
    (``"time>5%"``), whose metrics are compared too, failing on an uncalibrated verdict only with
    ``uncalibrated_ok``; a ratio within ``same_within`` of 1 reads ``same``; ``multiplicity``:
    ``fdr`` or ``holm`` (:func:`~sae.results.analysis.statistics.adjust`). UsageError naming the run
    directory, record or rule that is wrong."""
    if isinstance(same_within, bool) or not isinstance(same_within, (int, float)) or not 0 <= same_within < 1:
        raise UsageError(f"same within {same_within!r}: give a share of 1 from 0 to below 1 (0.05: 5 %)")
    if multiplicity not in MULTIPLICITY:
        raise UsageError(f"multiplicity {multiplicity!r}: one of {', '.join(MULTIPLICITY)}")
    rules = tuple(r if isinstance(r, Rule) else Rule.parse(r) for r in rules)
    groups = [list(s) if isinstance(s, (list, tuple)) else [s] for s in sides]
    if axis is not None:
        if calibration not in ("auto", "none", None):
            raise UsageError(f"--axis {axis} judges inside one run, where no calibration between runs applies: "
                             f"leave --calibration out")
        if len(groups) != 1 or len(groups[0]) != 1:
            raise UsageError(f"--axis {axis} compares the points of one run: give one run directory, got "
                             f"{sum(map(len, groups))}")
        loaded = axis_sides(groups[0][0], axis)
    elif len(groups) < 2 or not all(groups):
        raise UsageError(f"compare needs two or more run directories (the first is the baseline; RUN,RUN,... for a "
                         f"side of several runs), got {len(groups)}")
    else:
        loaded = [Side.of_runs(label(i), [Run.load(p) for p in g]) for i, g in enumerate(groups)]
    metrics = tuple(dict.fromkeys([ALIASES.get(m, m) for m in metrics] + [r.metric for r in rules]))
    for metric in metrics:
        if not any(metric in s.results for s in loaded):
            rule = next((f"rule {r.text!r}: " for r in rules if r.metric == metric), "")
            raise UsageError(f"{rule}no run has a column {metric!r}; metrics: {', '.join(ALIASES)} or a results "
                             f"column (docs/results.md)")
    as_numbers(loaded, metrics)
    differing, keys = configurations(loaded)
    every = points(loaded, keys)
    present = {p.label: tuple(s.label for s in loaded if p.label in set(s.results["_point"])) for p in every}
    matched = [p for p in every if loaded[0].label in present[p.label] and len(present[p.label]) > 1]
    base = loaded[0]
    cal, why = calibration_for(calibration, base) if axis is None else (None, "")
    measures = judge(measure(loaded, matched, present, metrics, cal, axis), multiplicity, same_within)
    if axis is None:
        judging = ("separate runs: their difference holds what moves from one run to the next (the JIT's state, the "
                   "page cache, the machine's speed), which no interval over one run's repetitions holds")
        basis = runs_basis(cal, why, measures)
    else:
        turns = {m.point.label for m in measures if not m.baseline and m.calibrated}
        judging = (f"the axis {QUALIFIED.get(axis, axis)} inside one run ({base.root}): no spread between runs "
                   f"separates its values; their repetitions took turns at {len(turns)} of {len(matched)} points")
        basis = [] if len(turns) == len(matched) else [
            "elsewhere its values ran one after the other, and a verdict there reads worse? or better? at most: "
            "the machine's speed may have moved between them"]
    failures = [Failure(rule, m, base.label) for rule in rules for m in measures
                if m.metric == rule.metric and not m.baseline and rule.fails(m, uncalibrated_ok)]
    return Comparison(loaded, differences(loaded, differing), matched,
                      [Unmatched(p, present[p.label]) for p in every if len(present[p.label]) < len(loaded)],
                      metrics, measures, rules, failures, judging, basis, side_warnings(loaded, cal), cal,
                      multiplicity, same_within, uncalibrated_ok)
