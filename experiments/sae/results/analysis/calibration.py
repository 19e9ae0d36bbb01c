"""A/A calibration: how far each point's median moves from one run to the next on one machine and
stack, recorded once and consulted by every comparison of runs (:mod:`sae.results.analysis.compare`) and by
the report's caveat on its intervals (:func:`caveat`).

A record covers one experiment on one machine and stack (:class:`Identity`). It holds, per run,
each point's median of each metric and the number of measured repetitions behind it, the point
known by its parameters. sae's own code is not part of the identity (a comparison judges code):
the runs of one sae commit form a group, and a point's run-to-run spread is the variance of the
logs of its run medians about their group's mean, pooled over the groups
(:class:`~sae.results.analysis.statistics.Spread`), so runs of several commits calibrate together without
their differences counting as spread. A run from a checkout with uncommitted changes cannot
calibrate: two such runs need not have run the same code.

Records live in ``$SAE_HOME/calibrations/<experiment>-<identity key>.yaml``; ``sae calibrate``
writes them (:func:`sae.results.analysis.history.calibrate`, adding runs to what a record holds) and a
comparison finds its baseline's with :func:`find`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from pathlib import Path

import yaml

from metareserve.errors import UsageError
from metareserve.model import read_yaml

from ..run.directory import RunDir, load_results
from .statistics import CONFIDENCE, MIN_DF, Spread, logs

VERSION = 1
CONTROLLER_PACKAGES = ("pyspark", "pyarrow", "pandas")
"""The controller's packages a stack is known by (sae's own packages move with its code)."""
NODE_SOFTWARE = ("ceph", "kernel", "os")
"""Each node's software and platform a stack is known by (versions.lock ``nodes``)."""
MISSING = "-"
"""How a parameter a run has no column for reads (:func:`sae.results.analysis.compare.value_text`)."""


def home() -> Path:
    """Where records are kept: ``$SAE_HOME/calibrations`` (default ``~/.sae/calibrations``)."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "calibrations"


def _flat(prefix: str, value) -> dict[str, str]:
    """A nested mapping as ``a.b.c`` → text, for naming differences."""
    if isinstance(value, dict):
        return {k: v for key, sub in value.items() for k, v in _flat(f"{prefix}.{key}", sub).items()}
    return {prefix: str(value)}


@dataclasses.dataclass(frozen=True)
class Identity:
    """What a calibration is valid for: the ``experiment``, the ``machine`` (``controller``, the
    host the runs were controlled from, as their lease recorded it, and each node's CPU model and
    count) and the ``stack`` (the controller's :data:`CONTROLLER_PACKAGES`, each node's
    :data:`NODE_SOFTWARE`, and what each Spark's nodes ran: Spark, JDK, Python, pyarrow)."""

    experiment: str
    machine: dict
    stack: dict

    @classmethod
    def of(cls, root, provenance: dict, experiment: str) -> "Identity":
        """The identity of the run at ``root`` with ``provenance`` (its versions.lock)."""
        held = RunDir(root).lease_holder()
        nodes = {n: v for n, v in (provenance.get("nodes") or {}).items() if isinstance(v, dict)}
        controller = provenance.get("controller") or {}
        machine = {"controller": held[1].host if held else MISSING,
                   "nodes": {n: f"{v.get('cpu_model', MISSING)}, {v.get('cpus', MISSING)} CPUs"
                             for n, v in nodes.items()}}
        stack = {"controller": {k: str(controller.get(k, MISSING)) for k in CONTROLLER_PACKAGES},
                 "nodes": {n: {k: str(v.get(k, MISSING)) for k in NODE_SOFTWARE} for n, v in nodes.items()},
                 "spark": {str(version): {n: {k: str(x) for k, x in sw.items()} for n, sw in per_node.items()
                                          if isinstance(sw, dict)}
                           for version, per_node in (provenance.get("spark") or {}).items()
                           if isinstance(per_node, dict)}}
        return cls(experiment, machine, stack)

    @property
    def key(self) -> str:
        """12 hex digits naming the machine and stack."""
        text = json.dumps({"machine": self.machine, "stack": self.stack}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def differences(self, other: "Identity") -> list[str]:
        """What differs from ``other``, one ``what this -> other`` phrase each."""
        out = [f"experiment {self.experiment} -> {other.experiment}"] if self.experiment != other.experiment else []
        mine = {**_flat("machine", self.machine), **_flat("stack", self.stack)}
        theirs = {**_flat("machine", other.machine), **_flat("stack", other.stack)}
        return out + [f"{k} {mine.get(k, MISSING)} -> {theirs.get(k, MISSING)}" for k in sorted(set(mine) | set(theirs))
                      if mine.get(k) != theirs.get(k)]


def point_key(params: dict[str, str]) -> str:
    """12 hex digits naming a point by its parameters (as text)."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def matches(recorded: dict[str, str], params: dict[str, str]) -> bool:
    """Whether two points' parameters (as text) agree on every parameter both know (a parameter
    added to sae after a record was made does not keep it from matching)."""
    return all(recorded[k] == v for k, v in params.items()
               if k in recorded and MISSING not in (v, recorded[k]))


@dataclasses.dataclass(frozen=True)
class RunMedians:
    """One calibration run: its directory's ``name`` and ``path`` when recorded, sae's commit it
    ran (``code``), when it ``started``, and per point (by key) each metric's median and the
    number of measured repetitions (``n``)."""

    name: str
    path: str
    code: str
    started: str
    medians: dict[str, dict[str, float]]
    n: dict[str, int]


@dataclasses.dataclass
class Calibration:
    """A record: its :class:`Identity`, its points (key → ``label``, the parameters that vary
    among them, and ``params``, every parameter as text) and its :class:`RunMedians`."""

    identity: Identity
    points: dict[str, dict]
    runs: list[RunMedians]
    path: Path | None = None

    def match(self, params: dict[str, str]) -> str | None:
        """The key of the one recorded point whose parameters agree with ``params`` (:func:`matches`);
        None when none or several do."""
        found = [k for k, p in self.points.items() if matches(p["params"], params)]
        return found[0] if len(found) == 1 else None

    def spread(self, key: str, metric: str) -> Spread:
        """The run-to-run spread of ``metric`` at point ``key``, pooled over the groups of runs of
        one commit."""
        groups: dict[str, list[float]] = {}
        for run in self.runs:
            value = run.medians.get(key, {}).get(metric)
            if value is not None and not math.isnan(value):
                groups.setdefault(run.code, []).append(value)
        return Spread.of(logs(g) for g in groups.values())

    def metrics(self) -> list[str]:
        """The metrics the record holds, in the order first recorded."""
        return list(dict.fromkeys(m for run in self.runs for per in run.medians.values() for m in per))

    def df(self) -> int:
        """The most degrees of freedom any point-metric's spread has."""
        return max((self.spread(k, m).df for k in self.points for m in self.metrics()), default=0)

    def describe(self) -> str:
        """``6 runs of selectivity (1 commit) on this machine and stack, recorded in PATH``."""
        commits = len({r.code for r in self.runs})
        where = f", recorded in {self.path}" if self.path else ""
        return (f"{len(self.runs)} runs of {self.identity.experiment} ({commits} commit{'s' * (commits != 1)}) on "
                f"this machine and stack{where}")

    def bands(self, confidence: float = CONFIDENCE) -> list[list[str]]:
        """Per point and metric: how far one run's median strays (±%, :meth:`Spread.band`) and
        the degrees of freedom behind it."""
        rows = []
        for key, point in self.points.items():
            for metric in self.metrics():
                s = self.spread(key, metric)
                band = s.band(confidence)
                rows.append([point["label"], metric, "-" if math.isnan(band) else f"±{band:.1%}", str(s.df)])
        return rows

    def merged(self, runs: list[RunMedians], points: dict[str, dict]) -> "Calibration":
        """This record with ``runs`` added (a run it holds already, by name and start, replaced)."""
        new = {(r.name, r.started) for r in runs}
        return Calibration(self.identity, {**self.points, **points},
                           [r for r in self.runs if (r.name, r.started) not in new] + runs, self.path)

    def to_dict(self) -> dict:
        return {"version": VERSION, "experiment": self.identity.experiment, "machine": self.identity.machine,
                "stack": self.identity.stack, "points": self.points,
                "runs": [dataclasses.asdict(r) for r in self.runs]}

    def save(self, path=None) -> Path:
        """Write the record (atomically) to ``path``, else where it was loaded from, else
        :func:`home`; returns the path."""
        path = Path(path or self.path or home() / f"{self.identity.experiment}-{self.identity.key}.yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))
        os.replace(tmp, path)
        self.path = path
        return path


def load(path) -> Calibration:
    """The record at ``path``; UsageError naming it when it is missing or not a record."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no calibration record there; 'sae calibrate RUN RUN RUN' records one")
    data = read_yaml(path, "calibration record")
    try:
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}, this sae reads {VERSION}")
        identity = Identity(str(data["experiment"]), dict(data["machine"]), dict(data["stack"]))
        points = {str(k): {"label": str(p["label"]), "params": {str(a): str(b) for a, b in p["params"].items()}}
                  for k, p in data["points"].items()}
        runs = [RunMedians(str(r["name"]), str(r["path"]), str(r["code"]), str(r["started"]),
                           {str(k): {str(m): float(v) for m, v in ms.items()} for k, ms in r["medians"].items()},
                           {str(k): int(v) for k, v in r["n"].items()}) for r in data["runs"]]
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        what = f"no {e}" if isinstance(e, KeyError) else str(e)
        raise UsageError(f"{path}: not a calibration record ({what}); record it again with 'sae calibrate'") from None
    return Calibration(identity, points, runs, path)


def find(identity: Identity) -> Calibration | None:
    """The record of ``identity`` in :func:`home`, or None."""
    path = home() / f"{identity.experiment}-{identity.key}.yaml"
    return load(path) if path.is_file() else None


def caveat(path, metric: str = "total_s", confidence: float = CONFIDENCE) -> str:
    """One sentence on what a run's intervals hold, for its report: ``within-run only`` (no record
    of its machine, stack and experiment with :data:`MIN_DF` degrees of freedom), or ``calibrated
    on N runs`` with how far a point's median ``metric`` moves from run to run (the widest band
    over the record's points)."""
    run = RunDir.find(path)
    experiment = (run.read_yaml(run.plan) or {}).get("experiment") or \
        next(iter(load_results(run.root).get("experiment", [])), MISSING)
    try:
        record = find(Identity.of(run.root, run.read_yaml(run.versions) or {}, experiment))
    except UsageError:   # a damaged record of the run's: nothing to match a calibration by
        record = None
    bands = [record.spread(k, metric).band(confidence) for k in record.points] if record else []
    bands = [b for b in bands if not math.isnan(b)]
    if not bands:
        return (f"within-run only: the intervals hold the spread of this run's repetitions, not how far a point's "
                f"median moves from one run to the next on this machine (no calibration of {experiment} on this "
                f"machine and stack with {MIN_DF + 1} runs or more; 'sae calibrate' records one)")
    return (f"calibrated on {len(record.runs)} runs ({record.path}): from one run to the next a point's median "
            f"{metric} moves by up to ±{max(bands):.0%} ({confidence:.0%}, the widest over its points), which an "
            f"interval of this run does not hold")
