"""What every statistic of a results table is over and grouped by: the measured repetitions
(:func:`measured`: not warm-ups, not the drift check's), the configuration columns
(:data:`CONFIG`) and those a run varies (:func:`varying`), medians and quantiles per
configuration (:func:`stats`, :func:`median_repetitions`), how many columns a query read
(:func:`columns_read`) and a parameter's value as a person reads it (:func:`shown`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from data_deploy import SCHEMA
from metareserve import format_size

from ...planning.spec import SIZES

CONFIG = ("reader", "query", "compression", "batch_size", "objects_per_partition", "object_size", "stored_compression", "data_format", "page_rows",
          "spark_version", "spark_pyarrow", "spark_jit", "class_arrow",
          "columns_read", "rows", "link_multiplier", "nodes", "store", "link_rate", "cluster_cores", "storage_load",
          "storage_scans", "pg_autoscale", "keys", "probe", "append_rows", "append_every", "lose_executor", "writer",
          "write", "write_rows", "write_tasks", "rgw")
"""The configuration columns: what tells two points of a run apart besides the selectivity."""

BAND_MIN = 10
"""Fewest measured values a point needs for its p1 and p99 (below: its min and max)."""


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


def varying(df: pd.DataFrame, columns) -> list[str]:
    """The ``columns`` that take more than one value in ``df``."""
    return [c for c in columns if c in df and df[c].astype(str).nunique() > 1]


def shown(column: str, value) -> str:
    """A parameter's value as a person reads it (sizes, stored in bytes, in binary units)."""
    return format_size(int(value)) if column in SIZES and not pd.isna(value) else str(value)


def columns_read(df: pd.DataFrame) -> pd.Series:
    """How many columns each repetition's query read (``columns``; empty: every column of the
    generated data's schema, or NaN for ingested data of unknown width)."""
    width = np.where(df["data_input"].isna(), len(SCHEMA.names), np.nan) if "data_input" in df else len(SCHEMA.names)
    return pd.Series([len(c) if len(c) else w for c, w in zip(df["columns"], np.broadcast_to(width, len(df)))],
                     index=df.index, dtype=float)


def with_columns_read(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``columns_read`` (:func:`columns_read`) where it has ``columns``."""
    return df.assign(columns_read=columns_read(df)) if "columns" in df else df


def measured_any(df: pd.DataFrame) -> bool:
    """Whether a run's results hold a measured query time (else there is nothing to report)."""
    return not (df.empty or df.loc[~df["warmup"], "total_s"].isna().all())
