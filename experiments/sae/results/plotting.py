"""What every figure draws with: the configuration columns (:data:`CONFIG`), statistics over
measured repetitions, how a configuration is labelled and coloured, and where a figure is saved
(kept as a matplotlib Figure too inside :func:`keeping_figures`). Below both :mod:`sae.results.figures`
and :mod:`sae.results.report`. matplotlib is imported by the first figure drawn (:func:`pyplot`), so
``import sae`` and every command that draws nothing load no figure library (a third of the import's time)."""
from __future__ import annotations

import contextlib
import contextvars
import functools
from pathlib import Path

import numpy as np
import pandas as pd

from data_deploy import SCHEMA
from metareserve import format_size

from ..planning import readers
from ..planning.spec import SIZES

CONFIG = ("reader", "query", "compression", "batch_size", "objects_per_partition", "object_size", "stored_compression", "data_format",
          "spark_version", "spark_pyarrow", "spark_jit", "class_arrow",
          "columns_read", "rows", "link_multiplier", "nodes", "store", "link_rate", "cluster_cores", "storage_load",
          "storage_scans", "pg_autoscale")


@functools.cache
def pyplot():
    """matplotlib's pyplot on the Agg backend (figures to files, no display), imported once, by the
    first figure drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


BAND_MIN = 10
"""Fewest measured values a point needs for a p1–p99 band (below: its min and max as ticks)."""


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """The repetitions every statistic is over: not warm-ups, not the drift check's
    (``drift``: the reference point measured again at the end of the run)."""
    keep = ~df["warmup"].astype(bool)
    if "drift" in df:
        keep &= ~df["drift"].fillna(False).astype(bool)
    return df[keep]


def stats(df: pd.DataFrame, by: list[str], value: str = "total_s") -> pd.DataFrame:
    """Median, p1, p99, min, max and count ``n`` of ``value`` over measured repetitions
    (:func:`measured`), grouped by ``by``."""
    d = measured(df).astype({value: float})
    g = d.groupby(by, dropna=False)[value]
    return pd.DataFrame({"median": g.median(), "p1": g.quantile(0.01), "p99": g.quantile(0.99),
                         "min": g.min(), "max": g.max(), "n": g.count()}).reset_index()


def median_repetitions(df: pd.DataFrame, by: list[str], value: str, parts: list[str]) -> pd.DataFrame:
    """Per group of ``by``, ``value`` and its ``parts`` in the median repetition by ``value`` among
    the measured ones (of an even count, the mean of the middle two): the parts (a request's
    phases, a query's init and compute) then add up to the median of ``value``, where medians
    taken part by part need not (a tiny run's no-offload phases at 100 % summed to 0.88x)."""
    cols = list(dict.fromkeys([value, *parts]))
    d = measured(df).astype({c: float for c in cols})
    rows = []
    for key, g in d.groupby(by, dropna=False):
        g = g.sort_values(value, kind="stable")
        rows.append({**dict(zip(by, key)), **g.iloc[[(len(g) - 1) // 2, len(g) // 2]][cols].mean()})
    return pd.DataFrame(rows, columns=[*by, *cols])


def spread(ax, x, grp: pd.DataFrame, colour, scale: float = 1.0) -> str:
    """Draw the spread of ``grp``'s points (:func:`stats` rows) around their medians: a p1–p99
    band where every point has :data:`BAND_MIN` values, else each point's min and max as ticks;
    returns what was drawn, for the axis label."""
    if len(grp) and grp["n"].min() >= BAND_MIN:
        ax.fill_between(x, grp["p1"] / scale, grp["p99"] / scale, alpha=0.2, color=colour)
        return "band p1–p99"
    ax.scatter(list(x) * 2, list(grp["min"] / scale) + list(grp["max"] / scale), marker="_", s=60, color=colour)
    return "ticks min and max"


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


def varying(df: pd.DataFrame, columns) -> list[str]:
    """The ``columns`` that take more than one value in ``df``."""
    return [c for c in columns if c in df and df[c].astype(str).nunique() > 1]


def config_label(row, keys) -> str:
    """A configuration's legend label: the reader's label and ``key=value`` for the other ``keys``."""
    return ", ".join(readers.get(row[k]).label if k == "reader" else f"{k}={shown(k, row[k])}"
                     for k in keys) or "all"


def config_colour(row, keys) -> str | None:
    """The reader's colour when the reader is all that tells configurations apart, else None
    (matplotlib's cycle)."""
    return readers.get(row["reader"]).colour if list(keys) == ["reader"] else None


def shown(column: str, value) -> str:
    """A parameter's value as a person reads it (sizes, stored in bytes, in binary units)."""
    return format_size(int(value)) if column in SIZES and not pd.isna(value) else str(value)


def groups(s: pd.DataFrame, keys: list[str]):
    """(key, rows) per configuration of ``keys``, in order of appearance (one group without keys)."""
    return s.groupby(keys, dropna=False, sort=False) if keys else [((), s)]


def others(df: pd.DataFrame, *axes: str) -> list[str]:
    """The configuration columns the run varies besides ``axes`` (reader, usually)."""
    return varying(df, [c for c in CONFIG if c not in axes])


_kept: contextvars.ContextVar[list | None] = contextvars.ContextVar("sae_report_kept", default=None)


@contextlib.contextmanager
def keeping_figures():
    """Within the block, every figure saved is also kept: yields the list of (path, Figure)."""
    token = _kept.set([])
    try:
        yield _kept.get()
    finally:
        _kept.reset(token)


def save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` and close it (kept inside :func:`keeping_figures`)."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)   # out of pyplot's figure list; the Figure itself still draws
    if (kept := _kept.get()) is not None:
        kept.append((path, fig))
    return path


def columns_read(df: pd.DataFrame) -> pd.Series:
    """How many columns each repetition's query read (``columns``; empty: every column of the
    generated data's schema, or NaN for ingested data of unknown width)."""
    width = np.where(df["data_input"].isna(), len(SCHEMA.names), np.nan) if "data_input" in df else len(SCHEMA.names)
    return pd.Series([len(c) if len(c) else w for c, w in zip(df["columns"], np.broadcast_to(width, len(df)))],
                     index=df.index, dtype=float)
