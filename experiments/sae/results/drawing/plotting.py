"""What every figure draws with: how a configuration is labelled and coloured, the spread every
figure draws (:func:`whiskers`, by :data:`SPREAD_RULE`), labelled log axes, legends outside the
data, and where a figure is saved (with its notes and, inside :func:`stamping`, the run it comes
from; kept as a matplotlib Figure too inside :func:`keeping_figures`); the statistics it draws are
:mod:`sae.results.analysis.measured`'s. Below :mod:`sae.results.drawing.figures` and every other
drawing module. matplotlib is imported by the first figure drawn (:func:`pyplot`), so ``import sae``
and every command that draws nothing load no figure library (a third of the import's time)."""
from __future__ import annotations

import contextlib
import contextvars
import functools
from pathlib import Path

import numpy as np
import pandas as pd

from ...planning import readers
from ..analysis.measured import BAND_MIN, CONFIG, shown, varying


@functools.cache
def pyplot():
    """matplotlib's pyplot on the Agg backend (figures to files, no display), imported once, by the
    first figure drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


SPREAD_RULE = (f"whiskers: p1–p99 of the measured repetitions where a point has {BAND_MIN} or more, "
               f"else their min–max")
"""How every figure's whiskers read (:func:`whiskers`), written under the figure."""


def whiskers(s: pd.DataFrame, scale: float = 1.0) -> np.ndarray:
    """Error bars (``yerr``: below and above the median) of
    :func:`~sae.results.analysis.measured.stats` rows by :data:`SPREAD_RULE`: p1 and p99 where a
    point has :data:`BAND_MIN` measured values or more (fewer: its p1 and p99 are only its min and
    max, so those are drawn and said)."""
    enough = (s["n"] >= BAND_MIN).to_numpy()
    low = np.where(enough, s["p1"], s["min"]) / scale
    high = np.where(enough, s["p99"], s["max"]) / scale
    median = s["median"].to_numpy(dtype=float) / scale
    return np.clip(np.vstack([median - low, high - median]), 0, None)


def log_axis(ax, axis: str = "y") -> None:
    """A log scale (call it once the data are drawn) whose ticks are labelled in plain numbers at 1,
    2 and 5 of each decade, or at every integer multiple where the data span less than a decade
    (a decade-only axis labels one tick or none in a narrow range)."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter
    which = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    narrow = low > 0 and high / low < 10
    which.set_major_locator(LogLocator(subs=tuple(range(1, 10)) if narrow else (1.0, 2.0, 5.0)))
    which.set_major_formatter(FormatStrFormatter("%g"))
    which.set_minor_formatter(NullFormatter())


def legend_outside(ax, **kwargs) -> None:
    """The axes' legend to the right of it, where it covers no data (:func:`save` keeps it in the
    image)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize="small", **kwargs)


def figure_legend(fig, axes, extra=(), **kwargs) -> None:
    """One legend for a figure of panels that share their configurations, to the right of the
    panels: each label once, as the panels drew it, then ``extra`` (handle, label) pairs."""
    seen: dict[str, object] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    seen.update({label: handle for handle, label in extra})
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="upper left", bbox_to_anchor=(1.0, 0.95),
                   fontsize="small", frameon=False, **kwargs)


def selectivity_axis(ax, values) -> None:
    """A log selectivity axis with a tick at every measured selectivity (1, 10, 50, 100 visible),
    linear if a selectivity is not positive."""
    values = sorted({float(v) for v in values if not pd.isna(v)})
    if values and values[0] > 0:
        ax.set_xscale("log")
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.minorticks_off()
    ax.set_xlabel("selectivity (% of rows kept, log scale)" if values and values[0] > 0
                  else "selectivity (% of rows kept)")


def config_label(row, keys) -> str:
    """A configuration's legend label: the reader's label, ``<s> %`` for the selectivity and
    ``key=value`` for the other ``keys``."""
    return ", ".join(readers.get(row[k]).label if k == "reader" else f"{row[k]:g} %" if k == "selectivity"
                     else f"{k}={shown(k, row[k])}" for k in keys) or "all"


def config_colour(row, keys) -> str | None:
    """The reader's colour when the reader is all that tells configurations apart, else None
    (matplotlib's cycle)."""
    return readers.get(row["reader"]).colour if list(keys) == ["reader"] else None


def grouped_bars(ax, s: pd.DataFrame, keys: list[str], column: str = "median", scale: float = 1.0,
                 yerr: np.ndarray | None = None) -> None:
    """``s``'s ``column`` (a row per configuration of ``keys``) as bars grouped on the x axis by
    every key but the reader, one bar per reader in its colour within each group (each
    configuration a bar of its own where the reader does not vary); ``yerr``: as
    :func:`whiskers` returns, per row of ``s``."""
    by_reader = "reader" in keys
    rest = [k for k in keys if k != "reader"]
    labels = list(dict.fromkeys(config_label(r, rest) for _, r in s.iterrows()))
    names = sorted(set(s["reader"]), key=readers.order) if by_reader else [None]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        part = s[s["reader"] == name] if by_reader else s
        x = np.array([labels.index(config_label(r, rest)) for _, r in part.iterrows()], dtype=float)
        errs = None if yerr is None else yerr[:, [s.index.get_loc(j) for j in part.index]]
        ax.bar(x + (i - (len(names) - 1) / 2) * width, part[column] / scale, width, yerr=errs, capsize=3,
               color=readers.get(name).colour if by_reader else [f"C{j}" for j in range(len(part))],
               label=readers.get(name).label if by_reader else None)
    ax.set_xticks(range(len(labels)), labels, rotation=30 if max(map(len, labels)) > 12 else 0,
                  ha="right" if max(map(len, labels)) > 12 else "center", fontsize="small")
    ax.set_xlabel(", ".join(rest) if rest else ("reader" if by_reader else ""))


def groups(s: pd.DataFrame, keys: list[str]):
    """(key, rows) per configuration of ``keys``, in order of appearance (one group without keys)."""
    return s.groupby(keys, dropna=False, sort=False) if keys else [((), s)]


def others(df: pd.DataFrame, *axes: str) -> list[str]:
    """The configuration columns the run varies besides ``axes`` (reader, usually)."""
    return varying(df, [c for c in CONFIG if c not in axes])


_kept: contextvars.ContextVar[list | None] = contextvars.ContextVar("sae_report_kept", default=None)
_stamp: contextvars.ContextVar[str | None] = contextvars.ContextVar("sae_figure_stamp", default=None)
_rendering: contextvars.ContextVar[bool] = contextvars.ContextVar("sae_figure_rendering", default=True)


@contextlib.contextmanager
def keeping_figures():
    """Within the block, every figure saved is also kept: yields the list of (path, Figure)."""
    token = _kept.set([])
    try:
        yield _kept.get()
    finally:
        _kept.reset(token)


@contextlib.contextmanager
def stamping(text: str):
    """Within the block, every figure saved carries ``text`` (e.g. the run and commit it was drawn
    from) under its panels and as its PNG ``Source`` metadata."""
    token = _stamp.set(text)
    try:
        yield
    finally:
        _stamp.reset(token)


@contextlib.contextmanager
def sketching():
    """Within the block, figures are built from their data but not rendered: :func:`save` writes
    nothing and returns the path it would write (``sae gallery --check``; laying out and rendering
    are most of a figure's time)."""
    token = _rendering.set(False)
    try:
        yield
    finally:
        _rendering.reset(token)


def save(fig, path: Path, note: str | None = None) -> Path:
    """Write ``fig`` to ``path`` and close it (kept inside :func:`keeping_figures`), with ``note``
    (e.g. :data:`SPREAD_RULE`) and the :func:`stamping` text under its panels; legends outside
    the panels stay in the image. Inside :func:`sketching`, it is only closed (and kept)."""
    if _rendering.get():
        _render(fig, path, note)
    pyplot().close(fig)   # out of pyplot's figure list; the Figure itself still draws
    if (kept := _kept.get()) is not None:
        kept.append((path, fig))
    return path


def _render(fig, path: Path, note: str | None) -> None:
    fig.tight_layout()
    lines = [t for t in (note, _stamp.get()) if t]
    if lines:
        fig.text(0.01, 0.0, "\n".join(lines), ha="left", va="top", fontsize="x-small", color="#555555")
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.1,
                metadata={"Source": _stamp.get()} if _stamp.get() else None)
