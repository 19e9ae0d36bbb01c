"""Read Spark's own per-query metrics out of a run's Spark event logs (``logs/<app>/<submit>/events``,
and ``logs/shared/<app id>/events`` for a catalogue's shared application, copied while it ran),
rolling (``eventlog_v2_<app id>/events_<n>_<app id>[.<codec>]``, Spark 4's default) or single files
(``<app id>[.<codec>][.inprogress]``, Spark 3.5's).

Spark writes every finished task's SQL metrics to its event log (``SparkListenerTaskEnd``, task
info ``Accumulables``: name and this task's ``Update``). A repetition's value is the sum over the
tasks that finished between its start and end (the application runs one query at a time; a shared
application's log also holds other runs' tasks, outside the run's repetitions).
:func:`input_batches` sums ``number of input batches`` (``ColumnarToRowExec``: the columnar
batches the scan handed Spark), the batch count the batch-size experiment needs.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

CODECS = {".zstd": "zstd", ".lz4": None, ".snappy": None, ".lzf": None}
"""Event log file suffix → pyarrow codec (None: a framing pyarrow cannot read; such logs are skipped)."""
LOG_FILES = ("*/*/events/*/events_*", "*/*/events/app-*")
"""A run's event log files under ``logs/``: rolling logs' parts, single-file logs."""


def log_files(run_root: Path) -> list[tuple[Path, str | None]]:
    """The run's event log files, each with the pyarrow codec to read it (None: plain text)."""
    logs = Path(run_root, "logs")
    files = []
    for path in sorted({p for pattern in LOG_FILES for p in logs.glob(pattern) if p.is_file()}):
        suffix = path.with_suffix("").suffix if path.suffix == ".inprogress" else path.suffix
        codec = CODECS.get(suffix, "plain")
        if codec is not None:
            files.append((path, None if codec == "plain" else codec))
    return files


def task_metric(run_root: Path, name: str) -> pd.DataFrame:
    """(finish time in epoch seconds, value) of metric ``name`` for every task in the run's event logs."""
    rows = []
    for path, codec in log_files(run_root):
        with pa.input_stream(str(path), compression=codec) as stream:
            text = stream.read().decode(errors="replace")
        for line in text.splitlines():
            if '"SparkListenerTaskEnd"' not in line or name not in line:
                continue
            try:
                info = json.loads(line).get("Task Info", {})
            except ValueError:   # a live application's log (shared_app) may end mid-line
                continue
            rows += [(info["Finish Time"] / 1000, float(a["Update"])) for a in info.get("Accumulables", [])
                     if a.get("Name") == name and "Update" in a]
    return pd.DataFrame(rows, columns=["finish", "value"])


def per_repetition(run_root: Path, df: pd.DataFrame, name: str) -> pd.Series:
    """Metric ``name`` summed over the tasks that finished inside each repetition of ``df`` (a
    results table: ``start``, ``end``), aligned with ``df``; NaN where no event log was read."""
    tasks = task_metric(run_root, name)
    if tasks.empty:
        return pd.Series(np.nan, index=df.index)
    finish, value = tasks["finish"].to_numpy(), tasks["value"].to_numpy()
    return pd.Series([value[(finish >= s) & (finish <= e)].sum() for s, e in zip(df["start"], df["end"])],
                     index=df.index)


INPUT_BATCHES = "number of input batches"
"""The task metric :func:`input_batches` sums."""


def input_batches(run_root: Path, df: pd.DataFrame) -> pd.Series:
    """Columnar batches Spark consumed per repetition (:data:`INPUT_BATCHES`)."""
    return per_repetition(run_root, df, INPUT_BATCHES)
