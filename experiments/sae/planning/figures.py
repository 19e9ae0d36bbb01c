"""The figures a report can draw, each one :class:`Figure` entry in :data:`FIGURES`: its name (what
an experiment declares in ``Experiment.figures``), the function that draws it
(``"module:function"``, imported when a report draws it: planning loads no matplotlib), whether
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
    """One figure: ``name``, its drawing function ``draw`` (``"module:function"``), whether every
    report draws it (``standard``) and whether it ``reads_event_log``."""

    name: str
    draw: str
    standard: bool = False
    reads_event_log: bool = False

    def __post_init__(self):
        if ":" not in self.draw:
            raise ValueError(f"figure {self.name}: draw must be 'module:function', not {self.draw!r}")

    def function(self) -> Callable:
        module, _, name = self.draw.partition(":")
        return getattr(importlib.import_module(module), name)

    def __call__(self, run, df, out: Path) -> list[Path]:
        """Draw it for ``run`` (results ``df``) into ``out``; the paths written."""
        fn = self.function()
        got = fn(run, df, out) if "run" in inspect.signature(fn).parameters else fn(df, out)
        return [] if got is None else [got] if isinstance(got, Path) else list(got)


_FIGURES = "sae.results.drawing.figures"
_AXIS = "sae.results.drawing.axis_figures"

FIGURES: dict[str, Figure] = {f.name: f for f in (
    Figure("selectivity", f"{_FIGURES}:plot_selectivity"),
    Figure("compute-side", f"{_FIGURES}:plot_compute_side"),
    Figure("bandwidth", f"{_AXIS}:plot_bandwidth"),
    Figure("objectsize", f"{_AXIS}:plot_objectsize"),
    Figure("objectsize-selectivity", f"{_AXIS}:plot_objectsize_selectivity"),
    Figure("backend", f"{_AXIS}:plot_backend"),
    Figure("scalability", f"{_AXIS}:plot_scaling"),
    Figure("batchsize", f"{_AXIS}:plot_batchsize", reads_event_log=True),
    Figure("storedcompression", f"{_AXIS}:plot_storedcompression"),
    Figure("formats", f"{_AXIS}:plot_formats"),
    Figure("versions", f"{_AXIS}:plot_versions"),
    Figure("projection", f"{_AXIS}:plot_projection"),
    Figure("points", f"{_FIGURES}:plot_points"),
    Figure("alleviation", f"{_FIGURES}:plot_alleviation"),
    Figure("resources-disk", f"{_FIGURES}:plot_devices"),
    Figure("queries", f"{_AXIS}:plot_queries"),
    Figure("contention", f"{_AXIS}:plot_contention"),
    Figure("autoscaler", f"{_AXIS}:plot_autoscaler"),
    Figure("scale", "sae.results.drawing.host_figures:plot_hosts"),
    Figure("time-composition", f"{_FIGURES}:plot_time_composition", standard=True),
    Figure("storage-phases", f"{_FIGURES}:plot_storage_phases", standard=True),
    Figure("storage-ops", f"{_FIGURES}:plot_storage_ops", standard=True),
    Figure("resources", f"{_FIGURES}:plot_resources", standard=True),
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
