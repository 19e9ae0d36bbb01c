"""``scale.png``: what each side spends, and how the data and the work spread over the OSDs, as the
cluster grows (``hosts``: ``cluster.nodes``). Medians of measured repetitions per host count, one
line per reader and selectivity. The panels lead with what holds when the hosts share one
machine's cores (bytes, CPU-seconds, objects per OSD); query time, which does not, comes last and
says so."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..analysis.measured import measured
from .plotting import config_colour, config_label, figure_legend, log_axis, pyplot, save

plt = pyplot()

PANELS = (("compute_rx_bytes", 1e6, "MB to the compute hosts", True),
          ("compute_cpu_s", 1.0, "compute hosts' CPU-seconds", False),
          ("compute_task_cpu_s", 1.0, "Spark's task CPU-seconds (the query's own)", False),
          ("storage_cpu_per_osd_s", 1.0, "storage CPU-seconds per OSD", False),
          ("placement_imbalance", 1.0, "objects on the fullest OSD / mean", False),
          ("total_s", 1.0, "query time (s): this machine's, shared cores", False))


def plot_scale(df: pd.DataFrame, out: Path) -> Path | None:
    """The scale figure, or None where the run swept no host count."""
    if "hosts" not in df or df["hosts"].nunique() < 2:
        return None
    d = measured(df).copy()
    d["storage_cpu_per_osd_s"] = d.get("storage_cpu_s", float("nan")) / d.get("osds", float("nan"))
    keys = [k for k in ("reader", "selectivity") if k in d and d[k].nunique() > 1]
    hosts = sorted(d["hosts"].unique())
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.8))
    for ax, (col, scale, label, log) in zip(axes, PANELS):
        if col not in d or d[col].isna().all():   # e.g. task CPU from a run without event logs
            ax.set_visible(False)
            continue
        med = d.groupby(keys + ["hosts"], dropna=False)[col].median().reset_index()
        if col == "placement_imbalance":   # a property of the data's placement, the same for every reader
            med = d.groupby("hosts")[col].median().reset_index()
            ax.plot(med["hosts"], med[col], marker="s", color="black", label="placement")
        else:
            for _, grp in (med.groupby(keys, dropna=False) if keys else [((), med)]):
                row = grp.iloc[0]
                ax.plot(grp["hosts"], grp[col] / scale, marker="o", label=config_label(row, keys),
                        color=config_colour(row, ["reader"]) if "reader" in keys else None,
                        linestyle="-" if "selectivity" not in keys or row["selectivity"] == min(d["selectivity"])
                        else "--")
        ax.set_xticks(hosts)
        ax.set_xticklabels([str(h) for h in hosts])
        ax.set_xlabel("hosts")
        ax.set_ylabel(label)
        if log and (med[col] > 0).any():
            log_axis(ax)
        else:
            ax.set_ylim(bottom=0)
    fig.suptitle("As the cluster grows: what each side spends, and the OSDs' share", fontsize="medium")
    figure_legend(fig, axes)
    return save(fig, out / "scale.png", "half the hosts store (an OSD each), the others compute; medians of the "
                                        "measured repetitions")
