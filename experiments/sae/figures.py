"""The figures of the experiments beyond the selectivity sweep, each in the shape of the thesis's
(or the Arrow-Spark paper's) figure for its axis; :func:`sae.report.make_report` chooses them by
what the run varies (:func:`sae.report.figure_names`). Each takes the run directory, its results
and the report directory and returns the figure's path (None: nothing to draw).

* ``alleviation.png`` (thesis fig. 13): what each side spent per configuration;
  ``resources-disk.png`` (fig. 12): the storage hosts' device reads and writes over time.
* ``backend.png`` (fig. 16): backend-only scan time (init/compute) per object size.
* ``objectsize-selectivity.png`` (fig. 17): time vs selectivity per object size, per reader, and
  the baseline / offload ratio over the grid.
* ``scalability.png`` (fig. 18): init/compute bars per logical size and reader, speedup line.
* ``batchsize.png`` (E1), ``storedcompression.png`` (E4), ``projection.png`` (E5).

Medians over measured repetitions (warm-ups left out), as everywhere in the report.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.colors import TwoSlopeNorm
import numpy as np
import pandas as pd

from data_deploy import SCHEMA
from metareserve import format_size

from . import readers
from .eventlog import input_batches
from .report import CONFIG, _colour, _label, _save, _varying, representatives, stats
from .results import RunDir, host_roles

SIDES = (("compute_cpu_s", "compute CPU-s", 1.0), ("compute_rx_bytes", "compute received (MB)", 1e6),
         ("storage_cpu_s", "storage CPU-s", 1.0), ("storage_tx_bytes", "storage sent (MB)", 1e6))


def _others(df: pd.DataFrame, *axes: str) -> list[str]:
    """The configuration columns the run varies besides ``axes`` (reader, usually)."""
    return _varying(df, [c for c in CONFIG if c not in axes])


def _groups(s: pd.DataFrame, keys: list[str]):
    return s.groupby(keys, dropna=False, sort=False) if keys else [((), s)]


def _stacked(ax, x, init: pd.DataFrame, comp: pd.DataFrame, width: float, label: str, offset: float = 0.0):
    """Init (hatched) and compute bars of one configuration at positions ``x``."""
    bars = ax.bar(np.asarray(x) + offset, init["median"].values, width, hatch="//", alpha=0.6, edgecolor="black",
                  linewidth=0.3)
    ax.bar(np.asarray(x) + offset, comp["median"].values, width, bottom=init["median"].values, label=label,
           color=bars.patches[0].get_facecolor(), alpha=1.0, edgecolor="black", linewidth=0.3)


def _init_compute(df: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return stats(df, by, "init_s"), stats(df, by, "compute_s")


def plot_alleviation(run: RunDir, df: pd.DataFrame, out: Path) -> Path | None:
    """Per configuration, what the compute side and the storage side spent during the query
    (medians, p1–p99): CPU-seconds and bytes (thesis fig. 13's areas under the curves)."""
    if not any(c in df and df[c].notna().any() for c, _, _ in SIDES):
        return None
    keys = _varying(df, list(CONFIG) + ["selectivity"])
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.8))
    for ax, (col, title, scale) in zip(axes, SIDES):
        s = stats(df, keys, col) if keys else stats(df.assign(all="all"), ["all"], col)
        labels = [_label(r, keys) for _, r in s.iterrows()]
        ax.bar(range(len(s)), s["median"] / scale,
               yerr=[(s["median"] - s["p1"]) / scale, (s["p99"] - s["median"]) / scale], capsize=3,
               color=[_colour(r, keys) or f"C{i}" for i, (_, r) in enumerate(s.iterrows())])
        ax.set_xticks(range(len(s)), labels, rotation=20, ha="right", fontsize="small")
        ax.set_title(title, fontsize="medium")
    fig.suptitle("What each side spent during the query (median, p1–p99)", fontsize="medium")
    return _save(fig, out / "alleviation.png")


def plot_devices(run: RunDir, df: pd.DataFrame, out: Path) -> Path | None:
    """The storage hosts' device reads and writes (MB/s, stacked by host) over the representative
    repetition of each configuration (thesis fig. 12). On the local cluster the rates are the
    host's processes' storage I/O; a memstore OSD reads RAM, which the title says."""
    reps = [(label, row, run.metrics / row["point"] / f"rep{row['repetition']}" / "metrics.parquet")
            for label, row in representatives(df)]
    reps = [r for r in reps if r[2].exists()]
    if not reps:
        return None
    points = {p.id: p for p in run.load_plan().points}
    fig, axes = plt.subplots(2, len(reps), figsize=(4.2 * len(reps) + 1, 5.5), squeeze=False,
                             sharex="col", sharey="row")
    for col, (label, row, path) in enumerate(reps):
        m = pd.read_parquet(path)
        roles = host_roles(run, points[row["point"]])
        for r, metric in enumerate(("disk_read", "disk_write")):
            ax = axes[r][col]
            d = m[(m["metric"] == metric) & m["node"].map(lambda n: roles.get(n) in ("storage", "both"))]
            wide = d.pivot_table(index="timestamp", columns="node", values="value", aggfunc="sum").sort_index()
            if not wide.empty:
                ax.stackplot(wide.index - row["start"], *[wide[n] / 1e6 for n in wide.columns],
                             labels=list(wide.columns), alpha=0.85)
            total = np.trapezoid(wide.sum(axis=1), wide.index) / 1e6 if len(wide) > 1 else 0.0
            what = "read" if metric == "disk_read" else "written"
            note = " (memstore: data in RAM)" if row.get("store") == "memstore" else ""
            ax.set_title((f"{label}\n" if r == 0 else "") + f"device {what}: {total:.3g} MB{note}",
                         fontsize="small")
            ax.set_ylim(bottom=0)
            ax.axvspan(0, row["end"] - row["start"], color="grey", alpha=0.08)
            if col == 0:
                ax.set_ylabel(f"storage {what} (MB/s)")
                if not wide.empty:
                    ax.legend(fontsize="x-small", loc="upper left")
            if r == 1:
                ax.set_xlabel("seconds since the query started (shaded: the query)")
    fig.suptitle("Storage devices per host", fontsize="medium")
    return _save(fig, out / "resources-disk.png")


def plot_objectsize_selectivity(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time vs selectivity, one line per object size, a panel per reader; with offload and
    a baseline, a last panel: baseline / offload time over the object size × selectivity grid."""
    keys = _others(df, "object_size")
    s = stats(df, keys + ["object_size", "selectivity"]).sort_values(["object_size", "selectivity"])
    panels = sorted(_groups(s, keys), key=lambda kv: readers.order(kv[1]["reader"].iloc[0]) if "reader" in keys else 0)
    pair = readers.ratio_pair(df["reader"]) if "reader" in df else None
    ratio = pair is not None
    fig, axes = plt.subplots(1, len(panels) + ratio, figsize=(4.8 * (len(panels) + ratio), 4), squeeze=False)
    for ax, (key, grp) in zip(axes[0], panels):
        for size, line in grp.groupby("object_size"):
            ax.plot(line["selectivity"], line["median"], marker="o", label=format_size(int(size)))
        ax.set_title(_label(grp.iloc[0], keys), fontsize="medium")
        ax.set_xlabel("selectivity (% of rows kept)")
        ax.set_ylabel("query time (s), median")
        ax.set_ylim(0, s["median"].max() * 1.1)   # one scale for every reader
        ax.legend(title="object size", fontsize="small")
    if ratio:
        t = s.pivot_table(index="object_size", columns=["reader", "selectivity"], values="median")
        subject, base = pair
        grid = t[base] / t[subject]
        ax = axes[0][-1]
        norm = TwoSlopeNorm(vmin=0, vcenter=1, vmax=max(2.0, float(np.nanmax(grid.values))))
        im = ax.imshow(grid.values, cmap="RdYlGn", norm=norm, aspect="auto", origin="lower")
        for (i, j), v in np.ndenumerate(grid.values):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize="small")
        ax.set_xticks(range(len(grid.columns)), [f"{c:g}" for c in grid.columns])
        ax.set_yticks(range(len(grid.index)), [format_size(int(v)) for v in grid.index])
        ax.set_xlabel("selectivity (%)")
        ax.set_ylabel("object size")
        ax.set_title(f"{base} / {subject} time (> 1: {subject} faster)", fontsize="medium")
        fig.colorbar(im, ax=ax)
    return _save(fig, out / "objectsize-selectivity.png")


def plot_scaling(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Init (hatched) and compute bars per logical dataset size, one bar per reader, and the
    speedup of offload over the baseline (baseline / offload median time) on the right axis."""
    df = df.assign(logical_rows=df["rows"] * df["link_multiplier"] * df["copy_multiplier"])
    keys = _others(df, "link_multiplier")
    init, comp = _init_compute(df, ["logical_rows"] + keys)
    sizes = sorted(init["logical_rows"].unique())
    confs = list(_groups(init, keys))
    width = 0.8 / max(1, len(confs))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, (key, grp) in enumerate(confs):
        c = comp.merge(grp[["logical_rows", *keys]], on=["logical_rows", *keys])
        grp, c = grp.sort_values("logical_rows"), c.sort_values("logical_rows")
        _stacked(ax, [sizes.index(v) for v in grp["logical_rows"]], grp, c, width, _label(grp.iloc[0], keys),
                 offset=(i - (len(confs) - 1) / 2) * width)
    ax.set_xticks(range(len(sizes)), [f"{v / 1e6:g} M rows" for v in sizes])
    ax.set_xlabel("logical dataset size (rows scanned per query; hard-link inflation)")
    ax.set_ylabel("time (s), median (hatched: init)")
    ax.legend(fontsize="small", loc="upper left")
    total = stats(df, ["logical_rows"] + keys).pivot_table(index="logical_rows", columns="reader", values="median")
    if pair := readers.ratio_pair(total.columns):
        subject, base = pair
        right = ax.twinx()
        speedup = (total[base] / total[subject]).reindex(sizes)
        right.plot(range(len(sizes)), speedup.values, color="black", marker="o",
                   label=f"speedup ({base} / {subject})")
        right.axhline(1.0, color="black", linewidth=0.5, linestyle=":")
        right.set_ylabel(f"speedup: {base} / {subject} time")
        right.set_ylim(0, max(2.0, float(speedup.max()) * 1.25))
        right.legend(fontsize="small", loc="upper right")
    ax.set_title("Query time vs dataset size", fontsize="medium")
    return _save(fig, out / "scalability.png")


def plot_backend(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Backend-only reads: init (listing, hatched) and scan time per object size, one bar per
    selectivity, each labelled with the objects it scanned."""
    init, comp = _init_compute(df, ["object_size", "selectivity"])
    objects = df[~df["warmup"]].groupby(["object_size", "selectivity"])["objects"].median()
    sizes, sels = sorted(init["object_size"].unique()), sorted(init["selectivity"].unique())
    width = 0.8 / len(sels)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, sel in enumerate(sels):
        g, c = (t[t["selectivity"] == sel].sort_values("object_size") for t in (init, comp))
        x = [sizes.index(v) for v in g["object_size"]]
        offset = (i - (len(sels) - 1) / 2) * width
        _stacked(ax, x, g, c, width, f"{sel:g} % of rows", offset=offset)
        for xi, size, top in zip(x, g["object_size"], g["median"].values + c["median"].values):
            ax.annotate(f"{objects[size, sel]:.0f} obj", (xi + offset, top), ha="center", va="bottom",
                        fontsize="x-small")
    ax.set_xticks(range(len(sizes)), [format_size(int(v)) for v in sizes])
    ax.set_xlabel("object size")
    ax.set_ylabel("time (s), median (hatched: listing the objects)")
    ax.set_title("Backend-only reads: the object class's scan of every object, no Spark", fontsize="medium")
    ax.legend(fontsize="small")
    return _save(fig, out / "backend.png")


def plot_batchsize(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time, and the columnar batches Spark consumed per query (its event log's ``number
    of input batches``), vs rows per batch."""
    df = df.assign(batches=input_batches(run.root, df))
    keys = _others(df, "batch_size")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel) in zip(axes, (("total_s", "query time (s), median, p1–p99"),
                                        ("batches", "batches per query (Spark's input batches)"))):
        s = stats(df, keys + ["batch_size"], col).sort_values("batch_size")
        for key, grp in _groups(s, keys):
            ax.errorbar(grp["batch_size"], grp["median"], yerr=[grp["median"] - grp["p1"], grp["p99"] - grp["median"]],
                        marker="o", capsize=3, label=_label(grp.iloc[0], keys))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rows per Arrow batch (batch_size)")
        ax.set_ylabel(ylabel)
    axes[1].set_yscale("log")
    axes[0].set_ylim(bottom=0)
    axes[0].set_title("Query time vs batch size", fontsize="medium")
    axes[1].set_title("Batches Spark consumed per query", fontsize="medium")
    if keys:
        axes[0].legend(fontsize="small")
    return _save(fig, out / "batchsize.png")


def plot_storedcompression(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Per stored codec and reader: init (hatched) and compute time, and bytes to the compute side."""
    keys = _others(df, "stored_compression")
    codecs = list(dict.fromkeys(df.sort_values("order")["stored_compression"]))
    by = ["stored_compression"] + keys
    init, comp = _init_compute(df, by)
    rx = stats(df, by, "compute_rx_bytes") if "compute_rx_bytes" in df else None
    confs = list(_groups(init, keys))
    width = 0.8 / max(1, len(confs))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for i, (key, grp) in enumerate(confs):
        def per_codec(t: pd.DataFrame) -> pd.DataFrame:
            return t.merge(grp[by], on=by).set_index("stored_compression").loc[codecs].reset_index()
        offset, label = (i - (len(confs) - 1) / 2) * width, _label(grp.iloc[0], keys)
        _stacked(axes[0], range(len(codecs)), per_codec(init), per_codec(comp), width, label, offset=offset)
        if rx is not None:
            axes[1].bar(np.arange(len(codecs)) + offset, per_codec(rx)["median"] / 1e6, width, label=label)
    for ax in axes:
        ax.set_xticks(range(len(codecs)), codecs)
        ax.set_xlabel("codec of the stored Parquet objects")
        ax.legend(fontsize="small")
    axes[0].set_ylabel("time (s), median (hatched: init)")
    axes[1].set_ylabel("bytes to the compute hosts (MB), median")
    axes[0].set_title("Query time vs stored compression", fontsize="medium")
    axes[1].set_title("Network: bytes to the compute hosts", fontsize="medium")
    return _save(fig, out / "storedcompression.png")


def columns_read(df: pd.DataFrame) -> pd.Series:
    """How many columns each repetition's query read (``columns``; empty: every column of the
    generated data's schema, or NaN for ingested data of unknown width)."""
    width = np.where(df["data_input"].isna(), len(SCHEMA.names), np.nan) if "data_input" in df else len(SCHEMA.names)
    return pd.Series([len(c) if len(c) else w for c, w in zip(df["columns"], np.broadcast_to(width, len(df)))],
                     index=df.index, dtype=float)


def plot_projection(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time and bytes to the compute side vs the number of columns the query reads."""
    df = df.assign(columns_read=columns_read(df))
    keys = _others(df, "columns_read")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel, scale) in zip(axes, (("total_s", "query time (s), median, p1–p99", 1.0),
                                               ("compute_rx_bytes", "bytes to the compute hosts (MB), median", 1e6))):
        if col not in df or df[col].isna().all():
            continue
        s = stats(df, keys + ["columns_read"], col).sort_values("columns_read")
        for key, grp in _groups(s, keys):
            ax.errorbar(grp["columns_read"], grp["median"] / scale,
                        yerr=[(grp["median"] - grp["p1"]) / scale, (grp["p99"] - grp["median"]) / scale],
                        marker="o", capsize=3, label=_label(grp.iloc[0], keys))
        ax.set_xlabel("columns the query reads")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small")
    axes[0].set_title("Query time vs projection width", fontsize="medium")
    axes[1].set_title("Network: bytes to the compute hosts", fontsize="medium")
    return _save(fig, out / "projection.png")
