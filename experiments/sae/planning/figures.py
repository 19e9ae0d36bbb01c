"""The figures a report can draw, each one :class:`Figure` entry in :data:`FIGURES`: its name (what
an experiment declares in ``Experiment.figures``), the module whose ``plot_<name>`` draws it
(imported when a report draws it: planning loads no matplotlib), whether
every report draws it, and whether it reads Spark's event log (a shared application's log is then
copied into the run). The spec's check, the report and the gallery read them here: adding a
figure is one entry (and its function).

A drawing function takes ``(df, out)`` or ``(run, df, out)`` (the run directory, its results, the
report directory) and returns the path it wrote, a list of paths, or None (nothing to draw).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure: ``name``, the ``module`` whose ``plot_<name>`` draws it (dashes as underscores:
    ``time-composition`` is ``plot_time_composition``), whether every report draws it
    (``standard``) and whether it ``reads_event_log``."""

    name: str
    module: str
    standard: bool = False
    reads_event_log: bool = False

    @property
    def draw(self) -> str:
        """Its drawing function as ``"module:function"``."""
        return f"{self.module}:plot_{self.name.replace('-', '_')}"

    def function(self) -> Callable:
        module, _, name = self.draw.partition(":")
        return getattr(importlib.import_module(module), name)

    def __call__(self, run, df, out: Path) -> list[Path]:
        """Draw it for ``run`` (results ``df``) into ``out``; the paths written."""
        fn = self.function()
        got = fn(run, df, out) if "run" in inspect.signature(fn).parameters else fn(df, out)
        return [] if got is None else [got] if isinstance(got, Path) else list(got)


_DRAWING = "sae.results.drawing"
COMMON = f"{_DRAWING}.figures"       # the figures many runs draw
AXIS = f"{_DRAWING}.axis_figures"     # one experiment's own axis
HOSTS = f"{_DRAWING}.host_figures"    # the host-count axis
INDEXED = f"{_DRAWING}.indexed_figures"   # the key queries and the in-memory readers
WRITES = f"{_DRAWING}.write_figures"      # the write jobs

FIGURES: dict[str, Figure] = {f.name: f for f in (
    *(Figure(name, COMMON) for name in ("selectivity", "compute-side", "points", "alleviation", "resources-disk")),
    *(Figure(name, AXIS) for name in ("bandwidth", "objectsize", "objectsize-selectivity", "backend", "scalability",
                                      "storedcompression", "formats", "versions", "projection", "queries",
                                      "contention", "autoscaler")),
    Figure("batchsize", AXIS, reads_event_log=True),
    Figure("scale", HOSTS),
    *(Figure(name, INDEXED) for name in ("indexed-lookups", "indexed-joins", "indexed-append-reads",
                                         "indexed-appends", "indexed-executor-loss")),
    Figure("writes", WRITES),
    *(Figure(name, COMMON, standard=True) for name in ("time-composition", "storage-phases", "storage-ops",
                                                         "resources")),
)}
"""Every figure by name, the standard ones last (in the order every report draws them)."""


def names() -> tuple[str, ...]:
    """Every figure's name (what ``Experiment.figures`` may hold)."""
    return tuple(FIGURES)


def standard() -> tuple[str, ...]:
    """The figures every report draws after the declared ones (each draws nothing without its data)."""
    return tuple(name for name, f in FIGURES.items() if f.standard)


def get(name: str) -> Figure:
    return FIGURES[name]
