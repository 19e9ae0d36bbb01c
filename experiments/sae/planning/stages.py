"""The stages of a run, each one :class:`Stage` entry in :data:`STAGES`: its name, the built-in
function that does it (``"module:function"``, imported when the stage runs: planning imports no
runner), where the planner puts its steps and why, its rough time, whether ``--skip`` may
leave it out, and what its steps take of what earlier steps gave and what they give. The planner,
the runner, ``--skip`` and the check of an experiment's own stage functions all read them here:
adding a stage is one entry (and its function).
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Callable

from metareserve import format_size

from .capacities import LOCAL_DEFAULTS

if TYPE_CHECKING:
    from .planner import PlannedPoint

SCOPES = ("head", "group", "point", "tail")
"""Where a stage's steps go: ``head``, once before every point; ``group``, for the first point of
each application group (consecutive points sharing stack, Spark options and capacities: one warm
Spark application); ``point``, for each point of a group; ``tail``, once after every point."""
OUTPUTS = ("hosts", "stack")
"""What a step may give the steps after it (``sae.running.context.StageResult``): the reserve
stage's hosts (reservation, connections, lease) and the live stack (the deployers)."""
WHEN = ("new", "change")
"""When a keyed stage's step is due: the point's key has a value no earlier step of the stage had
(``new``), or another value than the stage's last group or point had (``change``)."""


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage: ``name``, its built-in ``function`` (``"module:function"``, taking a
    ``sae.running.context.StageInput`` and returning a ``StageResult``; an experiment may replace
    it with its own of the same shape), ``scope`` (:data:`SCOPES`) and, for a group or point
    stage, the planned point's ``key`` its step is due by ``when`` (:data:`WHEN`; None: every
    time), ``why`` (the step's reason, from its point; None for head and tail stages), ``eta``
    (rough seconds on the local cluster, a first run), whether ``--skip`` may leave it out,
    whether it runs only with ``teardown``, and of :data:`OUTPUTS` what its input carries
    (``takes``) and what its result may give (``gives``; the runner refuses anything else)."""

    name: str
    function: str
    scope: str
    why: Callable[["PlannedPoint | None"], str]
    eta: float
    key: str | None = None
    when: str = "new"
    skippable: bool = True
    teardown: bool = False
    takes: tuple = ()
    gives: tuple = ()

    def __post_init__(self):
        if self.scope not in SCOPES or self.when not in WHEN or ":" not in self.function \
                or not {*self.takes, *self.gives} <= set(OUTPUTS):
            raise ValueError(f"stage {self.name}: scope one of {SCOPES}, when one of {WHEN}, function "
                             f"'module:function', takes and gives of {OUTPUTS}, not {self.scope!r}, "
                             f"{self.when!r}, {self.function!r}, {self.takes!r}, {self.gives!r}")

    def builtin(self) -> Callable:
        """The built-in function (imported now)."""
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)

    def due(self, point: "PlannedPoint", seen: set, last: list) -> bool:
        """Whether ``point`` needs this stage's step, given the key values its earlier steps saw
        (``seen``) and had last (``last``, one item or none); records the point's value."""
        if self.key is None:
            return True
        value = getattr(point, self.key)
        due = value not in seen if self.when == "new" else not last or last[0] != value
        seen.add(value)
        last[:] = [value]
        return due


def _capacities(point: "PlannedPoint") -> str:
    given = {k: v for k, v in point.spec.cluster.capacity_params.items() if v is not None and v != 0}
    return "host capacities: " + (", ".join(f"{k}={v}" for k, v in given.items()) or
                                  "the provider's defaults (local: "
                                  + ", ".join(f"{k}={v}" for k, v in LOCAL_DEFAULTS.items()) + ")")


def describe(point: "PlannedPoint", *sections: str) -> str:
    """The point's non-default fields of ``sections``, sizes written as sizes (capacities, which
    shape steps put in force, left out)."""
    from .spec import SIZES   # the spec checks experiments' stages against these entries
    params = point.spec.params()
    shaped = point.spec.cluster.capacity_params
    return ", ".join(f"{k}={format_size(v) if k in SIZES else v}" for s in sections
                     for k, v in params[s].items() if v not in (None, {}) and not (s == "cluster" and k in shaped))


def _start(point: "PlannedPoint") -> str:
    ceph = point.spec.ceph
    return (f"start Ceph, Spark, monitoring: {describe(point, 'spark')}; ceph pg_autoscale={ceph.pg_autoscale}, "
            f"class_arrow={ceph.class_arrow}")


def _run(point: "PlannedPoint") -> str:
    if point.drift_of:
        return f"drift check: {point.repetitions} repetitions of point {point.drift_of} again"
    return f"{point.repetitions} repetitions in one Spark application"


_HERE = "sae.running.stages"
_BOTH, _STACK = ("hosts", "stack"), ("stack",)
STAGES = {s.name: s for s in (
    Stage("reserve", f"{_HERE}:stage_reserve", "head", lambda _: "nodes for the largest point", 5, skippable=False,
          gives=("hosts",)),
    Stage("distribute", f"{_HERE}:stage_distribute", "head", lambda _: "roles to nodes (layout)", 1, takes=("hosts",)),
    Stage("shape", f"{_HERE}:stage_shape", "group", _capacities, 8, key="shape_key", when="change", takes=_BOTH),
    Stage("install", f"{_HERE}:stage_install", "group",
          lambda p: "new stack: " + describe(p, "cluster", "ceph", "monitor"), 60, key="stack_key",
          takes=_BOTH, gives=_STACK),
    Stage("start", f"{_HERE}:stage_start", "group", _start, 30, key="start_key", when="change",
          takes=_BOTH, gives=_STACK),
    Stage("generate", f"{_HERE}:stage_generate", "point", lambda p: "dataset " + describe(p, "data"), 5,
          key="data_key"),
    Stage("deploy", f"{_HERE}:stage_deploy", "point", lambda _: "deploy the dataset into CephFS", 10, key="data_key",
          takes=_BOTH, gives=_STACK),
    Stage("build", f"{_HERE}:stage_build", "group", lambda _: "connector and object class for this stack", 25,
          key="stack_key", takes=_BOTH, gives=_STACK),
    Stage("run", f"{_HERE}:stage_run", "point", _run, 2, skippable=False, takes=_BOTH, gives=_STACK),
    Stage("aggregate", f"{_HERE}:stage_aggregate", "tail", lambda _: "results.parquet and report", 5),
    Stage("stop", f"{_HERE}:stage_stop", "tail", lambda _: "stop the stack", 15, teardown=True, takes=_STACK),
    Stage("release", f"{_HERE}:stage_release", "tail", lambda _: "release the nodes", 5, teardown=True,
          takes=_BOTH),
)}
"""Every stage by name, in the order a run's steps take them."""
APP_ETA, REP_ETA = 30, 1.5
"""Rough seconds per Spark application (points sharing stack and Spark options share one) and per
repetition besides the pause."""
