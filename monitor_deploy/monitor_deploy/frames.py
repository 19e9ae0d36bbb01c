"""Parquet files to and from pandas through pyarrow with paths, never Python file objects.

``DataFrame.to_parquet`` and ``pandas.read_parquet`` hand pyarrow an open Python file for a local
path; reading through one leaves Arrow's CPU thread pool in a state that aborts or hangs at
interpreter exit now and then (apache/arrow#50482, "terminate called without an active
exception", exit -6, seen after a run that had finished). Given the path, pyarrow opens the file
itself.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def read_frame(path: Path | str) -> pd.DataFrame:
    """The Parquet file at ``path`` as a DataFrame (as ``pandas.read_parquet`` reads it)."""
    return pq.read_table(str(path)).to_pandas()


def write_frame(df: pd.DataFrame, path: Path | str) -> None:
    """Write ``df`` to ``path`` as Parquet, without its index (``to_parquet(index=False)``)."""
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(path))
