"""Every figure a report can draw, in the shape of the thesis's (or the Arrow-Spark paper's) figure
for its axis, and :data:`DRAW`: figure name (:data:`sae.planning.spec.FIGURES`) → its function. An
experiment declares the figures it gets (``Experiment.figures``); every report also draws
:data:`sae.planning.spec.STANDARD_FIGURES`. Each function takes the run directory, its results and the
report directory and returns the paths it wrote (none: nothing to draw).

* ``selectivity.png`` (thesis fig. 14): median query time vs selectivity (log axis), band p1–p99
  (with fewer than 10 measured values per point: min and max as ticks), one line
  per reader (configuration); ``compute-side.png``: bytes the compute hosts received and their
  CPU-seconds vs selectivity.
* ``objectsize.png`` (fig. 15): stacked init/compute bars per object size, a panel per selectivity.
* ``bandwidth.png``: median query time vs link rate, a line per reader and reply compression, a
  panel per selectivity.
* ``contention.png``: median query time per second tenant on the storage hosts (a CPU load, a
  second application's scans), a line per reader, a panel per selectivity, with what the tenants
  got as measured.
* ``autoscaler.png`` (thesis figs. 22-23): every measured query's time in the order it ran, a
  line per PG autoscaler setting, and the placement groups the OSDs held after each query.
* ``points.png``: median time per point.
* ``alleviation.png`` (fig. 13): what each side spent per configuration; ``resources-disk.png``
  (fig. 12): the storage hosts' device reads and writes over time.
* ``resources-cpu.png`` / ``resources-net.png`` (figs. 10-11): per-host CPU (cores busy) and
  network (compute hosts: received, storage hosts: sent) over the median repetition of each
  configuration at the lowest selectivity, stacked by host, compute and storage in separate rows.
* ``time-composition.png`` (fig. 19's question): per selectivity and reader, an object request's
  compute-side time by the connector's phases beside the class's CPU by phase.
* ``storage-phases.png``: per selectivity and reader, the object class's CPU-seconds per query by
  phase (read, decode, filter, aggregate, sort, project, encode, compress, reply) beside the storage hosts'
  measured CPU-seconds; ``storage-ops.png``: the OSDs' counters per query (read ops, bytes read
  from the store and sent) and the class calls.
* ``backend.png`` (fig. 16): backend-only scan time (init/compute) per object size.
* ``objectsize-selectivity.png`` (fig. 17): time vs selectivity per object size, per reader, and
  the baseline / offload ratio over the grid.
* ``scalability.png`` (fig. 18): init/compute bars per logical size and reader, speedup line.
* ``batchsize.png`` (E1), ``storedcompression.png`` (E4), ``projection.png`` (E5).
* ``queries.png``: per query (:mod:`sae.planning.queries`; and selectivity where it varies) the
  median time, bytes to the compute side (log scale) and each side's CPU-seconds, a bar per reader.

Medians over measured repetitions (warm-ups left out), as everywhere in the report.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter
import numpy as np
import pandas as pd

from data_deploy import SCHEMA
from monitor_deploy import read_frame
from metareserve import format_size

from ..planning import readers
from .eventlog import input_batches
from .plotting import (CONFIG, config_colour, config_label, groups, measured, others, save, selectivity_axis, shown,
                       spread, stats, varying)
from .results import RunDir, host_roles

from .storage_work import CLIENT_PHASES, CLS_PHASES, client_column


SIDE_ROWS = {"cpu": (("compute", "cpu_seconds", "compute_cpu_s"), ("storage", "cpu_seconds", "storage_cpu_s")),
             "net": (("compute", "net_rx_bytes", "compute_rx_bytes"), ("storage", "net_tx_bytes", "storage_tx_bytes"))}
"""Figure → its (side, counter, results column) rows."""


YLABEL = {"cpu_seconds": "CPU (cores busy)", "net_rx_bytes": "received (MB/s)",
          "net_tx_bytes": "sent (MB/s)"}


def plot_selectivity(df: pd.DataFrame, out: Path) -> Path:
    """Selectivity curve: median total time with a p1–p99 band per configuration (reader)."""
    keys = varying(df, CONFIG)
    s = stats(df, keys + ["selectivity"]).sort_values("selectivity")
    fig, ax = plt.subplots(figsize=(6, 4))
    drawn = set()
    for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
        line, = ax.plot(grp["selectivity"], grp["median"], marker="o", label=config_label(grp.iloc[0], keys),
                        color=config_colour(grp.iloc[0], keys))
        drawn.add(spread(ax, grp["selectivity"], grp, line.get_color()))
    selectivity_axis(ax, s["selectivity"])
    ax.set_ylabel("query time (s): median, " + " / ".join(sorted(drawn)))
    ax.set_title("Query time vs selectivity")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    return save(fig, out / "selectivity.png")


def plot_compute_side(df: pd.DataFrame, out: Path) -> Path:
    """Bytes received by and CPU-seconds of the compute hosts vs selectivity, per configuration."""
    keys = varying(df, CONFIG)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel, scale) in zip(axes, (("compute_rx_bytes", "bytes received (MB), median", 1e6),
                                               ("compute_cpu_s", "CPU-seconds, median", 1.0))):
        s = stats(df, keys + ["selectivity"], col).sort_values("selectivity")
        for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
            ax.plot(grp["selectivity"], grp["median"] / scale, marker="o", label=config_label(grp.iloc[0], keys),
                    color=config_colour(grp.iloc[0], keys))
        selectivity_axis(ax, s["selectivity"])
        ax.set_ylabel(ylabel)
    if (df["compute_rx_bytes"] > 0).any() if "compute_rx_bytes" in df else False:
        axes[0].set_yscale("log")   # nothing to scale where no window was complete
    axes[0].set_title("Network: bytes to the compute hosts")
    axes[1].set_title("CPU of the compute hosts")
    axes[0].legend(fontsize="small")
    return save(fig, out / "compute-side.png")


def plot_objectsize(df: pd.DataFrame, out: Path) -> Path:
    """Stacked init/compute bars (medians) per object size; a panel per selectivity."""
    sels = sorted(df["selectivity"].unique())
    keys = varying(df, [c for c in CONFIG if c != "object_size"])
    fig, axes = plt.subplots(1, len(sels), figsize=(4 * len(sels) + 1, 4), squeeze=False)
    for ax, sel in zip(axes[0], sels):
        d = df[df["selectivity"] == sel]
        init = stats(d, ["object_size"] + keys, "init_s")
        comp = stats(d, ["object_size"] + keys, "compute_s")
        order = [int(s) for s in init["object_size"]]
        init = init.assign(order=order).sort_values(["order"] + keys)
        comp = comp.set_index(["object_size"] + keys).loc[
            list(init.set_index(["object_size"] + keys).index)].reset_index()
        labels = [config_label(r, ["object_size"] + keys).replace("object_size=", "") for _, r in init.iterrows()]
        x = range(len(labels))
        ax.bar(x, init["median"], label="init")
        ax.bar(x, comp["median"], bottom=init["median"].values, label="compute")
        ax.set_xticks(list(x), labels, rotation=30, ha="right", fontsize="small")
        ax.set_title(f"selectivity {sel}%")
        ax.set_ylabel("time (s), median")
    axes[0][0].legend()
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
            ax.plot(grp["rate"], grp["median"], marker="o", label=config_label(row, shown))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted(set(d["rate"]))
        ax.set_xticks(ticks, [("unlimited" if t == unlimited else f"{t:g}") for t in ticks], fontsize="small")
        ax.minorticks_off()
        ax.set_xlabel("link rate per host (Gbit/s)")
        ax.set_ylabel("query time (s), median, log scale")
        ax.set_title("all" if sel is None else f"selectivity {sel:g}%")
    axes[0][0].legend(fontsize="small")
    return save(fig, out / "bandwidth.png")


TENANTS = ("storage_load", "storage_scans")
"""The second tenants an experiment declares (``cluster.storage_load``, ``cluster.storage_scans``)."""


def tenant_label(load: float, scans: int) -> str:
    """A tenant state as the contention figure's axis names it."""
    parts = ([f"CPU {load:g}x cores"] if load else []) + ([f"{scans:g} scans in flight"] if scans else [])
    return " + ".join(parts) or "none"


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
            top.plot(grp["tenant_x"], grp["median"], marker="o", label=config_label(row, keys),
                     color=config_colour(row, keys))
            spread(top, grp["tenant_x"], grp, config_colour(row, keys))
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
            top.set_yscale("log")   # a tenant that slows one reader 10x would flatten the others
            top.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            top.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            top.yaxis.set_minor_formatter(NullFormatter())
        else:
            top.set_ylim(bottom=0)
        top.set_ylabel("query time (s), median")
        top.set_title("all" if sel is None else f"selectivity {sel:g}%")
        for ax in (top, bottom):
            ax.set_xticks(range(len(states)))
            ax.set_xticklabels([tenant_label(*st) for st in states] if ax is bottom else [], fontsize="small")
            ax.set_xlim(-0.5, len(states) - 0.5)
        bottom.set_xlabel("second tenant on the storage hosts (measured below, per second)")
    axes[0][0].legend(fontsize="small")
    return save(fig, out / "contention.png")


def plot_autoscaler(df: pd.DataFrame, out: Path) -> Path | None:
    """Each measured query's time against its place in the series (the thesis's figs. 22-23:
    a gradual slowdown over repeated runs with Ceph's PG autoscaler on), a line per setting
    (``pg_autoscale``, and whatever else varies), and below the placement groups the OSDs held
    right after each query (``osd_pgs``: the autoscaler's changes, where it made any)."""
    m = measured(df)
    if m.empty or "pg_autoscale" not in m:
        return None
    keys = ["pg_autoscale", *others(m, "pg_autoscale")]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    for _, grp in groups(m.sort_values("start"), keys):
        row = grp.iloc[0]
        label = ", ".join(f"autoscaler {'on' if row[k] else 'off'}" if k == "pg_autoscale" else f"{k}={shown(k, row[k])}"
                          for k in keys)
        index = range(1, len(grp) + 1)
        line, = top.plot(index, grp["total_s"].astype(float), marker="o", markersize=3, label=label)
        if "osd_pgs" in grp:   # dashed over solid: equal counts stay visible
            bottom.step(index, pd.to_numeric(grp["osd_pgs"], errors="coerce"), where="mid", color=line.get_color(),
                        linestyle="--" if row["pg_autoscale"] else "-", label=label)
    top.set_ylim(bottom=0)
    top.set_ylabel("query time (s)")
    top.set_title("each query in the order it ran")
    top.legend(fontsize="small")
    bottom.set_ylabel("PGs on the OSDs", fontsize="small")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel("query in the series (measured repetitions)")
    return save(fig, out / "autoscaler.png")


def plot_points(df: pd.DataFrame, out: Path) -> Path:
    """Median total time per point (fallback when neither selectivity nor object size varies)."""
    keys = varying(df, list(CONFIG) + ["selectivity"])
    s = stats(df, ["order"] + keys).sort_values("order")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(range(len(s)), s["median"], yerr=[s["median"] - s["p1"], s["p99"] - s["median"]])
    ax.set_xticks(range(len(s)), [config_label(r, keys) for _, r in s.iterrows()], rotation=30,
                  ha="right", fontsize="small")
    ax.set_ylabel("query time (s), median, p1–p99")
    return save(fig, out / "points.png")


def representatives(df: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """(label, row) of the median measured repetition of each configuration, at the lowest
    selectivity when selectivity varies (the paper's alleviation figure: 1 %)."""
    keys = varying(df, list(CONFIG) + ["selectivity"])
    d = measured(df)
    if "selectivity" in keys:
        d, keys = d[d["selectivity"] == d["selectivity"].min()], [k for k in keys if k != "selectivity"]
    out = []
    for _, grp in (d.groupby(keys, dropna=False, sort=False) if keys else [((), d)]):
        med = grp.iloc[(grp["total_s"] - grp["total_s"].median()).abs().argsort().iloc[0]]
        out.append((config_label(med, keys) + (f" at {med['selectivity']:g} %" if "selectivity" in df else ""), med))
    return out


def _representative_files(run: RunDir, df: pd.DataFrame, name: str) -> list[tuple[str, pd.Series, Path]]:
    """(label, row, path) of the representative repetitions (:func:`representatives`) whose
    metric window holds the file ``name``."""
    reps = [(label, row, run.metrics / row["point"] / f"rep{row['repetition']}" / name)
            for label, row in representatives(df)]
    return [r for r in reps if r[2].exists()]


def host_rates(counters: pd.DataFrame, start: float, end: float, pad: float = 2.0, step: float = 0.05):
    """Seconds into the repetition and counter → {node: rate per second} on a regular grid from
    ``pad`` before ``start`` to ``pad`` after ``end``: each point holds the rate of the
    measurement interval it lies in (between two consecutive readings of the counter, at the
    times they were read: ``measured``, else the scrape time), summed over the node's series.
    Drawn as steps (``step="post"``), every second of work shows inside the interval it was
    measured in, so a query's work never shows after the interval holding its end."""
    grid = np.arange(start - pad, end + pad, step)
    out: dict[str, dict[str, np.ndarray]] = {}
    at = "measured" if "measured" in counters else "timestamp"
    for (counter, node, _), g in counters.groupby(["counter", "node", "series"], sort=False):
        g = g.sort_values(at)
        t, v = g[at].to_numpy(dtype=float), g["value"].to_numpy(dtype=float)
        for i in np.flatnonzero(np.diff(v) < 0):   # a reset: continue from the value before it
            v[i + 1:] += v[i]
        keep = np.concatenate([[True], np.diff(t) > 0])   # a value served twice: read once
        t, v = t[keep], v[keep]
        rates = np.zeros(len(grid))
        if len(t) > 1:
            idx = np.searchsorted(t, grid, side="right") - 1
            inside = (idx >= 0) & (idx < len(t) - 1)
            per = np.diff(v) / np.diff(t)
            rates[inside] = per[idx[inside]]
        nodes = out.setdefault(counter, {})
        nodes[node] = nodes.get(node, 0.0) + rates
    return grid - start, out


def plot_resources(run: RunDir, df: pd.DataFrame, out: Path) -> list[Path]:
    """Per-host CPU and network over the representative repetitions (:func:`representatives`),
    stacked by host; compute hosts in the top row, storage hosts in the bottom row; titles carry
    the side's total during the query (the results column). The query is shaded; each rate is
    drawn over the interval it was measured in (:func:`host_rates`), so the query's work lies
    within one measurement interval of the shade."""
    reps = _representative_files(run, df, "counters.parquet")
    if not reps:
        return []
    points = {p.id: p for p in run.load_plan().points}
    series = [(label, row, host_rates(read_frame(path), row["start"], row["end"]))
              for label, row, path in reps]
    paths = []
    for metric, rows in SIDE_ROWS.items():
        fig, axes = plt.subplots(2, len(series), figsize=(4.2 * len(series) + 1, 6), squeeze=False,
                                 sharex="col", sharey="row")
        for col, (label, row, (t, rates)) in enumerate(series):
            roles = host_roles(run, points[row["point"]])
            for r, (side, counter, column) in enumerate(rows):
                ax = axes[r][col]
                hosts = [n for n in sorted(rates.get(counter, {})) if roles.get(n) in (side, "both")]
                scale = 1e6 if counter.startswith("net") else 1.0
                if hosts:
                    ax.stackplot(t, *[rates[counter][n] / scale for n in hosts], labels=hosts, alpha=0.85,
                                 step="post")
                total = f"{row[column] / scale:.3g} {'MB' if scale > 1 else 'CPU-s'}" if column in row else "-"
                ax.set_title(f"{label}\n{side}: {total} in the query" if r == 0 else f"{side}: {total} in the query",
                             fontsize="small")
                ax.axvspan(0, row["end"] - row["start"], color="grey", alpha=0.08)
                if col == 0:
                    ax.set_ylabel(f"{side} {YLABEL[counter]}")
                    ax.legend(fontsize="x-small", loc="upper left")
                if r == 1:
                    ax.set_xlabel("seconds since the query started (shaded: the query)")
        fig.suptitle("CPU per host" if metric == "cpu" else "Network per host", fontsize="medium")
        paths.append(save(fig, out / f"resources-{metric}.png"))
    return paths


STORAGE_OPS = (("osd_read_ops", "read ops (class calls included)", 1.0),
               ("osd_store_read_bytes", "read from the store (MB)", 1e6),
               ("osd_read_reply_bytes", "sent in read replies (MB)", 1e6),
               ("cls_calls", "object class calls", 1.0))
"""Storage-ops panels: results column, title, scale."""


def _config_medians(df: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Medians of ``columns`` over measured repetitions per configuration and selectivity, and
    the configuration keys."""
    keys = [k for k in varying(df, CONFIG) if k != "selectivity"]
    by = keys + (["selectivity"] if "selectivity" in df else [])
    d = measured(df).astype({c: float for c in columns})
    return d.groupby(by, dropna=False)[columns].median().reset_index(), keys


def plot_storage_phases(df: pd.DataFrame, out: Path) -> list[Path]:
    """``storage-phases.png``: per selectivity and reader, the object class's CPU-seconds per
    query stacked by phase (medians of measured repetitions), the class's unphased rest, and the
    storage hosts' measured CPU-seconds beside it (a black tick): what of the storage side's work
    the class accounts for. Empty when no reader reported phases (vanilla only)."""
    present = [p for p in CLS_PHASES if f"cls_{p}_s" in df]   # runs before protocol 3 have no aggregate phase
    phases = [f"cls_{p}_s" for p in present]
    if "cls_total_s" not in df or df["cls_total_s"].notna().sum() == 0:
        return []
    cols = phases + ["cls_total_s"] + (["storage_cpu_s"] if "storage_cpu_s" in df else [])
    med, keys = _config_medians(df[df["cls_total_s"].notna()], cols)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(med) + 2), 4.5))
    x = np.arange(len(med))
    bottom = np.zeros(len(med))
    for col, phase in zip(phases, present):
        ax.bar(x, med[col], bottom=bottom, label=phase)
        bottom += med[col].fillna(0).to_numpy()
    ax.bar(x, (med["cls_total_s"] - bottom).clip(lower=0), bottom=bottom, color="lightgrey", hatch="//",
           label="other (in the class)")
    if "storage_cpu_s" in med:
        ax.scatter(x, med["storage_cpu_s"], marker="_", s=400, color="black", zorder=3,
                   label="storage hosts, measured")
    labels = [(f"{r['selectivity']:g} %\n" if "selectivity" in med else "") + config_label(r, keys) for _, r in med.iterrows()]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("CPU-seconds per query, median")
    ax.set_title("Storage side: the object class's phases")
    ax.legend(fontsize="x-small", loc="upper left")
    return [save(fig, out / "storage-phases.png")]


def plot_time_composition(df: pd.DataFrame, out: Path) -> list[Path]:
    """``time-composition.png`` (thesis fig. 19's question: where did a request's time go?): per
    selectivity and reader, an object request's time on the compute side stacked by the
    connector's phases (:data:`~sae.results.storage_work.CLIENT_PHASES`; wall seconds per request,
    medians of measured repetitions) with its measured reading time as a black tick, and beside it
    the object class's CPU-seconds per request stacked by phase. Requests are pipelined
    (``calls_in_flight``), so the class's work overlaps the waits rather than adding to them.
    Empty without the connector's phases (vanilla only, or runs before they were measured)."""
    cols = [client_column(p) for p in CLIENT_PHASES]
    if not set(cols + ["client_reader_s", "cls_calls"]) <= set(df) or df["client_reader_s"].notna().sum() == 0:
        return []
    osd = [f"cls_{p}_s" for p in CLS_PHASES if f"cls_{p}_s" in df]
    d = df[df["client_reader_s"].notna() & (df["cls_calls"] > 0)]
    d = d.assign(**{c: d[c] / d["cls_calls"] for c in cols + osd + ["client_reader_s"]})
    med, keys = _config_medians(d, cols + osd + ["client_reader_s"])
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(med) + 2) + 2.5, 4.5))
    x = np.arange(len(med))
    width = 0.4
    sides = ((-width / 2, "compute", cols, CLIENT_PHASES, plt.cm.tab10.colors),
             (width / 2, "OSD", osd, [c[4:-2] for c in osd], plt.cm.Pastel1.colors))
    for offset, side, columns, names, colours in sides:
        bottom = np.zeros(len(med))
        for i, (col, name) in enumerate(zip(columns, names)):
            ax.bar(x + offset, med[col] * 1e3, width, bottom=bottom, label=f"{side}: {name}",
                   color=colours[i % len(colours)], edgecolor="white")
            bottom += med[col].fillna(0).to_numpy() * 1e3
    ax.scatter(x - width / 2, med["client_reader_s"] * 1e3, marker="_", s=300, color="black", zorder=3,
               label="compute: measured reading time")
    labels = [(f"{r['selectivity']:g} %\n" if "selectivity" in med else "") + config_label(r, keys) for _, r in med.iterrows()]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("ms per object request, median")
    ax.set_title("Where a request's time went (left bar: compute side, wall; right bar: OSD, CPU)",
                 fontsize="medium")
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return [save(fig, out / "time-composition.png")]


def plot_storage_ops(df: pd.DataFrame, out: Path) -> list[Path]:
    """``storage-ops.png``: the OSDs' own counters per query (read ops, bytes read from the store,
    bytes sent) and the class calls, per selectivity and reader (medians). Empty without them."""
    panels = [p for p in STORAGE_OPS if p[0] in df and df[p[0]].notna().any()]
    if not panels:
        return []
    med, keys = _config_medians(df, [p[0] for p in panels])
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels) + 1, 4), squeeze=False)
    labels = [(f"{r['selectivity']:g} %, " if "selectivity" in med else "") + config_label(r, keys) for _, r in med.iterrows()]
    for ax, (col, title, scale) in zip(axes[0], panels):
        ax.bar(range(len(med)), med[col] / scale)
        ax.set_xticks(range(len(med)), labels, rotation=40, ha="right", fontsize="x-small")
        ax.set_title(title, fontsize="small")
    axes[0][0].set_ylabel("per query, median")
    fig.suptitle("Storage operations (the OSDs' counters)", fontsize="medium")
    return [save(fig, out / "storage-ops.png")]


SIDES = (("compute_cpu_s", "compute CPU-s", 1.0), ("compute_rx_bytes", "compute received (MB)", 1e6),
         ("storage_cpu_s", "storage CPU-s", 1.0), ("storage_tx_bytes", "storage sent (MB)", 1e6))


def _stacked(ax, x, init: pd.DataFrame, comp: pd.DataFrame, width: float, label: str, offset: float = 0.0):
    """Init (hatched) and compute bars of one configuration at positions ``x``."""
    bars = ax.bar(np.asarray(x) + offset, init["median"].values, width, hatch="//", alpha=0.6, edgecolor="black",
                  linewidth=0.3)
    ax.bar(np.asarray(x) + offset, comp["median"].values, width, bottom=init["median"].values, label=label,
           color=bars.patches[0].get_facecolor(), alpha=1.0, edgecolor="black", linewidth=0.3)


def _init_compute(df: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return stats(df, by, "init_s"), stats(df, by, "compute_s")


def plot_alleviation(run: RunDir, df: pd.DataFrame, out: Path) -> list[Path]:
    """Per configuration, what the compute side and the storage side spent during the query
    (medians, p1–p99): CPU-seconds and bytes (thesis fig. 13's areas under the curves)."""
    if not any(c in df and df[c].notna().any() for c, _, _ in SIDES):
        return []
    keys = varying(df, list(CONFIG) + ["selectivity"])
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.8))
    for ax, (col, title, scale) in zip(axes, SIDES):
        s = stats(df, keys, col) if keys else stats(df.assign(all="all"), ["all"], col)
        labels = [config_label(r, keys) for _, r in s.iterrows()]
        ax.bar(range(len(s)), s["median"] / scale,
               yerr=[(s["median"] - s["p1"]) / scale, (s["p99"] - s["median"]) / scale], capsize=3,
               color=[config_colour(r, keys) or f"C{i}" for i, (_, r) in enumerate(s.iterrows())])
        ax.set_xticks(range(len(s)), labels, rotation=20, ha="right", fontsize="small")
        ax.set_title(title, fontsize="medium")
    fig.suptitle("What each side spent during the query (median, p1–p99)", fontsize="medium")
    return [save(fig, out / "alleviation.png")]


def plot_devices(run: RunDir, df: pd.DataFrame, out: Path) -> list[Path]:
    """The storage hosts' device reads and writes (MB/s, stacked by host) over the representative
    repetition of each configuration (thesis fig. 12). On the local cluster the rates are the
    host's processes' storage I/O; a memstore OSD reads RAM, which the title says."""
    reps = _representative_files(run, df, "metrics.parquet")
    if not reps:
        return []
    points = {p.id: p for p in run.load_plan().points}
    fig, axes = plt.subplots(2, len(reps), figsize=(4.2 * len(reps) + 1, 5.5), squeeze=False,
                             sharex="col", sharey="row")
    for col, (label, row, path) in enumerate(reps):
        m = read_frame(path)
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
    return [save(fig, out / "resources-disk.png")]


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


def plot_scaling(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Init (hatched) and compute bars per logical dataset size, one bar per reader, and the
    speedup of offload over the baseline (baseline / offload median time) on the right axis."""
    df = df.assign(logical_rows=df["rows"] * df["link_multiplier"] * df["copy_multiplier"])
    keys = others(df, "link_multiplier") + varying(df, ["selectivity"])   # the thesis's query and a filter
    init, comp = _init_compute(df, ["logical_rows"] + keys)
    sizes = sorted(init["logical_rows"].unique())
    confs = list(groups(init, keys))
    width = 0.8 / max(1, len(confs))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, (key, grp) in enumerate(confs):
        c = comp.merge(grp[["logical_rows", *keys]], on=["logical_rows", *keys])
        grp, c = grp.sort_values("logical_rows"), c.sort_values("logical_rows")
        _stacked(ax, [sizes.index(v) for v in grp["logical_rows"]], grp, c, width, config_label(grp.iloc[0], keys),
                 offset=(i - (len(confs) - 1) / 2) * width)
    ax.set_xticks(range(len(sizes)), [f"{v / 1e6:g} M rows" for v in sizes])
    ax.set_xlabel("logical dataset size (rows scanned per query; hard-link inflation)")
    ax.set_ylabel("time (s), median (hatched: init)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.4)   # room for the legends above the bars
    ax.legend(fontsize="small", loc="upper left")
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
        right.legend(fontsize="small", loc="upper right")
    ax.set_title("Query time vs dataset size", fontsize="medium")
    return save(fig, out / "scalability.png")


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
    return save(fig, out / "backend.png")


def plot_batchsize(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time, and the columnar batches Spark consumed per query (its event log's ``number
    of input batches``), vs rows per batch."""
    df = df.assign(batches=input_batches(run.root, df))
    keys = others(df, "batch_size")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel) in zip(axes, (("total_s", "query time (s), median, p1–p99"),
                                        ("batches", "batches per query (Spark's input batches)"))):
        s = stats(df, keys + ["batch_size"], col).sort_values("batch_size")
        for key, grp in groups(s, keys):
            ax.errorbar(grp["batch_size"], grp["median"], yerr=[grp["median"] - grp["p1"], grp["p99"] - grp["median"]],
                        marker="o", capsize=3, label=config_label(grp.iloc[0], keys))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rows per Arrow batch (batch_size)")
        ax.set_ylabel(ylabel)
    axes[1].set_yscale("log")
    axes[0].set_ylim(bottom=0)
    axes[0].set_title("Query time vs batch size", fontsize="medium")
    axes[1].set_title("Batches Spark consumed per query", fontsize="medium")
    if keys:
        axes[0].legend(fontsize="small")
    return save(fig, out / "batchsize.png")


def plot_storedcompression(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Per stored codec and reader: init (hatched) and compute time, and bytes to the compute side."""
    keys = others(df, "stored_compression")
    codecs = list(dict.fromkeys(df.sort_values("order")["stored_compression"]))
    by = ["stored_compression"] + keys
    init, comp = _init_compute(df, by)
    rx = stats(df, by, "compute_rx_bytes") if "compute_rx_bytes" in df else None
    confs = list(groups(init, keys))
    width = 0.8 / max(1, len(confs))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for i, (key, grp) in enumerate(confs):
        def per_codec(t: pd.DataFrame) -> pd.DataFrame:
            return t.merge(grp[by], on=by).set_index("stored_compression").loc[codecs].reset_index()
        offset, label = (i - (len(confs) - 1) / 2) * width, config_label(grp.iloc[0], keys)
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
    return save(fig, out / "storedcompression.png")


def columns_read(df: pd.DataFrame) -> pd.Series:
    """How many columns each repetition's query read (``columns``; empty: every column of the
    generated data's schema, or NaN for ingested data of unknown width)."""
    width = np.where(df["data_input"].isna(), len(SCHEMA.names), np.nan) if "data_input" in df else len(SCHEMA.names)
    return pd.Series([len(c) if len(c) else w for c, w in zip(df["columns"], np.broadcast_to(width, len(df)))],
                     index=df.index, dtype=float)


def plot_projection(run: RunDir, df: pd.DataFrame, out: Path) -> Path:
    """Median time and bytes to the compute side vs the number of columns the query reads."""
    df = df.assign(columns_read=columns_read(df))
    keys = others(df, "columns_read")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel, scale) in zip(axes, (("total_s", "query time (s), median, p1–p99", 1.0),
                                               ("compute_rx_bytes", "bytes to the compute hosts (MB), median", 1e6))):
        if col not in df or df[col].isna().all():
            continue
        s = stats(df, keys + ["columns_read"], col).sort_values("columns_read")
        for key, grp in groups(s, keys):
            ax.errorbar(grp["columns_read"], grp["median"] / scale,
                        yerr=[(grp["median"] - grp["p1"]) / scale, (grp["p99"] - grp["median"]) / scale],
                        marker="o", capsize=3, label=config_label(grp.iloc[0], keys))
        ax.set_xlabel("columns the query reads")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small")
    axes[0].set_title("Query time vs projection width", fontsize="medium")
    axes[1].set_title("Network: bytes to the compute hosts", fontsize="medium")
    return save(fig, out / "projection.png")


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
            if col == "compute_rx_bytes":
                ax.set_yscale("log")
            ax.legend(fontsize="small")
        ax.set_xticks(range(len(questions)), questions, fontsize="small")
        ax.set_ylabel(f"{ylabel}, median")
        ax.set_title(title, fontsize="medium")
    return save(fig, out / "queries.png")


DRAW: dict[str, Callable[[RunDir, pd.DataFrame, Path], list[Path]]] = {
    "queries": lambda run, df, out: [plot_queries(run, df, out)],
    "selectivity": lambda run, df, out: [plot_selectivity(df, out)],
    "compute-side": lambda run, df, out: [plot_compute_side(df, out)],
    "bandwidth": lambda run, df, out: [plot_bandwidth(df, out)],
    "objectsize": lambda run, df, out: [plot_objectsize(df, out)],
    "objectsize-selectivity": lambda run, df, out: [plot_objectsize_selectivity(run, df, out)],
    "backend": lambda run, df, out: [plot_backend(run, df, out)],
    "scalability": lambda run, df, out: [plot_scaling(run, df, out)],
    "batchsize": lambda run, df, out: [plot_batchsize(run, df, out)],
    "storedcompression": lambda run, df, out: [plot_storedcompression(run, df, out)],
    "projection": lambda run, df, out: [plot_projection(run, df, out)],
    "contention": lambda run, df, out: [plot_contention(df, out)],
    "autoscaler": lambda run, df, out: [p for p in [plot_autoscaler(df, out)] if p],
    "points": lambda run, df, out: [plot_points(df, out)],
    "alleviation": plot_alleviation,
    "resources": plot_resources,
    "resources-disk": plot_devices,
    "storage-phases": lambda run, df, out: plot_storage_phases(df, out),
    "time-composition": lambda run, df, out: plot_time_composition(df, out),
    "storage-ops": lambda run, df, out: plot_storage_ops(df, out),
}
"""Figure name (:data:`sae.planning.spec.FIGURES`, the names an experiment declares) → its function."""
