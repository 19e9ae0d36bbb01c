"""Runs compared from their results: the same points measured by two or more runs (the first is
the baseline), each metric's median per run and the ratio run / baseline with its 95 % bootstrap
interval (:mod:`sae.results.statistics`), and rules such as ``time>5%`` that fail on a regression
the repetitions support.

Points are matched by their configuration: the parameter columns of results.parquet
(:func:`sae.results.results.flat_params`), less the parameters that differ between the runs as a
whole (one value in each run, not the same in all, e.g. ``stored_compression``): those are what
the comparison is about and are shown, with the differences in the runs' provenance
(``versions.lock``), as "what differs". Statistics are over measured repetitions only
(:func:`sae.results.plotting.measured`)."""
from __future__ import annotations

import base64
import dataclasses
import json
import math
import re
import string
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from metareserve.errors import UsageError

from ..planning.spec import SECTIONS
from . import provenance, statistics
from .pages import STYLE
from .plotting import BAND_MIN, measured, pyplot, save, shown, stats
from .results import QUALIFIED, RunDir, load_results

METRICS = ("total_s", "compute_rx_bytes", "compute_cpu_s", "storage_cpu_s")
"""What is compared unless asked otherwise (lower is better for each)."""
ALIASES = {"time": "total_s", "bytes": "compute_rx_bytes", "cpu": "compute_cpu_s", "storage_cpu": "storage_cpu_s"}
"""A rule's short metric names → their column."""
PARAMETERS = tuple(QUALIFIED.get(f.name, f.name) for cls in SECTIONS.values() for f in dataclasses.fields(cls))
"""The parameter columns of results.parquet (one per field of the experiment's sections)."""
RULE = re.compile(r"^\s*(\w+)\s*([<>])\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$", re.ASCII)
GRAMMAR = "METRIC>PERCENT% or METRIC<PERCENT%, METRIC one of time, bytes, cpu, storage_cpu or a results column"


@dataclasses.dataclass(frozen=True)
class Rule:
    """``time>5%``: fails when, at some matched point, a run's ratio to the baseline has its whole
    95 % interval above 1.05 (a regression beyond 5 % the repetitions support); ``time<5%``: when
    the whole interval lies below 0.95 (a drop beyond 5 %)."""

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

    def fails(self, ratio: statistics.Interval) -> bool:
        """Whether ``ratio`` (run / baseline) lies wholly beyond the rule's bound."""
        if not ratio.known:
            return False
        return ratio.low > 1 + self.percent / 100 if self.above else ratio.high < 1 - self.percent / 100


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


@dataclasses.dataclass(frozen=True)
class Point:
    """A configuration measured by the runs: ``label`` (``reader=offload, selectivity=1``; ``all``
    when there is one) and its parameters as text."""

    label: str
    params: tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Unmatched:
    """A point not every run measured, and the runs that did."""

    point: Point
    runs: tuple[str, ...]

    def text(self) -> str:
        return f"{self.point.label} (only in {', '.join(self.runs)})"


@dataclasses.dataclass(frozen=True)
class Measure:
    """One run's ``metric`` at one point: median and number of measured values ``n``, and (not for
    the baseline) the ratio run / baseline median with its interval."""

    point: Point
    metric: str
    run: Run
    median: float
    n: int
    ratio: statistics.Interval | None
    within: float = statistics.SAME_WITHIN

    @property
    def verdict(self) -> str:
        """``better`` (interval wholly below 1 and the ratio below 1 - ``within``), ``worse``
        (wholly above 1 and the ratio above 1 + ``within``), ``same`` (otherwise), ``unknown``
        (too few values) or ``baseline`` (:func:`sae.results.statistics.verdict`)."""
        return "baseline" if self.ratio is None else statistics.verdict(self.ratio.inverse(), self.within)


@dataclasses.dataclass(frozen=True)
class Failure:
    """A rule that failed: the run and point where the ratio lies beyond its bound."""

    rule: Rule
    measure: Measure
    baseline: str

    def text(self) -> str:
        m = self.measure
        return (f"failed {self.rule.text}: {m.run.label} at {m.point.label}: {m.metric} {m.ratio.text()} "
                f"of {self.baseline}'s")


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


def fixed_width(head: list[str], rows: list[list[str]]) -> list[str]:
    """A table as left-aligned, space-separated lines."""
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [head, *rows]]


PAGE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
{{ style | safe }}</style></head><body>
<h1>{{ title }}</h1>
{% for line in notes %}<p>{{ line }}</p>{% endfor %}
{% for line in warnings %}<p class="warn">{{ line }}</p>{% endfor %}
{% for caption, head, rows in tables %}<h2>{{ caption }}</h2>
<table><tr>{% for h in head %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in rows %}<tr>{% for c in r %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
{% endfor %}
<h2>Figures</h2>
{% for name, data in figures %}<img src="data:image/png;base64,{{ data }}" alt="{{ name }}" title="{{ name }}">
{% endfor %}
</body></html>
""", autoescape=True)


def write_page(out_dir, title: str, notes: list[str], warnings: list[str],
               tables: list[tuple[str, list[str], list[list[str]]]], figures: list[Path]) -> Path:
    """``out_dir/index.html``: one self-contained page (figures embedded) of notes, tables and figures."""
    path = Path(out_dir) / "index.html"
    path.write_text(PAGE.render(style=STYLE, title=title, notes=notes, warnings=warnings, tables=tables,
                                figures=[(f.stem, base64.b64encode(f.read_bytes()).decode()) for f in figures]))
    return path


@dataclasses.dataclass(eq=False)
class Comparison:
    """The runs (the first is the baseline), what differs between them, every matched point's
    :class:`Measure` per metric and run, the points not every run measured, and the rules with
    the :class:`Failure` of each that failed."""

    runs: list[Run]
    differences: list[str]
    points: list[Point]
    unmatched: list[Unmatched]
    metrics: tuple[str, ...]
    measures: list[Measure]
    rules: tuple[Rule, ...]
    failures: list[Failure]
    same_within: float = statistics.SAME_WITHIN

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Header and rows (point × metric) shared by the text and the page."""
        base, others = self.runs[0], self.runs[1:]
        head = ["point", "metric", *(f"{r.label} median (n)" for r in self.runs),
                *(h for r in others for h in (f"{r.label}/{base.label}", "verdict" if len(others) == 1
                                               else f"{r.label} verdict"))]
        cells = {(m.point.label, m.metric, m.run.label): m for m in self.measures}
        rows = []
        for point in self.points:
            for metric in self.metrics:
                got = [cells.get((point.label, metric, r.label)) for r in self.runs]
                rows.append([point.label, metric, *(median_text(metric, m.median, m.n) if m else "not measured"
                                                    for m in got),
                             *(c for m in got[1:] for c in ((m.ratio.text(), m.verdict) if m else ("-", "-")))])
        return head, rows

    def notes(self) -> list[str]:
        base = self.runs[0]
        return [f"baseline {base.label}: {base.root}", *(f"{r.label}: {r.root}" for r in self.runs[1:]),
                "what differs: " + ("; ".join(self.differences) or "nothing recorded"),
                f"medians of measured repetitions (n); ratio = run / baseline median (< 1: the run spends less) "
                f"with its [95 % bootstrap interval], none below {statistics.MIN_N} repetitions per run; "
                f"verdict: better or worse when the interval lies wholly below or above 1 and the ratio is more "
                f"than {self.same_within:.0%} from 1, else same",
                *(["unmatched (not measured by every run): " + "; ".join(u.text() for u in self.unmatched)]
                  if self.unmatched else [])]

    def passed(self) -> list[str]:
        """One line per rule that held, saying how many of its ratios had an interval to judge."""
        failed = {f.rule for f in self.failures}
        lines = []
        for r in self.rules:
            if r in failed:
                continue
            ratios = [m.ratio for m in self.measures if m.metric == r.metric and m.ratio is not None]
            judged = sum(ratio.known for ratio in ratios)
            lines.append(f"passed {r.text} ({judged} of {len(ratios)} ratios had an interval to judge"
                         + ("; too few repetitions to judge any" if ratios and not judged else "") + ")")
        return lines

    def text(self) -> str:
        """The comparison as a console table, with what differs, unmatched points and the rules."""
        return "\n".join([*self.notes(), *fixed_width(*self.table()), *self.passed(),
                          *(f.text() for f in self.failures)])

    def frame(self) -> pd.DataFrame:
        """One row per point × metric × run: the point's parameters, ``point``, ``metric``, ``run``
        (its label), ``run_dir``, ``median``, ``n``, ``ratio``, ``low``, ``high`` (NaN for the
        baseline and without an interval) and ``verdict``."""
        nan = statistics.Interval(math.nan)
        return pd.DataFrame([{**dict(m.point.params), "point": m.point.label, "metric": m.metric,
                              "run": m.run.label, "run_dir": str(m.run.root), "median": m.median, "n": m.n,
                              "ratio": (m.ratio or nan).estimate, "low": (m.ratio or nan).low,
                              "high": (m.ratio or nan).high, "verdict": m.verdict} for m in self.measures])

    def figure(self, metric: str, path: Path) -> Path:
        """The runs' medians of ``metric`` per point, side by side, with their spread (p1–p99 where
        every point has :data:`BAND_MIN` values, else min–max)."""
        plt = pyplot()
        labels = [p.label for p in self.points]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) + 3) + 3, 4.5))
        width = 0.8 / len(self.runs)
        medians = [stats(r.results, ["_point"], metric).set_index("_point").reindex(labels).dropna(subset=["median"])
                   for r in self.runs]
        low, high = ("p1", "p99") if all(s["n"].min() >= BAND_MIN for s in medians if len(s)) else ("min", "max")
        for i, (run, s) in enumerate(zip(self.runs, medians)):
            x = [labels.index(p) + (i - (len(self.runs) - 1) / 2) * width for p in s.index]
            ax.errorbar(x, s["median"], yerr=[s["median"] - s[low], s[high] - s["median"]], fmt="o", capsize=3,
                        label=f"{run.label}: {run.root.name}")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_ylabel(metric)
        ax.set_title(f"{metric}: median per point and run, bars {low}–{high} (p1–p99 with {BAND_MIN} or more "
                     f"values)", fontsize=10)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        return save(fig, path)

    def html(self, out_dir) -> Path:
        """``out_dir/index.html`` (created): the table and, per metric, a figure (``compare-<metric>.png``)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        figures = [self.figure(m, out / f"compare-{m}.png") for m in self.metrics]
        return write_page(out, f"{len(self.runs)} runs compared", self.notes() + self.passed(),
                          [f.text() for f in self.failures],
                          [("Medians and ratios", *self.table())], figures)


def compare(runs, *, metrics=METRICS, rules=(), same_within: float = statistics.SAME_WITHIN) -> Comparison:
    """Compare two or more run directories (the first is the baseline) at every point they share,
    per metric (lower is better); ``rules``: :class:`Rule` or their text (``"time>5%"``), whose
    metrics are compared too; a ratio within ``same_within`` of 1 reads ``same``. UsageError
    naming the run directory or rule that is wrong."""
    if isinstance(same_within, bool) or not isinstance(same_within, (int, float)) or not 0 <= same_within < 1:
        raise UsageError(f"same within {same_within!r}: give a share of 1 from 0 to below 1 (0.05: 5 %)")
    rules = tuple(r if isinstance(r, Rule) else Rule.parse(r) for r in rules)
    paths = list(runs)
    if len(paths) < 2:
        raise UsageError(f"compare needs two or more run directories (the first is the baseline), got {len(paths)}")
    loaded = [Run.load(p, string.ascii_uppercase[i] if i < 26 else f"R{i + 1}") for i, p in enumerate(paths)]
    metrics = tuple(dict.fromkeys([ALIASES.get(m, m) for m in metrics] + [r.metric for r in rules]))
    for metric in metrics:
        if not any(metric in r.results for r in loaded):
            rule = next((f"rule {r.text!r}: " for r in rules if r.metric == metric), "")
            raise UsageError(f"{rule}no run has a column {metric!r}; metrics: {', '.join(ALIASES)} or a results "
                             f"column (docs/results.md)")
    as_numbers(loaded, metrics)
    differing, keys = configurations(loaded)
    every = points(loaded, keys)
    present = {p.label: tuple(r.label for r in loaded if p.label in set(r.results["_point"])) for p in every}
    matched = [p for p in every if loaded[0].label in present[p.label] and len(present[p.label]) > 1]
    base = loaded[0]
    measures = []
    for point in matched:
        for metric in metrics:
            base_values = base.results.loc[base.results["_point"] == point.label, metric]
            for run in loaded:
                if run.label not in present[point.label]:
                    continue
                values = run.results.loc[run.results["_point"] == point.label, metric]
                ratio = None if run is base else statistics.ratio_of_medians(values, base_values)
                measures.append(Measure(point, metric, run, float(values.median()), int(values.count()), ratio,
                                        same_within))
    failures = [Failure(rule, m, base.label) for rule in rules for m in measures
                if m.metric == rule.metric and m.ratio is not None and rule.fails(m.ratio)]
    return Comparison(loaded, differences(loaded, differing), matched,
                      [Unmatched(p, present[p.label]) for p in every if len(present[p.label]) < len(loaded)],
                      metrics, measures, rules, failures, same_within)
