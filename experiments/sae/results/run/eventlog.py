"""Read Spark's own per-query metrics out of a run's Spark event logs (``logs/<app>/<submit>/events``,
and ``logs/shared/<app id>/events`` for a catalogue's shared application, copied while it ran),
rolling (``eventlog_v2_<app id>/events_<n>_<app id>[.<codec>]``, Spark 4's default) or single files
(``<app id>[.<codec>][.inprogress]``, Spark 3.5's).

Spark writes every finished task's SQL metrics to its event log (``SparkListenerTaskEnd``, task
info ``Accumulables``: name and this task's ``Update``). A repetition's value is the sum over the
tasks that finished between its start and end (the application runs one query at a time; a shared
application's log also holds other runs' tasks, outside the run's repetitions).
:func:`input_batches` sums ``number of input batches`` (``ColumnarToRowExec``: the columnar
batches the scan handed Spark), the batch count the batch-size experiment needs;
:func:`task_cpu_seconds` the task threads' CPU time (``Task Metrics``), results.parquet's
``compute_task_cpu_s``.
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


def _task_ends(run_root: Path, needle: str):
    """The ``SparkListenerTaskEnd`` events of the run's event logs whose line holds ``needle``."""
    for path, codec in log_files(run_root):
        with pa.input_stream(str(path), compression=codec) as stream:
            text = stream.read().decode(errors="replace")
        for line in text.splitlines():
            if '"SparkListenerTaskEnd"' not in line or needle not in line:
                continue
            try:
                yield json.loads(line)
            except ValueError:   # a live application's log (shared_app) may end mid-line
                continue


def task_metric(run_root: Path, name: str) -> pd.DataFrame:
    """(finish time in epoch seconds, value) of SQL metric ``name`` for every task in the run's event logs."""
    rows = []
    for event in _task_ends(run_root, name):
        info = event.get("Task Info", {})
        rows += [(info["Finish Time"] / 1000, float(a["Update"])) for a in info.get("Accumulables", [])
                 if a.get("Name") == name and "Update" in a]
    return pd.DataFrame(rows, columns=["finish", "value"])


def per_repetition(run_root: Path, df: pd.DataFrame, name: str) -> pd.Series:
    """SQL metric ``name`` summed over the tasks that finished inside each repetition of ``df`` (a
    results table: ``start``, ``end``), aligned with ``df``; NaN where no event log was read."""
    return _summed(task_metric(run_root, name), df)


def _summed(tasks: pd.DataFrame, df: pd.DataFrame) -> pd.Series:
    """``tasks``' values (``finish``, ``value``) summed over each repetition of ``df``; NaN for every
    repetition when there are no tasks at all (no event log was read)."""
    if tasks.empty:
        return pd.Series(np.nan, index=df.index)
    finish, value = tasks["finish"].to_numpy(), tasks["value"].to_numpy()
    start, end = (pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float) for c in ("start", "end"))
    return pd.Series([value[(finish >= s) & (finish <= e)].sum() if s == s and e == e else np.nan
                      for s, e in zip(start, end)], index=df.index)


TASK_CPU = ("Executor CPU Time", "Executor Deserialize CPU Time")
"""The task metrics (nanoseconds) :func:`task_cpu_seconds` adds: the CPU time of the executor
thread that ran the task, and of deserializing it there."""


def task_cpu_seconds(run_root: Path, df: pd.DataFrame) -> pd.Series:
    """CPU-seconds the executors' task threads spent on each repetition of ``df`` (Spark's own
    per-task measure, :data:`TASK_CPU`): the query's work on the compute side, without what each
    host's JVMs spend besides (compiling, heartbeats, serving metrics) or the driver's; NaN where
    no event log was read."""
    rows = [(e["Task Info"]["Finish Time"] / 1000, sum(e["Task Metrics"].get(k, 0) for k in TASK_CPU) / 1e9)
            for e in _task_ends(run_root, TASK_CPU[0]) if e.get("Task Metrics") and "Task Info" in e]
    return _summed(pd.DataFrame(rows, columns=["finish", "value"]), df)


INPUT_BATCHES = "number of input batches"
"""The task metric :func:`input_batches` sums."""


def input_batches(run_root: Path, df: pd.DataFrame) -> pd.Series:
    """Columnar batches Spark consumed per repetition (:data:`INPUT_BATCHES`)."""
    return per_repetition(run_root, df, INPUT_BATCHES)
