"""Every run of an experiment on this machine, oldest first: per point (matched as
:mod:`sae.results.analysis.compare` matches them) a series of each metric's median, and conbench's lookback
z-score flagging a run whose median strays from the runs before it:
``z = (median − mean of the previous lookback runs' medians) / their standard deviation``
(sample standard deviation), flagged when ``|z| > threshold``; no z with fewer than
:data:`MIN_EARLIER` earlier runs (a deviation from two or three runs flags ordinary jitter) or
when their medians are all equal. :func:`calibrate` records such runs as an A/A calibration
(:mod:`sae.results.analysis.calibration`)."""
from __future__ import annotations

import dataclasses
import math
import numbers
import statistics as stdlib
import time
from pathlib import Path

import pandas as pd

from metareserve.errors import UsageError

from ..run.provenance import NOT_GIT
from . import calibration as calibrations
from .calibration import Calibration, Identity, RunMedians
from .compare import (METRICS, PARAMETERS, Point, Run, as_numbers, configurations, differences,
                      median_text, points)
from .statistics import MIN_DF, fixed_width

MIN_EARLIER = 5
"""Fewest earlier runs a z-score is computed from."""
FEW = f"fewer than {MIN_EARLIER} earlier runs"
FLAT = "earlier medians all equal"
EMPTY = "no values"
MARKS = {FEW: "-", FLAT: "sd 0", EMPTY: "-"}
"""How a table shows each reason for having no z."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One run's median of one metric at one point (``n`` measured values) with its lookback
    z-score (NaN and ``note`` saying why when there is none) and whether it is ``flagged``."""

    run: Run
    point: Point
    metric: str
    median: float
    n: int
    z: float
    flagged: bool
    note: str = ""

    def z_text(self) -> str:
        """``41.6 !`` (flagged), ``-0.3``, or the mark of why there is none (:data:`MARKS`)."""
        return MARKS[self.note] if self.note else f"{self.z:.1f}{' !' if self.flagged else ''}"


def lookback_z(median: float, earlier: list[float], threshold: float) -> tuple[float, bool, str]:
    """(z, flagged, why there is no z) of ``median`` against the ``earlier`` medians."""
    if math.isnan(median):
        return math.nan, False, EMPTY
    if len(earlier) < MIN_EARLIER:
        return math.nan, False, FEW
    sd = stdlib.stdev(earlier)
    if sd == 0:
        return math.nan, False, FLAT
    z = (median - stdlib.fmean(earlier)) / sd
    return z, abs(z) > threshold, ""


def run_time(run: Run) -> str:
    """When the run's first measured repetition started (local time, to the minute)."""
    start = pd.to_numeric(run.results["start"], errors="coerce").min() if "start" in run.results else math.nan
    return "-" if pd.isna(start) else time.strftime("%Y-%m-%d %H:%M", time.localtime(start))


@dataclasses.dataclass(eq=False)
class History:
    """The runs of ``experiment`` under ``directory`` (oldest first), those skipped and why, what
    differs between them, and every point's :class:`Entry` per run and metric."""

    experiment: str
    directory: Path
    runs: list[Run]
    skipped: list[str]
    differences: list[str]
    points: list[Point]
    metrics: tuple[str, ...]
    entries: list[Entry]
    lookback: int
    threshold: float

    @property
    def flagged(self) -> list[Entry]:
        """The entries whose |z| exceeds the threshold."""
        return [e for e in self.entries if e.flagged]

    def notes(self) -> list[str]:
        return [f"history of {self.experiment} in {self.directory}: {len(self.runs)} runs, oldest first; "
                f"z = (median - mean of the previous {self.lookback} runs' medians) / their standard deviation, "
                f"flagged (!) when |z| > {self.threshold:g}; z is - with {FEW}, sd 0 when the {FLAT}",
                *(f"skipped {s}" for s in self.skipped),
                "what differs: " + ("; ".join(self.differences) or "nothing recorded")]

    def flag_lines(self) -> list[str]:
        """One line per run and point with a flagged metric."""
        lines = {}
        for e in self.flagged:
            lines.setdefault((e.run.label, e.point.label), []).append(
                f"{e.metric} {median_text(e.metric, e.median, e.n)} z {e.z:.1f}")
        return [f"flagged: {run} at {point}: {', '.join(parts)}" for (run, point), parts in lines.items()]

    def tables(self) -> list[tuple[str, list[str], list[list[str]]]]:
        """Per point: a row per run with each metric's median (n) and z."""
        head = ["run", "started", *(h for m in self.metrics for h in (f"{m} (n)", "z"))]
        cells = {(e.point.label, e.metric, e.run.label): e for e in self.entries}
        out = []
        for point in self.points:
            rows = []
            for run in self.runs:
                got = [cells.get((point.label, m, run.label)) for m in self.metrics]
                if any(got):
                    rows.append([run.label, run_time(run), *(c for e in got for c in (
                        (median_text(e.metric, e.median, e.n), e.z_text()) if e else ("-", "-")))])
            out.append((point.label, head, rows))
        return out

    def text(self) -> str:
        """The series as console tables, one per point, after what was skipped and flagged."""
        lines = [*self.notes(), *self.flag_lines()]
        for label, head, rows in self.tables():
            lines += ["", label, *fixed_width(head, rows)]
        return "\n".join(lines)

    def frame(self) -> pd.DataFrame:
        """One row per run × point × metric: the point's parameters, ``point``, ``metric``, ``run``
        (directory name), ``run_dir``, ``started``, ``median``, ``n``, ``z``, ``flagged``, ``note``."""
        return pd.DataFrame([{**dict(e.point.params), "point": e.point.label, "metric": e.metric, "run": e.run.label,
                              "run_dir": str(e.run.root), "started": run_time(e.run), "median": e.median, "n": e.n,
                              "z": e.z, "flagged": e.flagged, "note": e.note} for e in self.entries])


def check(lookback, threshold) -> None:
    """UsageError unless ``lookback`` is an integer ≥ :data:`MIN_EARLIER` and ``threshold`` a finite number > 0."""
    if isinstance(lookback, bool) or not isinstance(lookback, numbers.Integral) or lookback < MIN_EARLIER:
        raise UsageError(f"lookback {lookback!r}: give a whole number of earlier runs, {MIN_EARLIER} or more")
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not math.isfinite(threshold) \
            or threshold <= 0:
        raise UsageError(f"threshold {threshold!r}: give a finite |z| above 0, e.g. 5")


def experiment_dir(path, experiment: str) -> Path:
    """``path/experiment`` (``path`` the results root), or ``path`` itself when it is the
    experiment's directory; UsageError naming both otherwise."""
    for cand in (Path(path) / experiment, Path(path)):
        if cand.is_dir() and cand.name == experiment:
            return cand
    raise UsageError(f"{Path(path) / experiment}: no runs of experiment {experiment!r}; pass the results root "
                     f"'sae run' wrote to (--out) and the experiment's name")


def runs_in(directory: Path) -> tuple[list[Run], list[str]]:
    """The runs in an experiment's ``directory``, oldest first (by name), and why each run without
    results was skipped."""
    runs, skipped = [], []
    for path in sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink()
                       and not p.name.startswith(".")):
        try:
            runs.append(Run.load(path))
        except UsageError as e:
            skipped.append(str(e))
    return runs, skipped


def history(out_root_or_experiment_dir, experiment: str, *, lookback: int = 10, threshold: float = 5.0,
            metrics=METRICS) -> History:
    """Every run of ``experiment`` under the results root (or its own directory), oldest first,
    with each point's series per metric and the lookback z-score of every run (module docstring).
    Runs without results are skipped and named."""
    check(lookback, threshold)
    directory = experiment_dir(out_root_or_experiment_dir, experiment)
    runs, skipped = runs_in(directory)
    if not runs:
        raise UsageError(f"{directory}: no run of {experiment!r} has results yet ({len(skipped)} skipped); "
                         f"run 'sae report DIR' on a finished run")
    metrics = tuple(m for m in metrics if any(m in r.results for r in runs))
    as_numbers(runs, metrics)
    differing, keys = configurations(runs)
    every = points(runs, keys)
    entries = []
    for point in every:
        for metric in metrics:
            earlier = []
            for run in runs:
                values = run.results.loc[run.results["_point"] == point.label, metric]
                if values.empty:
                    continue
                median = float(values.median())
                z, flagged, note = lookback_z(median, earlier[-lookback:], threshold)
                entries.append(Entry(run, point, metric, median, int(values.count()), z, flagged, note))
                if not math.isnan(median):
                    earlier.append(median)
    return History(experiment, directory, runs, skipped, differences(runs, differing, consecutive=True), every,
                   metrics, entries, lookback, threshold)


def _identity(run: Run) -> Identity:
    experiment = str(run.results["experiment"].iloc[0]) if "experiment" in run.results else calibrations.MISSING
    return Identity.of(run.root, run.provenance, experiment)


def _code(run: Run) -> str | None:
    """sae's commit the run ran, or None when that does not say its code (uncommitted changes, no git)."""
    sae = run.provenance.get("sae") or {}
    return sae.get("commit") if sae.get("dirty") is False and sae.get("commit") not in (None, NOT_GIT) else None


def _gather(paths) -> tuple[list[Run], list[Run], list[str]]:
    """The runs named (run directories), those found in experiments' directories, and why each
    run found without results was skipped."""
    named, found, skipped = [], [], []
    for path in paths:
        p = Path(path)
        if p.is_dir() and not (p / "ledger.json").exists() and any((d / "ledger.json").exists() for d in p.iterdir()):
            runs, why = runs_in(p)
            found += runs
            skipped += why
        else:
            named.append(Run.load(p))
    if not named and not found:
        raise UsageError(f"calibrate needs runs: {', '.join(map(str, paths)) or 'none given'} holds none with results")
    return named, found, skipped


def _why_not(run: Run, identity: Identity) -> str:
    """Why ``run`` cannot calibrate the record of ``identity`` ('' when it can)."""
    if not _code(run):
        return (f"{run.root}: ran from a checkout with uncommitted changes (versions.lock sae.dirty), so its code is "
                f"unknown and it cannot calibrate; commit, then run again")
    other = _identity(run)
    return "" if other == identity else (f"{run.root}: another machine, stack or experiment than the calibration's: "
                                         f"{'; '.join(identity.differences(other))}")


def _recorded(runs: list[Run], record: Calibration) -> tuple[list[RunMedians], dict[str, dict]]:
    """Each run's medians per point, and the points (a point the record holds keeps its key)."""
    as_numbers(runs, [m for m in METRICS if any(m in r.results for r in runs)])
    configurations(runs)   # each parameter as text, in _<column>
    columns = [f"_{c}" for c in PARAMETERS]
    measured = {}   # the parameters' text → (run, its rows there)
    for run in runs:
        for _, rows in run.results.groupby(columns, sort=False):
            measured.setdefault(tuple(rows[columns].iloc[0]), []).append((run, rows))
    varying = [c for i, c in enumerate(PARAMETERS) if len({values[i] for values in measured}) > 1]
    points, medians = {}, {id(r): ({}, {}) for r in runs}
    for values, by in measured.items():
        text = dict(zip(PARAMETERS, values))
        key = record.match(text) or calibrations.point_key(text)
        points[key] = record.points.get(key) or {"label": ", ".join(f"{c}={text[c]}" for c in varying) or "all",
                                                 "params": {c: v for c, v in text.items() if v != calibrations.MISSING}}
        for run, rows in by:
            per_metric, n = medians[id(run)]
            per_metric[key] = {m: float(rows[m].median()) for m in METRICS if m in rows and rows[m].notna().any()}
            n[key] = int(rows["total_s"].count()) if "total_s" in rows else len(rows)
    return [RunMedians(r.root.name, str(r.root), _code(r), run_time(r), *medians[id(r)]) for r in runs], points


def calibrate(paths, *, out=None) -> tuple[Calibration, list[str]]:
    """Record runs of one experiment on one machine and stack as an A/A calibration
    (:mod:`sae.results.analysis.calibration`): each path a run directory, or an experiment's directory
    (every run in it, as :func:`history` lists them). The runs are added to the record at ``out``
    (default: the one of their machine, stack and experiment under
    :func:`sae.results.analysis.calibration.home`), which is saved; returns it and what was skipped. A run
    whose code is unknown (uncommitted changes) or whose machine, stack or experiment differs
    from the record's (a new record: the newest run's) is refused in one line when named, and
    skipped and named when found in an experiment's directory; so is a record whose spread
    would have fewer than :data:`~sae.results.analysis.statistics.MIN_DF` degrees of freedom."""
    named, found, skipped = _gather(paths)
    newest = max(named + found, key=lambda r: float(r.results["start"].min()) if "start" in r.results else 0.0)
    if out is not None:
        record = calibrations.load(out) if Path(out).exists() else None
    else:
        record = calibrations.find(_identity(newest))
    record = record or Calibration(_identity(newest), {}, [])
    runs = []
    for run in named + found:
        why = _why_not(run, record.identity)
        if why and run in named:
            raise UsageError(why)
        if why:
            skipped.append(why)
        else:
            runs.append(run)
    if not runs:
        raise UsageError(f"calibrate: none of the runs can calibrate ({'; '.join(skipped)})")
    result = record.merged(*_recorded(runs, record))
    if result.df() < MIN_DF:
        commits = len({r.code for r in result.runs})
        raise UsageError(f"calibrate: {len(result.runs)} runs of {commits} commit{'s' * (commits != 1)} give "
                         f"{result.df()} degrees of freedom of spread; a calibration needs {MIN_DF}: record 3 runs "
                         f"of one commit ('sae run' three times), then calibrate them")
    result.save(out)
    return result, skipped
