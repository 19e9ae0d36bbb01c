"""What every figure draws with: the configuration columns (:data:`CONFIG`), statistics over
measured repetitions, how a configuration is labelled and coloured, and where a figure is saved
(kept as a matplotlib Figure too inside :func:`keeping_figures`). Below both :mod:`sae.results.figures`
and :mod:`sae.results.report`."""
from __future__ import annotations

import contextlib
import contextvars
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from metareserve import format_size  # noqa: E402

from ..planning import readers  # noqa: E402
from ..planning.spec import SIZES  # noqa: E402

CONFIG = ("reader", "compression", "batch_size", "objects_per_partition", "object_size", "stored_compression",
          "columns_read", "rows", "link_multiplier", "nodes", "store", "link_rate", "cluster_cores")


def stats(df: pd.DataFrame, by: list[str], value: str = "total_s") -> pd.DataFrame:
    """Median, p1 and p99 of ``value`` over non-warm-up repetitions, grouped by ``by``."""
    d = df[~df["warmup"]].astype({value: float})
    g = d.groupby(by, dropna=False)[value]
    return pd.DataFrame({"median": g.median(), "p1": g.quantile(0.01), "p99": g.quantile(0.99),
                         "n": g.size()}).reset_index()


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
    plt.close(fig)   # out of pyplot's figure list; the Figure itself still draws
    if (kept := _kept.get()) is not None:
        kept.append((path, fig))
    return path
