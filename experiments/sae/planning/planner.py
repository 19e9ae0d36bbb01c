"""The planner: sweep points in an order that rebuilds the stack and redeploys data as rarely as
possible, the stage steps each point needs, and a rough ETA. Pure: touches nothing."""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json

from rados_deploy import CephOptions

from .spec import DRIFT_MIN, Experiment, PointSpec, validate
from .stages import APP_ETA, REP_ETA, STAGES

DRIFT_SUFFIX = "-drift"
"""The drift check's point id: its reference's id and this (``Experiment.drift``)."""


def digest(value, n: int = 12) -> str:
    """Short stable hash of a JSON-serialisable value."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


START_CEPH = {"pg_autoscale": False, "class_arrow": CephOptions.class_arrow, "rgw": False}
"""Ceph fields the start stage switches on a running stack (not a new stack), with their
defaults; each joins a point's start key only when it differs from its default, so the keys of
plans written before it stay."""


@dataclasses.dataclass
class PlannedPoint:
    """One sweep point: its sweep index, id (hash of its parameters), axes and resolved
    :class:`PointSpec`, and the keys of what it needs deployed (stack = nodes + layout + Ceph +
    monitoring; start = what the start stage puts in force on a stack: Spark options and Ceph's
    pool settings (:data:`START_CEPH`); data) and of its hosts' capacities (``shape_key``:
    cluster capacities, put in force in place)."""

    index: int
    id: str
    axes: dict
    spec: PointSpec
    stack_key: str
    start_key: str
    data_key: str
    shape_key: str = ""
    repetitions: int | None = None
    """This point's repetitions, warm-ups included (``Sweep.repetitions``; plans written before
    they could differ: None until :meth:`Plan.from_dict` sets the plan's)."""
    drift_of: str | None = None
    """The drift check (``Experiment.drift``): the id of the reference point this one runs again
    at the end of the run (same parameters; its repetitions are numbered after the reference's)."""

    @classmethod
    def of(cls, index: int, axes: dict, spec: PointSpec, repetitions: int | None = None) -> "PlannedPoint":
        """The planned point of a resolved one: its id and deployment keys from its parameters."""
        params = spec.params()
        hosts = {"nodes": spec.cluster.nodes, "layout": spec.cluster.layout}
        ceph = {k: v for k, v in params["ceph"].items() if k not in START_CEPH}
        stack = digest([hosts, ceph, params["monitor"]])
        start = [stack, params["spark"]] + [{k: params["ceph"][k]} for k, default in START_CEPH.items()
                                            if params["ceph"][k] != default]
        return cls(index=index, id=digest(params, 8), axes=axes, spec=spec, stack_key=stack,
                   start_key=digest(start), data_key=digest([stack, params["data"]]),
                   shape_key=digest([hosts, spec.cluster.capacity_params]), repetitions=repetitions)

    @property
    def app_key(self) -> str:
        """What a live Spark application depends on, so a shared one outlives no change of it: the
        stack, the Spark options, the object class's Arrow (a switch restarts the OSDs) and the
        hosts' cores and memory (a JVM sizes its thread pools and heap by them at start). Not the
        pool autoscaler, the link's rate or the storage side's second tenants: none changes
        anything the application set up."""
        c = self.spec.cluster.capacity_params   # the stack key names the hosts and their roles
        return digest([self.stack_key, self.spec.params()["spark"], self.spec.ceph.class_arrow,
                       c["cores"], c["host_memory"]])

    def to_dict(self) -> dict:
        return {"index": self.index, "id": self.id, "axes": self.axes, "params": self.spec.params(),
                "stack_key": self.stack_key, "start_key": self.start_key, "data_key": self.data_key,
                "shape_key": self.shape_key, "repetitions": self.repetitions, "drift_of": self.drift_of}

    @classmethod
    def from_dict(cls, data: dict) -> "PlannedPoint":
        """The point ``to_dict`` wrote (plans written before capacities existed have no shape key;
        before Ceph's pool settings joined the Spark options, the start key was ``spark_key``)."""
        fields = dict(data)
        if "spark_key" in fields:
            fields["start_key"] = fields.pop("spark_key")
        spec = PointSpec.from_params(fields.pop("params"), f"plan point {data['id']}")
        return cls(**fields, spec=spec)


@dataclasses.dataclass
class Step:
    """One stage action: ``stage`` for ``point`` (None: the whole run), and why it is needed."""

    stage: str
    point: str | None
    reason: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Plan:
    """The ordered plan of an experiment run (what ``sae plan`` prints and ``sae run`` follows)."""

    experiment: str
    profile: str | None
    repetitions: int
    warmup: int
    points: list[PlannedPoint]
    steps: list[Step]
    eta_seconds: float
    figures: tuple[str, ...] = Experiment.figures
    """The figures the experiment declared (plans written before they were declared: the default)."""

    def point(self, point_id: str) -> PlannedPoint:
        return next(p for p in self.points if p.id == point_id)

    @property
    def order(self) -> list[str]:
        """Point ids in execution order."""
        return [p.id for p in self.points]

    def to_dict(self) -> dict:
        return {"version": 1, "experiment": self.experiment, "profile": self.profile,
                "repetitions": self.repetitions, "warmup": self.warmup,
                "eta_seconds": round(self.eta_seconds), "order": self.order,
                "points": [p.to_dict() for p in self.points],
                "steps": [s.to_dict() for s in self.steps], "figures": list(self.figures)}

    @classmethod
    def from_dict(cls, data: dict) -> "Plan":
        """The plan ``to_dict`` wrote (e.g. a run directory's plan.yaml)."""
        points = [PlannedPoint.from_dict(p) for p in data["points"]]
        for p in points:
            p.repetitions = p.repetitions or data["repetitions"]
        return cls(data["experiment"], data["profile"], data["repetitions"], data["warmup"],
                   points, [Step(**s) for s in data["steps"]],
                   data["eta_seconds"], tuple(data.get("figures", Experiment.figures)))

    def text(self) -> str:
        """Human-readable plan: points in order, then numbered steps, then the ETA."""
        counts = sorted({p.repetitions for p in self.points if not p.drift_of})
        each = f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else f"{counts[0] if counts else self.repetitions}"
        drift = sum(1 for p in self.points if p.drift_of)
        lines = [f"experiment {self.experiment} (profile {self.profile or '-'}): {len(self.points) - drift} points"
                 f" x {each} repetitions ({self.warmup} warm-up){' + the drift check' if drift else ''}"]
        for n, p in enumerate(self.points, 1):
            axes = " ".join(f"{k}={v}" for k, v in p.axes.items()) or "(no sweep axes)"
            own = f"  x {p.repetitions}" if len(counts) > 1 or p.drift_of else ""
            own += f"  (drift check: point {self.points.index(self.point(p.drift_of)) + 1} again)" if p.drift_of else ""
            lines.append(f"  point {n:>2} {p.id}  {axes}{own}")
        lines.append("steps:")
        for n, s in enumerate(self.steps, 1):
            lines.append(f"  {n:>3}. {s.stage:<10} {s.point or '-':<12} {s.reason}")
        m, sec = divmod(int(self.eta_seconds), 60)
        lines.append(f"ETA ~{m}m{sec:02d}s (rough, local-cluster figures; nothing was run)")
        return "\n".join(lines)


def plan(experiment: Experiment, *, profile: str | None = None, teardown: bool = False) -> Plan:
    """Validate ``experiment`` (already with its profile applied) and order its points.

    Points are grouped by stack (nodes, layout, Ceph, monitoring), then data, then Spark
    options, then host capacities, each group in first-appearance order, so every distinct stack
    is built once, every dataset deployed once per stack, and capacities change as rarely as
    possible (each change is a ``shape`` step: capacities put in force and measured). The
    datasets of consecutive points that share Spark options and capacities are generated and
    deployed before their runs, so those runs share one warm Spark application. Each stage's
    steps go where its entry says (:data:`sae.planning.stages.STAGES`); with ``teardown`` the
    plan ends with stop/release.
    """
    points = [PlannedPoint.of(i, axes, spec, experiment.sweep.repetitions_of(axes, experiment.repetitions))
              for i, (axes, spec) in enumerate(validate(experiment))]
    first = {}
    for p in points:
        for key in (p.stack_key, p.data_key, p.start_key, p.shape_key):
            first.setdefault(key, p.index)
    points.sort(key=lambda p: (first[p.stack_key], first[p.data_key], first[p.start_key], first[p.shape_key],
                               p.index))
    if experiment.drift:   # the first point of the last stack (a stack is never built twice)
        ref = next(p for p in points if p.stack_key == points[-1].stack_key)
        points.append(dataclasses.replace(ref, id=f"{ref.id}{DRIFT_SUFFIX}", drift_of=ref.id,
                                          repetitions=max(ref.repetitions - experiment.warmup, DRIFT_MIN)))
    steps = [Step(s.name, None, s.why(None)) for s in STAGES.values() if s.scope == "head"]
    seen = {name: set() for name in STAGES}
    last = {name: [] for name in STAGES}
    middle = [s for s in STAGES.values() if s.scope in ("group", "point")]
    for group in _app_groups(points):
        for scope, run in itertools.groupby(middle, key=lambda s: s.scope):   # point stages point by point
            run = list(run)
            for p in group if scope == "point" else group[:1]:
                steps += [Step(s.name, p.id, s.why(p)) for s in run if s.due(p, seen[s.name], last[s.name])]
    steps += [Step(s.name, None, s.why(None)) for s in STAGES.values()
              if s.scope == "tail" and (teardown or not s.teardown)]
    eta = sum(STAGES[s.stage].eta for s in steps) + len({p.start_key for p in points}) * APP_ETA + sum(
        p.repetitions for p in points) * (REP_ETA + experiment.pause)
    return Plan(experiment.name, profile, experiment.repetitions, experiment.warmup, points, steps, eta,
                tuple(experiment.figures))


def _app_groups(points: list[PlannedPoint]) -> list[list[PlannedPoint]]:
    """Consecutive points with the same stack, Spark options and capacities (one warm
    application's share)."""
    groups: list[list[PlannedPoint]] = []
    for p in points:
        if groups and (groups[-1][0].stack_key, groups[-1][0].start_key, groups[-1][0].shape_key) == \
                (p.stack_key, p.start_key, p.shape_key):
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups
