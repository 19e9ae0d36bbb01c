"""The figures of one experiment's own axis (their entries in :mod:`sae.planning.figures` name them), each in
the shape of the thesis's (or the Arrow-Spark paper's) figure for that axis:

* ``objectsize.png`` (fig. 15): stacked init/compute bars per object size, a panel per selectivity.
* ``bandwidth.png``: median query time vs link rate, a line per reader and reply compression, a
  panel per selectivity.
* ``contention.png``: median query time per second tenant on the storage hosts (a CPU load, a
  second application's scans), a line per reader, a panel per selectivity, with what the tenants
  got as measured.
* ``autoscaler.png`` (thesis figs. 22-23): every measured query's time in the order it ran, a
  line per PG autoscaler setting, and the placement groups the OSDs held after each query.
* ``backend.png`` (fig. 16): backend-only scan time (init/compute) per object size.
* ``objectsize-selectivity.png`` (fig. 17): time vs selectivity per object size, per reader, and
  the baseline / offload ratio over the grid.
* ``scalability.png`` (fig. 18): init/compute bars per logical size and reader, speedup line.
* ``batchsize.png`` (E1), ``storedcompression.png`` (E4), ``projection.png`` (E5), ``formats.png``
  (E2/E3: stored formats).
* ``queries.png``: per query (:mod:`sae.planning.queries`; and selectivity where it varies) the
  median time, bytes to the compute side (log scale) and each side's CPU-seconds, a bar per reader.

Medians over measured repetitions (warm-ups left out), as everywhere in the report.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, NullLocator
import numpy as np
import pandas as pd

from metareserve import format_size

from ...planning import readers
from ..analysis.measured import CONFIG, columns_read, measured, median_repetitions, shown, stats, varying
from ..run.directory import RunDir
from ..run.eventlog import input_batches
from .plotting import (SPREAD_RULE, config_colour, config_label, figure_legend, groups, log_axis, others, pyplot, save,
                       selectivity_axis, whiskers)

plt = pyplot()   # a drawing module: importing it loads matplotlib


def plot_objectsize(df: pd.DataFrame, out: Path) -> Path:
    """Init (hatched) and compute time of the median repetition per object size, a bar per
    configuration (reader) in its colour; a panel per selectivity."""
    sels = sorted(df["selectivity"].unique())
    keys = varying(df, [c for c in CONFIG if c != "object_size"])
    sizes = sorted(df["object_size"].astype(int).unique())
    fig, axes = plt.subplots(1, len(sels), figsize=(max(4.0, 1.2 * len(sizes) + 1.5) * len(sels) + 1, 4),
                             squeeze=False)
    for ax, sel in zip(axes[0], sels):
        rep = _init_compute(df[df["selectivity"] == sel], ["object_size"] + keys)
        confs = sorted(groups(rep, keys),
                       key=lambda kv: readers.order(kv[1].iloc[0]["reader"]) if "reader" in keys else 0)
        width = 0.8 / max(1, len(confs))
        named = keys or (["reader"] if "reader" in df else [])   # one reader: its name and colour
        for i, (_, grp) in enumerate(confs):
            first = grp.iloc[0] if keys else df.iloc[0]
            grp = grp.assign(size=grp["object_size"].astype(int)).set_index("size").reindex(sizes)
            _stacked(ax, range(len(sizes)), grp, width, config_label(first, named),
                     offset=(i - (len(confs) - 1) / 2) * width, color=config_colour(first, named))
        ax.set_xticks(range(len(sizes)), [format_size(v) for v in sizes])
        ax.set_xlabel("object size")
        ax.set_title(f"{sel:g} % of rows")
        ax.set_ylabel("query time (s), median repetition")
    _init_legend(fig, axes)
    return save(fig, out / "objectsize.png")


def plot_bandwidth(df: pd.DataFrame, out: Path) -> Path:
    """Median query time vs the declared link rate (log scale; unlimited at the right end), one
    line per reader and reply compression, a panel per selectivity."""
    d = df.assign(rate=df["link_rate_declared_bps"].astype(float) / 1e9)
    finite = d["rate"].dropna()
    unlimited = (finite.max() if not finite.empty else 1.0) * 4
    d["rate"] = d["rate"].fillna(unlimited)
    sels = sorted(d["selectivity"].unique()) if "selectivity" in d else [None]
    keys = varying(d, [c for c in CONFIG if c not in ("link_rate", "cluster_cores")])
    fig, axes = plt.subplots(1, len(sels), figsize=(4.5 * len(sels) + 1, 4), squeeze=False, sharey=False)
    for ax, sel in zip(axes[0], sels):
        s = stats(d if sel is None else d[d["selectivity"] == sel], keys + ["rate"]).sort_values("rate")
        for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
            row = grp.iloc[0]
            replies = "reader" not in row or readers.get(row["reader"]).connector   # vanilla: no replies
            shown = [k for k in keys if k != "compression" or replies]
            ax.errorbar(grp["rate"], grp["median"], yerr=whiskers(grp), marker="o", capsize=3,
                        label=config_label(row, shown), color=config_colour(row, keys))
        log_axis(ax, "y")
        ax.set_xscale("log")
        ticks = sorted(set(d["rate"]))
        ax.set_xticks(ticks, [("unlimited" if t == unlimited else f"{t:g}") for t in ticks], fontsize="small")
        ax.xaxis.set_minor_locator(NullLocator())   # a label at each measured rate, no other tick
        ax.set_xlabel("declared link rate per host (Gbit/s, log scale)")
        ax.set_ylabel("query time (s), median, log scale")
        ax.set_title("all" if sel is None else f"{sel:g} % of rows")
    figure_legend(fig, axes)
    return save(fig, out / "bandwidth.png", SPREAD_RULE)


TENANTS = ("storage_load", "storage_scans")
"""The second tenants an experiment declares (``cluster.storage_load``, ``cluster.storage_scans``)."""


def tenant_label(load: float, scans: int) -> str:
    """A tenant state as the contention figure's axis names it."""
    parts = ([f"CPU {load:g}x cores"] if load else []) + ([f"{scans:g} scans in flight"] if scans else [])
    return " +\n".join(parts) or "none"


def plot_contention(df: pd.DataFrame, out: Path) -> Path:
    """Median query time per second tenant on the storage hosts (none; a CPU load keeping
    ``storage_load`` of their cores busy; a second application keeping ``storage_scans`` scan
    calls in flight), one line per reader, a panel per selectivity; below, what the tenants got
    during the queries as measured: the CPU load's cores (``tenant_cpu_s`` per second) and the
    second application's scan calls answered per second (``tenant_scans``)."""
    sels = sorted(df["selectivity"].unique()) if "selectivity" in df else [None]
    keys = others(df, *TENANTS) or ["reader"]
    d = df.assign(**{t: pd.to_numeric(df[t], errors="coerce").fillna(0) if t in df else 0.0 for t in TENANTS})
    states = sorted({(float(a), int(b)) for a, b in zip(d["storage_load"], d["storage_scans"])},
                    key=lambda st: (st != (0.0, 0), st[1] > 0, st))
    d["tenant_x"] = [states.index((float(a), int(b))) for a, b in zip(d["storage_load"], d["storage_scans"])]
    per_second = {"tenant_cpu_s": "CPU load: cores", "tenant_scans": "second application: scans/s"}
    for column in per_second:
        got = d[column].astype(float) if column in d else pd.Series(math.nan, index=d.index)
        d[column + "_rate"] = got / d["total_s"].astype(float)
    fig, axes = plt.subplots(2, len(sels), figsize=(4.5 * len(sels) + 1.5, 6.5), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.3]})
    for col, sel in enumerate(sels):
        part = d if sel is None else d[d["selectivity"] == sel]
        top, bottom = axes[0][col], axes[1][col]
        s = stats(part, keys + ["tenant_x"], "total_s")
        s = s.assign(order=s["reader"].map(readers.order) if "reader" in keys else 0).sort_values(["order", "tenant_x"])
        for _, grp in groups(s, keys):
            row = grp.iloc[0]
            top.errorbar(grp["tenant_x"], grp["median"], yerr=whiskers(grp), marker="o", capsize=3,
                         label=config_label(row, keys), color=config_colour(row, keys))
        scans = bottom.twinx()
        for (column, label), marker, ax, colour in zip(per_second.items(), ("s", "^"), (bottom, scans),
                                                       ("tab:grey", "tab:orange")):
            rate = part.dropna(subset=[column + "_rate"])
            if not rate.empty:
                r = stats(rate, ["tenant_x"], column + "_rate")
                ax.plot(r["tenant_x"], r["median"], marker=marker, linestyle="none", color=colour)
            ax.set_ylim(bottom=0)
            ax.set_ylabel(label, color=colour, fontsize="small")
        times = s["median"].dropna()
        if not times.empty and times.min() > 0 and times.max() > 10 * times.min():
            log_axis(top)   # a tenant that slows one reader 10x would flatten the others
        else:
            top.set_ylim(bottom=0)
        top.set_ylabel("query time (s), median")
        top.set_title("all" if sel is None else f"{sel:g} % of rows")
        for ax in (top, bottom):
            ax.set_xticks(range(len(states)))
            ax.set_xticklabels([tenant_label(*st) for st in states] if ax is bottom else [], fontsize="small")
            ax.set_xlim(-0.5, len(states) - 0.5)
        bottom.set_xlabel("second tenant on the storage hosts (measured below, per second)")
    figure_legend(fig, axes[0])
    return save(fig, out / "contention.png", SPREAD_RULE)


def plot_autoscaler(df: pd.DataFrame, out: Path) -> Path | None:
    """Each measured query's time against its place in the series (the thesis's figs. 22-23:
    a gradual slowdown over repeated runs with Ceph's PG autoscaler on), a line per setting
    (``pg_autoscale``, and whatever else varies), and below the placement groups the OSDs held
    right after each query (``osd_pgs``: the autoscaler's changes, where it made any); where the
    run recorded the placement, a third panel: the objects each OSD held before and after each
    setting's application, with the bytes that moved (``bytes_moved``)."""
    m = measured(df)
    if m.empty or "pg_autoscale" not in m:
        return None
    keys = ["pg_autoscale", *others(m, "pg_autoscale")]
    placed = {"objects_per_osd", "objects_per_osd_after"} <= set(m)
    fig, axes = plt.subplots(3 if placed else 2, 1, figsize=(8, 9 if placed else 6),
                             gridspec_kw={"height_ratios": [3, 1.3, 2] if placed else [3, 1.3]})
    top, bottom = axes[0], axes[1]
    bottom.sharex(top)
    settings = []
    for _, grp in groups(m.sort_values("start"), keys):
        row = grp.iloc[0]
        label = ", ".join(f"autoscaler {'on' if row[k] else 'off'}" if k == "pg_autoscale" else f"{k}={shown(k, row[k])}"
                          for k in keys)
        index = range(1, len(grp) + 1)
        line, = top.plot(index, grp["total_s"].astype(float), marker="o", markersize=3, label=label)
        if "osd_pgs" in grp:   # dashed over solid: equal counts stay visible
            bottom.step(index, pd.to_numeric(grp["osd_pgs"], errors="coerce"), where="mid", color=line.get_color(),
                        linestyle="--" if row["pg_autoscale"] else "-", label=label)
        settings.append((label, line.get_color(), row))
    top.set_ylim(bottom=0)
    top.set_ylabel("query time (s)")
    top.set_title("each query in the order it ran")
    figure_legend(fig, [top])
    bottom.set_ylabel("PGs on the OSDs", fontsize="small")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel("query in the series (measured repetitions)")
    if placed:
        _objects_per_osd(axes[2], settings)
    return save(fig, out / "autoscaler.png")


def _objects_per_osd(ax, settings: list) -> None:
    """Per OSD, the objects it held before (hatched) and after each setting's application, a pair of
    bars per setting, the bytes moved in the legend."""
    def counts(value) -> dict:   # a JSON mapping OSD → objects, or none recorded
        return json.loads(value) if isinstance(value, str) else {}
    osds = sorted({o for _, _, row in settings for o in counts(row["objects_per_osd"])},
                  key=lambda o: int(o.split(".")[1]))
    width = 0.8 / (2 * max(1, len(settings)))
    x = np.arange(len(osds))
    for i, (label, colour, row) in enumerate(settings):
        before, after = counts(row["objects_per_osd"]), counts(row["objects_per_osd_after"])
        moved = row.get("bytes_moved")
        shift = (2 * i - len(settings) + 0.5) * width
        ax.bar(x + shift, [before.get(o, 0) for o in osds], width, color=colour, alpha=0.45, hatch="//",
               edgecolor="black", linewidth=0.3)
        ax.bar(x + shift + width, [after.get(o, 0) for o in osds], width, color=colour, edgecolor="black",
               linewidth=0.3, label=f"{label}: {format_size(int(moved)) if pd.notna(moved) else '-'} moved")
    ax.set_xticks(x, osds, fontsize="small")
    ax.set_ylabel("objects (primary)", fontsize="small")
    ax.set_title("objects per OSD before (hatched) and after each setting's queries", fontsize="small")
    ax.legend(fontsize="x-small")


def _stacked(ax, x, rep: pd.DataFrame, width: float, label: str, offset: float = 0.0, color=None):
    """Init (hatched) and compute bars of one configuration's :func:`_init_compute` rows at
    positions ``x`` (``color``: None, matplotlib's cycle)."""
    bars = ax.bar(np.asarray(x) + offset, rep["init_s"].values, width, hatch="//", alpha=0.6, edgecolor="black",
                  linewidth=0.3, color=color)
    ax.bar(np.asarray(x) + offset, rep["compute_s"].values, width, bottom=rep["init_s"].values, label=label,
           color=bars.patches[0].get_facecolor(), alpha=1.0, edgecolor="black", linewidth=0.3)


def _init_legend(fig, axes, init: str = "init") -> None:
    """The figure's legend (:func:`~sae.results.drawing.plotting.figure_legend`) with the hatching of
    :func:`_stacked`'s lower bars said once."""
    figure_legend(fig, axes, extra=[(Patch(facecolor="white", edgecolor="black", hatch="//", linewidth=0.3),
                                     f"hatched: {init}")])


def _init_compute(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of ``by``, ``total_s``, ``init_s`` and ``compute_s`` of the median repetition by
    query time (:func:`~sae.results.analysis.measured.median_repetitions`): stacked, init and compute reach
    the median query time, where the two medians taken apart need not."""
    return median_repetitions(df, by, "total_s", ["init_s", "compute_s"])


def plot_objectsize_selectivity(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time vs selectivity, one line per object size, a panel per reader; with offload and
    a baseline, a last panel: baseline / offload time over the object size × selectivity grid."""
    keys = others(df, "object_size")
    s = stats(df, keys + ["object_size", "selectivity"]).sort_values(["object_size", "selectivity"])
    panels = sorted(groups(s, keys), key=lambda kv: readers.order(kv[1]["reader"].iloc[0]) if "reader" in keys else 0)
    pair = readers.ratio_pair(df["reader"]) if "reader" in df else None
    ratio = pair is not None
    fig, axes = plt.subplots(1, len(panels) + ratio, figsize=(4.8 * (len(panels) + ratio), 4), squeeze=False)
    for ax, (key, grp) in zip(axes[0], panels):
        for size, line in grp.groupby("object_size"):
            ax.plot(line["selectivity"], line["median"], marker="o", label=format_size(int(size)))
        ax.set_title(config_label(grp.iloc[0], keys), fontsize="medium")
        selectivity_axis(ax, s["selectivity"])
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
    return save(fig, out / "objectsize-selectivity.png")


def plot_scalability(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Init (hatched) and compute bars per logical dataset size, one bar per reader, and the
    speedup of offload over the baseline (baseline / offload median time) on the right axis."""
    df = df.assign(logical_rows=df["rows"] * df["link_multiplier"] * df["copy_multiplier"])
    keys = others(df, "link_multiplier") + varying(df, ["selectivity"])   # the thesis's query and a filter
    rep = _init_compute(df, ["logical_rows"] + keys)
    sizes = sorted(rep["logical_rows"].unique())
    confs = list(groups(rep, keys))
    width = 0.8 / max(1, len(confs))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, (key, grp) in enumerate(confs):
        grp = grp.sort_values("logical_rows")
        _stacked(ax, [sizes.index(v) for v in grp["logical_rows"]], grp, width, config_label(grp.iloc[0], keys),
                 offset=(i - (len(confs) - 1) / 2) * width)
    ax.set_xticks(range(len(sizes)), [f"{v / 1e6:g} M rows" for v in sizes])
    ax.set_xlabel("logical dataset size (rows scanned per query; hard-link inflation)")
    ax.set_ylabel("query time (s), median repetition (hatched: init)")
    series = [k for k in keys if k != "reader"]   # e.g. selectivity: one speedup line each
    right, top = None, 2.0
    for j, (_, part) in enumerate(groups(stats(df, ["logical_rows"] + keys), series)):
        total = part.pivot_table(index="logical_rows", columns="reader", values="median")
        if not (pair := readers.ratio_pair(total.columns)):
            continue
        subject, base = pair
        right = right or ax.twinx()
        speedup = (total[base] / total[subject]).reindex(sizes)
        right.plot(range(len(sizes)), speedup.values, color="black", marker="os^v"[j % 4],
                   linestyle=["-", "--", "-.", ":"][j % 4],
                   label=f"speedup ({base} / {subject})" + (f", {config_label(part.iloc[0], series)}" if series else ""))
        top = max(top, float(speedup.max()) * 1.25)
    if right is not None:
        right.axhline(1.0, color="black", linewidth=0.5, linestyle=":")
        right.set_ylabel("speedup: baseline / offload time")
        right.set_ylim(0, top)
    ax.set_title("Query time vs dataset size", fontsize="medium")
    _init_legend(fig, [ax] + ([right] if right is not None else []))
    return save(fig, out / "scalability.png")


def plot_backend(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Backend-only reads: init (listing, hatched) and scan time per object size, one bar per
    selectivity, each labelled with the objects it scanned."""
    rep = _init_compute(df, ["object_size", "selectivity"])
    objects = df[~df["warmup"]].groupby(["object_size", "selectivity"])["objects"].median()
    sizes, sels = sorted(rep["object_size"].unique()), sorted(rep["selectivity"].unique())
    width = 0.8 / len(sels)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, sel in enumerate(sels):
        g = rep[rep["selectivity"] == sel].sort_values("object_size")
        x = [sizes.index(v) for v in g["object_size"]]
        offset = (i - (len(sels) - 1) / 2) * width
        _stacked(ax, x, g, width, f"{sel:g} % of rows", offset=offset)
        for xi, size, top in zip(x, g["object_size"], (g["init_s"] + g["compute_s"]).values):   # the bar's top
            ax.annotate(f"{objects[size, sel]:.0f} obj", (xi + offset, top), ha="center", va="bottom",
                        fontsize="x-small")
    ax.set_xticks(range(len(sizes)), [format_size(int(v)) for v in sizes])
    ax.set_xlabel("object size")
    ax.set_ylabel("time (s), median repetition (hatched: listing the objects)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)   # room for the object counts
    ax.set_title("Backend-only reads: the object class's scan of every object, no Spark", fontsize="medium")
    _init_legend(fig, [ax], "listing the objects")
    return save(fig, out / "backend.png")


def plot_batchsize(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time, and the columnar batches Spark consumed per query (its event log's ``number
    of input batches``), vs rows per batch."""
    df = df.assign(batches=input_batches(run.root, df))
    keys = others(df, "batch_size")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel) in zip(axes, (("total_s", "query time (s), median"),
                                        ("batches", "batches per query (Spark's input batches)"))):
        s = stats(df, keys + ["batch_size"], col).sort_values("batch_size")
        for key, grp in groups(s, keys):
            ax.errorbar(grp["batch_size"], grp["median"], yerr=whiskers(grp), marker="o", capsize=3,
                        label=config_label(grp.iloc[0], keys), color=config_colour(grp.iloc[0], keys))
        sizes = sorted(v for v in set(s["batch_size"].astype(float)) if v > 0)
        if sizes:
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes, [f"{v:g}" for v in sizes])
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("rows per Arrow batch (batch_size, log scale)")
        ax.set_ylabel(ylabel)
    if df["batches"].gt(0).any():
        log_axis(axes[1])
    axes[0].set_ylim(bottom=0)
    axes[0].set_title("Query time vs batch size", fontsize="medium")
    axes[1].set_title("Batches Spark consumed per query", fontsize="medium")
    figure_legend(fig, axes)
    return save(fig, out / "batchsize.png", SPREAD_RULE)


def _per_value(df: pd.DataFrame, axis: str, xlabel: str, title: str, extra=()) -> plt.Figure:
    """Per value of the stored-data ``axis`` (in run order) and configuration, as grouped bars:
    init (hatched) and compute time, bytes to the compute side, then each ``extra`` panel
    (column, y label, title) where the run has the column; a row of panels per selectivity when
    the run has several (four panels: two rows of two). A configuration that lacks a value (e.g. a
    reader that cannot read a format) has no bar there."""
    keys = others(df, axis)
    values = list(dict.fromkeys(df.sort_values("order")[axis]))
    by = [axis] + keys
    panels = [(col, ylabel, name) for col, ylabel, name in
              (("compute_rx_bytes", "bytes to the compute hosts (MB), median", "Network: bytes to the compute hosts"),
               *extra) if col in df]
    selectivities = sorted(df["selectivity"].unique(), reverse=True)
    lines = max(str(v).count("\n") + 1 for v in values)
    count = 1 + len(panels)
    across = 2 if count == 4 else count   # four panels as two rows of two, not one wide row
    fig, grid = plt.subplots(len(selectivities) * math.ceil(count / across), across, squeeze=False,
                             figsize=(max(5.0, 1.3 * len(values) + 1.5) * across,
                                      (3.4 + 0.25 * lines) * len(selectivities) * math.ceil(count / across)))
    axes = np.asarray(grid).reshape(len(selectivities), -1)
    for row, selectivity in zip(axes, selectivities):
        part = df[df["selectivity"] == selectivity]
        rep = _init_compute(part, by)
        confs = list(groups(rep, keys))
        width = 0.8 / max(1, len(confs))
        for i, (key, grp) in enumerate(confs):
            def per_value(t: pd.DataFrame) -> pd.DataFrame:
                return t.merge(grp[by], on=by).set_index(axis).reindex(values).reset_index()
            offset, label = (i - (len(confs) - 1) / 2) * width, config_label(grp.iloc[0], keys)
            colour = config_colour(grp.iloc[0], keys)
            _stacked(row[0], range(len(values)), per_value(grp), width, label, offset=offset, color=colour)
            for ax, (col, _, _) in zip(row[1:], panels):
                scale = 1e6 if col.endswith("_bytes") else 1
                ax.bar(np.arange(len(values)) + offset, per_value(stats(part, by, col))["median"] / scale, width,
                       label=label, color=colour)
        at = f" ({selectivity:g} % of rows)" if len(selectivities) > 1 else ""
        for ax, (ylabel, name) in zip(row, [("query time (s), median repetition", title),
                                             *((y, n) for _, y, n in panels)]):
            ax.set_xticks(range(len(values)), values, fontsize="small" if lines > 1 else None)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(name + at, fontsize="medium")
    _init_legend(fig, axes)
    return fig


def plot_storedcompression(df: pd.DataFrame, out: Path) -> Path:
    """Per stored codec and reader: init (hatched) and compute time, and bytes to the compute side."""
    fig = _per_value(df, "stored_compression", "codec of the stored Parquet objects", "Query time vs stored compression")
    return save(fig, out / "storedcompression.png")


def plot_formats(df: pd.DataFrame, out: Path) -> Path:
    """Per stored format and reader: init (hatched) and compute time, bytes to the compute side,
    and the CPU time the object class spent decoding the stored objects."""
    fig = _per_value(df, "data_format", "stored format of the objects", "Query time vs stored format",
                     extra=(("cls_decode_s", "object class decode CPU (s), median", "Storage side: decoding"),))
    return save(fig, out / "formats.png")


def plot_versions(df: pd.DataFrame, out: Path) -> Path:
    """Per stack of software (Spark version, the Spark nodes' pyarrow, the object class's Arrow
    C++ release) and reader: init (hatched) and compute time, bytes to the compute side, the
    compute side's CPU time and the object class's CPU time."""
    pyarrow = df["spark_pyarrow"].astype(str) if "spark_pyarrow" in df else "26.0.1"   # pinned before the axis
    software = ("Spark " + df["spark_version"].astype(str) + "\npyarrow " + pyarrow
                + "\nclass: Arrow " + df["class_arrow"].astype(str))
    df = df.assign(software=software).drop(columns=["spark_version", "spark_pyarrow", "class_arrow"], errors="ignore")
    fig = _per_value(df, "software", "software (pyspark, the nodes' pyarrow; the class's Arrow C++)",
                     "Query time vs software", extra=(
                         ("compute_cpu_s", "compute-side CPU (s), median", "Compute side: CPU"),
                         ("cls_total_s", "object class CPU (s), median", "Storage side: the class's CPU")))
    return save(fig, out / "versions.png")


def plot_projection(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time and bytes to the compute side vs the number of columns the query reads."""
    df = df.assign(columns_read=columns_read(df))
    keys = others(df, "columns_read")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel, scale) in zip(axes, (("total_s", "query time (s), median", 1.0),
                                               ("compute_rx_bytes", "bytes to the compute hosts (MB), median", 1e6))):
        if col not in df or df[col].isna().all():
            continue
        s = stats(df, keys + ["columns_read"], col).sort_values("columns_read")
        for key, grp in groups(s, keys):
            ax.errorbar(grp["columns_read"], grp["median"] / scale, yerr=whiskers(grp, scale), marker="o", capsize=3,
                        label=config_label(grp.iloc[0], keys), color=config_colour(grp.iloc[0], keys))
        ticks = sorted(set(s["columns_read"].dropna()))
        ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
        ax.set_xlabel("columns the query reads")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    axes[0].set_title("Query time vs projection width", fontsize="medium")
    axes[1].set_title("Network: bytes to the compute hosts", fontsize="medium")
    figure_legend(fig, axes)
    return save(fig, out / "projection.png", SPREAD_RULE)


QUERY_PANELS = (("total_s", "query time (s)", 1.0, "Query time"),
                 ("compute_rx_bytes", "bytes to the compute hosts (MB)", 1e6, "Network: bytes to the compute hosts"),
                 ("compute_cpu_s", "compute hosts' CPU (s)", 1.0, "CPU of the compute hosts"),
                 ("storage_cpu_s", "storage hosts' CPU (s)", 1.0, "CPU of the storage hosts"))
"""The queries figure's panels: results column, axis label, scale, title."""


def plot_queries(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Per query (and selectivity, where it varies): median time, bytes to the compute side
    (log scale), and each side's CPU-seconds, one bar per reader (configuration)."""
    by_selectivity = "selectivity" in varying(df, ["selectivity"])
    df = df.assign(question=[f"{q}\n{sel:g} %" if by_selectivity else q for q, sel in zip(df["query"], df["selectivity"])])
    questions = list(dict.fromkeys(df.sort_values("order")["question"]))
    keys = others(df, "query")
    fig, axes = plt.subplots(2, 2, figsize=(max(10, 1.4 * len(questions)), 7))
    for ax, (col, ylabel, scale, title) in zip(axes.flat, QUERY_PANELS):
        if col in df and not df[col].isna().all():
            confs = sorted(groups(stats(df, ["question"] + keys, col), keys),
                           key=lambda kv: readers.order(kv[1].iloc[0]["reader"]) if "reader" in keys else 0)
            width = 0.8 / len(confs)
            for i, (_, grp) in enumerate(confs):
                heights = grp.set_index("question")["median"].reindex(questions) / scale
                ax.bar(np.arange(len(questions)) + (i - (len(confs) - 1) / 2) * width, heights, width,
                       label=config_label(grp.iloc[0], keys), color=config_colour(grp.iloc[0], keys) if keys else None)
            if col == "compute_rx_bytes" and (df[col] > 0).any():
                log_axis(ax)   # 1 % of the rows and all of them on one axis
        ax.set_xticks(range(len(questions)), questions, fontsize="small")
        ax.set_xlabel("query" + (" and selectivity (% of rows)" if by_selectivity else ""))
        ax.set_ylabel(f"{ylabel}, median")
        ax.set_title(title, fontsize="medium")
    figure_legend(fig, axes)
    return save(fig, out / "queries.png")
