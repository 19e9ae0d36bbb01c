"""The figure of the write jobs (experiments/writes.py), in the shape of Stocator's (Vernik et al.,
IEEE CloudCom 2017) tables and its fig. 5:

* ``writes.png``: per job, a bar per writer of its storage requests by type (stacked: S3
  requests at the gateway, MDS requests; Tables I and V) with the OSDs' write ops marked beside
  (every client's: a CephFS writer's data go there directly), its time (Table IV) and the bytes
  the OSDs were sent to write over the output's bytes (fig. 5: the rename-based committers write
  each byte more than once).

Medians over measured repetitions (warm-ups left out); no write jobs, no figure.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...planning import writers
from ..analysis.measured import measured
from ..analysis.write_summary import with_jobs
from .plotting import figure_legend, pyplot, save

plt = pyplot()   # a drawing module: importing it loads matplotlib

OP_GROUPS = (("ops_rgw_", "S3 request", "Reds"), ("ops_mds_", "MDS request", "Blues"))
"""The request columns' prefixes (what ``storage_ops`` sums), their legend's group and colour map."""


def op_types(df: pd.DataFrame) -> list[str]:
    """The operation-by-type columns that count anything, grouped as :data:`OP_GROUPS`."""
    return [c for prefix, _, _ in OP_GROUPS for c in sorted(df.columns)
            if c.startswith(prefix) and df[c].fillna(0).gt(0).any()]


def _colour(column: str, i: int, n: int):
    for prefix, _, cmap in OP_GROUPS:
        if column.startswith(prefix):
            return plt.get_cmap(cmap)(0.35 + 0.6 * i / max(1, n - 1))
    return "grey"


def plot_writes(df: pd.DataFrame, out: Path) -> Path | None:
    """``writes.png`` (see the module docstring)."""
    if "writer" not in df or df["writer"].isna().all() or "storage_ops" not in df:
        return None
    d, jobs = with_jobs(measured(df[df["writer"].notna()]))
    types = op_types(d)
    med = d.groupby(["job", "writer"])[[*types, "storage_ops", "ops_osd_write", "total_s", "storage_bytes_written",
                                         "output_bytes"]].median().reset_index()
    names = sorted(set(med["writer"]), key=writers.order)
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2))
    width = 0.8 / len(names)
    x = np.arange(len(jobs))
    for k, name in enumerate(names):
        g = med[med["writer"] == name].set_index("job").reindex(jobs)
        at = x - 0.4 + width * (k + 0.5)
        bottom = np.zeros(len(jobs))
        for i, col in enumerate(types):
            group = [t for t in types if t[:8] == col[:8]]
            values = g[col].fillna(0).to_numpy()
            axes[0].bar(at, values, width, bottom=bottom, color=_colour(col, group.index(col), len(group)),
                        edgecolor="white", linewidth=0.3, label=col.removeprefix("ops_") if k == 0 else None)
            bottom += values
        axes[0].scatter(at, g["ops_osd_write"].to_numpy(), marker="x", color="black", zorder=3,
                        label="OSD writes (every client)" if k == 0 else None)
        axes[0].text(at[0], 0, writers.get(name).label, rotation=90, fontsize="x-small", va="bottom", ha="center")
        colour = writers.get(name).colour
        axes[1].bar(at, g["total_s"].to_numpy(), width, color=colour, label=writers.get(name).label)
        ratio = g["storage_bytes_written"] / g["output_bytes"].replace(0, np.nan)
        axes[2].bar(at, ratio.to_numpy(), width, color=colour)
    for ax, title, ylabel in ((axes[0], "Storage requests by type (Stocator's Tables I, V)", "requests per job"),
                              (axes[1], "Job time (Table IV)", "seconds, median"),
                              (axes[2], "Bytes written at the OSDs over the output's (fig. 5)", "ratio")):
        ax.set_xticks(x, jobs, rotation=25, ha="right")
        ax.set_xlabel("write job")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize="medium")
    axes[0].set_yscale("symlog", linthresh=10)
    axes[2].axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    axes[0].legend(fontsize="x-small", ncol=3, title="request type", title_fontsize="x-small", loc="upper left",
                   bbox_to_anchor=(0, -0.18))
    figure_legend(fig, axes[1:])
    return save(fig, out / "writes.png")
