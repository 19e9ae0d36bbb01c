"""The summary of a run's write jobs (experiments/writes.py), beside Stocator's tables (Vernik et
al., IEEE CloudCom 2017): per job and writer, the files its output committed, the storage requests
the job cost (``storage_ops``: S3 requests at the gateway, MDS requests) and their types, its
time, and the bytes the OSDs were sent to write over the output's; each writer against sae-ceph
(x = writer / sae-ceph, > 1: sae-ceph asked less or took less) with its 95 % bootstrap interval (none below
:data:`~sae.results.analysis.statistics.MIN_N` repetitions)."""
from __future__ import annotations

import pandas as pd

from ...planning import writers
from . import statistics
from .measured import measured

SUBJECT = writers.get("sae-ceph").name
STOCATOR = {"one-object": "Table I: a one-object write costs S3A 117 REST operations, Swift 48, Stocator 8",
            "teragen": "Tables IV, V: Stocator 15-33x fewer operations than S3A, up to 18x faster (Teragen 18.0x)",
            "copy": "Tables IV, V: Stocator 15-33x fewer operations than S3A (Copy 10.3x faster)",
            "read-only": "read-only jobs on par"}
"""What Stocator reported for each job, set beside the table."""


def _types(g: pd.DataFrame) -> str:
    """The request types a writer's job asked, by median count: ``put_obj 5, head_obj 21``."""
    cols = [c for c in g.columns if c.startswith(("ops_rgw_", "ops_mds_")) and g[c].notna().any()]
    counts = {c.removeprefix("ops_"): g[c].median() for c in cols}
    return ", ".join(f"{k} {v:g}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]) if v > 0) or "-"


def _x(interval: statistics.Interval) -> str:
    if interval.estimate != interval.estimate:   # NaN: no subject to compare with
        return "-"
    return f"{interval.estimate:.2f}x" + (f" [{interval.low:.2f}, {interval.high:.2f}]" if interval.low == interval.low
                                          else " (n too small)")


def with_jobs(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``df`` with a ``job`` column (:func:`~sae.planning.writers.job_label`: the job, and its
    tasks where it chose them) and the jobs in :data:`~sae.planning.writers.JOBS` order, fewer
    tasks first."""
    tasks = df["write_tasks"].astype(float) if "write_tasks" in df else pd.Series(float("nan"), index=df.index)
    labelled = df.assign(job=[writers.job_label(w, t) for w, t in zip(df["write"], tasks)])
    kinds = sorted(set(zip(df["write"], tasks.fillna(0))), key=lambda wt: (list(writers.JOBS).index(wt[0]), wt[1]))
    return labelled, [writers.job_label(w, t or None) for w, t in kinds]


def write_rows(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the table, jobs as :func:`with_jobs` orders them, writers in
    :data:`~sae.planning.writers.WRITERS` order."""
    d, jobs = with_jobs(measured(df[df["writer"].notna()]))
    head = ["job", "writer", "n", "files", "requests", "x vs sae-ceph", "OSD writes", "time s", "x vs sae-ceph",
            "written / output", "requests by type"]
    rows = []
    for job in jobs:
        at = d[d["job"] == job]
        subject = at[at["writer"] == SUBJECT]
        for name in sorted(set(at["writer"]), key=writers.order):
            g = at[at["writer"] == name]
            amplification = (g["storage_bytes_written"] / g["output_bytes"].where(g["output_bytes"] > 0)).median()
            rows.append([job, name, str(len(g)), f"{g['output_files'].median():g}", f"{g['storage_ops'].median():g}",
                         _x(statistics.ratio_of_medians(g["storage_ops"], subject["storage_ops"])),
                         f"{g['ops_osd_write'].median():g}", f"{g['total_s'].median():.2f}",
                         _x(statistics.ratio_of_medians(g["total_s"], subject["total_s"])),
                         "-" if amplification != amplification else f"{amplification:.2f}", _types(g)])
    return head, rows


def write_text(df: pd.DataFrame) -> str | None:
    """The table as fixed-width text with Stocator's figures under it; None without write jobs."""
    if "writer" not in df or df["writer"].isna().all() or "storage_ops" not in df:
        return None
    jobs = [j for j in writers.JOBS if j in set(df["write"].dropna())]
    return "\n".join(["write jobs (medians of measured repetitions; requests: S3 at the gateway and MDS requests, "
                      "the OSDs' writes beside them, every client's; x = writer / sae-ceph, [95 % bootstrap interval])",
                      *statistics.fixed_width(*write_rows(df)),
                      *(f"Stocator, {job}: {STOCATOR[job]}" for job in jobs if job in STOCATOR)])
