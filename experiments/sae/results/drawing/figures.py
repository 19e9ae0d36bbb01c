"""Every figure a report can draw, in the shape of the thesis's (or the Arrow-Spark paper's) figure
for its axis, each named by its entry in :mod:`sae.planning.figures`. An experiment declares the
figures it gets (``Experiment.figures``); every report also draws the standard ones. Each function
takes its results (and the run directory where it reads more) and the report directory and returns
what it wrote (nothing: nothing to draw). The figures of one
experiment's own axis live in :mod:`sae.results.drawing.axis_figures`; here the ones many runs draw:

* ``selectivity.png`` (thesis fig. 14): median query time vs selectivity (log axis), whiskers by
  :data:`~sae.results.drawing.plotting.SPREAD_RULE` (p1–p99 with 10 or more measured values per point, else
  min–max), one line per reader (configuration); ``compute-side.png``: bytes the compute hosts
  received and their CPU-seconds vs selectivity.
* ``points.png``: median time per point.
* ``alleviation.png`` (fig. 13): what each side spent per configuration; ``resources-disk.png``
  (fig. 12): the storage hosts' device reads and writes over time.
* ``resources-cpu.png`` / ``resources-net.png`` (figs. 10-11): per-host CPU (cores busy) and
  network (compute hosts: received, storage hosts: sent) over the median repetition of each
  configuration at the lowest selectivity, stacked by host, compute and storage in separate rows.
* ``time-composition.png`` (fig. 19's question): per selectivity and reader, an object request's
  compute-side time by the connector's phases beside the class's CPU by phase (hatched), each
  phase in a colour of its own (:data:`PHASE_COLOURS`).
* ``storage-phases.png``: per selectivity and reader, the object class's CPU-seconds per query by
  phase (read, decode, filter, aggregate, sort, project, encode, compress, reply) beside the storage hosts'
  measured CPU-seconds; ``storage-ops.png``: the OSDs' counters per query (read ops, bytes read
  from the store and sent) and the class calls.

Medians over measured repetitions (warm-ups left out), as everywhere in the report.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from monitor_deploy import continued, read_frame

from ..analysis.measured import CONFIG, measured, median_repetitions, stats, varying
from ..run.directory import RunDir, host_roles
from ..run.storage_work import CLIENT_PHASES, CLS_PHASES, client_column
from .plotting import (SPREAD_RULE, config_colour, config_label, figure_legend, grouped_bars, legend_outside, log_axis,
                       pyplot, save, selectivity_axis, whiskers)

plt = pyplot()   # a drawing module: importing it loads matplotlib


SIDE_ROWS = {"cpu": (("compute", "cpu_seconds", "compute_cpu_s"), ("storage", "cpu_seconds", "storage_cpu_s")),
             "net": (("compute", "net_rx_bytes", "compute_rx_bytes"), ("storage", "net_tx_bytes", "storage_tx_bytes"))}
"""Figure → its (side, counter, results column) rows."""


YLABEL = {"cpu_seconds": "CPU (cores busy)", "net_rx_bytes": "received (MB/s)",
          "net_tx_bytes": "sent (MB/s)"}


def plot_selectivity(df: pd.DataFrame, out: Path) -> Path:
    """Selectivity curve: median total time with whiskers (:func:`~sae.results.drawing.plotting.whiskers`)
    per configuration (reader), on a log selectivity axis."""
    keys = varying(df, CONFIG)
    s = stats(df, keys + ["selectivity"]).sort_values("selectivity")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
        ax.errorbar(grp["selectivity"], grp["median"], yerr=whiskers(grp), marker="o", capsize=3,
                    label=config_label(grp.iloc[0], keys), color=config_colour(grp.iloc[0], keys))
    selectivity_axis(ax, s["selectivity"])
    ax.set_ylabel("query time (s), median")
    ax.set_title("Query time vs selectivity")
    ax.set_ylim(bottom=0)
    legend_outside(ax)
    return save(fig, out / "selectivity.png", SPREAD_RULE)


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
        log_axis(axes[0])   # nothing to scale where no window was complete
    axes[1].set_ylim(bottom=0)
    axes[0].set_title("Network: bytes to the compute hosts")
    axes[1].set_title("CPU of the compute hosts")
    figure_legend(fig, axes)
    return save(fig, out / "compute-side.png")


def plot_points(df: pd.DataFrame, out: Path) -> Path:
    """Median total time per point (fallback when neither selectivity nor object size varies)."""
    keys = varying(df, list(CONFIG) + ["selectivity"])
    s = stats(df, ["order"] + keys).sort_values("order")
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(s) + 2), 4))
    ax.bar(range(len(s)), s["median"], yerr=whiskers(s), capsize=3,
           color=[config_colour(r, ["reader"]) if "reader" in r else None for _, r in s.iterrows()])
    ax.set_xticks(range(len(s)), [config_label(r, keys) for _, r in s.iterrows()], rotation=30,
                  ha="right", fontsize="small")
    ax.set_xlabel("point")
    ax.set_ylabel("query time (s), median")
    return save(fig, out / "points.png", SPREAD_RULE)


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
        t, v = g[at].to_numpy(dtype=float), continued(g["value"].to_numpy(dtype=float))
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
    series = [(label, row, host_rates(read_frame(path), row["start"], row["end"]),
               host_roles(run, points[row["point"]])) for label, row, path in reps]
    paths = []
    for metric, rows in SIDE_ROWS.items():
        fig, axes = plt.subplots(2, len(series), figsize=(4.2 * len(series) + 1, 6), squeeze=False,
                                 sharex="col", sharey="row")
        for col, (label, row, (t, rates), roles) in enumerate(series):
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
                if col == len(series) - 1 and hosts:
                    legend_outside(ax, title=f"{side} hosts")
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


def _config_groups(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The configuration keys that vary in ``df`` (selectivity aside), and the columns a figure
    groups its repetitions by (those keys and the selectivity)."""
    keys = [k for k in varying(df, CONFIG) if k != "selectivity"]
    return keys, keys + (["selectivity"] if "selectivity" in df else [])


def _config_medians(df: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Medians of ``columns`` over measured repetitions per configuration and selectivity, and
    the configuration keys."""
    keys, by = _config_groups(df)
    d = measured(df).astype({c: float for c in columns})
    return d.groupby(by, dropna=False)[columns].median().reset_index(), keys


def _median_repetitions(df: pd.DataFrame, value: str, parts: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Per configuration and selectivity, ``value`` and ``parts`` of the median repetition
    (:func:`~sae.results.analysis.measured.median_repetitions`), and the configuration keys."""
    keys, group = _config_groups(df)
    return median_repetitions(df, group, value, parts), keys


PHASE_COLOURS = {
    "compute": {"request": "#CC79A7", "wait": "#E69F00", "decode": "#56B4E9", "spark": "#009E73"},
    "OSD": {"index": "#E377C2", "read": "#0072B2", "decode": "#D55E00", "filter": "#F0E442", "aggregate": "#8C564B",
            "sort": "#9467BD", "project": "#17BECF", "encode": "#BCBD22", "compress": "#7F7F7F", "reply": "#332288"},
}
"""Each side's phases (:data:`~sae.results.run.storage_work.CLIENT_PHASES`, the class's
:data:`~sae.results.run.storage_work.CLS_PHASES`) → a colour of its own, the same in every figure:
the Okabe-Ito colour-blind-safe set, then matplotlib's tab10 for the class's rarer phases; no two
phases share one, and the time composition hatches the OSD's bars besides."""


def _drawn(med: pd.DataFrame, columns: list[str]) -> list[str]:
    """The ``columns`` that are non-zero somewhere in ``med`` (a phase no bar has is left out of
    the bars and the legend)."""
    return [c for c in columns if med[c].fillna(0).abs().sum() > 0]


def plot_storage_phases(df: pd.DataFrame, out: Path) -> list[Path]:
    """``storage-phases.png``: per selectivity and reader, the object class's CPU-seconds per
    query stacked by phase, the class's unphased rest, and the storage hosts' measured CPU-seconds
    beside it (a black tick): what of the storage side's work the class accounts for, all of the
    median repetition by the class's total. Empty when no reader reported phases (vanilla only)."""
    present = [p for p in CLS_PHASES if f"cls_{p}_s" in df]   # runs before protocol 3 have no aggregate phase
    phases = [f"cls_{p}_s" for p in present]
    if "cls_total_s" not in df or df["cls_total_s"].notna().sum() == 0:
        return []
    cols = phases + (["storage_cpu_s"] if "storage_cpu_s" in df else [])
    med, keys = _median_repetitions(df[df["cls_total_s"].notna()], "cls_total_s", cols)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(med) + 2), 4.5))
    x = np.arange(len(med))
    bottom = np.zeros(len(med))
    for col in _drawn(med, phases):
        phase = col[4:-2]
        ax.bar(x, med[col], bottom=bottom, label=phase, color=PHASE_COLOURS["OSD"][phase], edgecolor="white",
               linewidth=0.5)
        bottom += med[col].fillna(0).to_numpy()
    ax.bar(x, (med["cls_total_s"] - bottom).clip(lower=0), bottom=bottom, color="lightgrey", hatch="//",
           label="other (in the class)")
    if "storage_cpu_s" in med:
        ax.scatter(x, med["storage_cpu_s"], marker="_", s=400, color="black", zorder=3,
                   label="storage hosts, measured")
    labels = [(f"{r['selectivity']:g} %\n" if "selectivity" in med else "") + config_label(r, keys) for _, r in med.iterrows()]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize="small")
    ax.set_xlabel("selectivity and reader" if "selectivity" in med else "configuration")
    ax.set_ylabel("CPU-seconds per query, median repetition")
    ax.set_title("Storage side: the object class's phases")
    legend_outside(ax, title="the class's phase")
    return [save(fig, out / "storage-phases.png")]


def plot_time_composition(df: pd.DataFrame, out: Path) -> list[Path]:
    """``time-composition.png`` (thesis fig. 19's question: where did a request's time go?): per
    selectivity and reader, an object request's time on the compute side stacked by the
    connector's phases (:data:`~sae.results.run.storage_work.CLIENT_PHASES`; wall seconds per request)
    with its measured reading time as a black tick, and beside it the object class's CPU-seconds
    per request stacked by phase (hatched), all of the median repetition by reading time (its
    phases add up to its reading time; medians taken phase by phase need not); every phase in
    its own colour (:data:`PHASE_COLOURS`), those zero in every bar left out. Requests are
    pipelined (``calls_in_flight``), so the class's work overlaps the waits rather than adding to
    them. Empty without the connector's phases (vanilla only, or runs before they were measured)."""
    cols = [client_column(p) for p in CLIENT_PHASES]
    if not set(cols + ["client_reader_s", "cls_calls"]) <= set(df) or df["client_reader_s"].notna().sum() == 0:
        return []
    osd = [f"cls_{p}_s" for p in CLS_PHASES if f"cls_{p}_s" in df]
    d = df[df["client_reader_s"].notna() & (df["cls_calls"] > 0)]
    d = d.assign(**{c: d[c] / d["cls_calls"] for c in cols + osd + ["client_reader_s"]})
    med, keys = _median_repetitions(d, "client_reader_s", cols + osd)
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(med) + 2), 4.5))
    x = np.arange(len(med))
    width = 0.4
    sides = ((-width / 2, "compute", dict(zip(cols, CLIENT_PHASES)), None),
             (width / 2, "OSD", {c: c[4:-2] for c in osd}, "///"))
    for offset, side, names, hatch in sides:
        bottom = np.zeros(len(med))
        for col in _drawn(med, list(names)):
            name = names[col]
            ax.bar(x + offset, med[col] * 1e3, width, bottom=bottom, label=f"{side}: {name}",
                   color=PHASE_COLOURS[side][name], hatch=hatch, edgecolor="white", linewidth=0.5)
            bottom += med[col].fillna(0).to_numpy() * 1e3
    ax.scatter(x - width / 2, med["client_reader_s"] * 1e3, marker="_", s=300, color="black", zorder=3,
               label="compute: measured reading time")
    labels = [(f"{r['selectivity']:g} %\n" if "selectivity" in med else "") + config_label(r, keys) for _, r in med.iterrows()]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize="small")
    ax.set_xlabel("selectivity and reader" if "selectivity" in med else "configuration")
    ax.set_ylabel("ms per object request, median repetition")
    ax.set_title("Where a request's time went (left bar: compute side, wall; right bar, hatched: OSD, CPU)",
                 fontsize="medium")
    legend_outside(ax)
    return [save(fig, out / "time-composition.png")]


def plot_storage_ops(df: pd.DataFrame, out: Path) -> list[Path]:
    """``storage-ops.png``: the OSDs' own counters per query (read ops, bytes read from the store,
    bytes sent) and the class calls, per selectivity and reader (medians). Empty without them."""
    panels = [p for p in STORAGE_OPS if p[0] in df and df[p[0]].notna().any()]
    if not panels:
        return []
    med, keys = _config_medians(df, [p[0] for p in panels])
    keys = keys + (["selectivity"] if "selectivity" in med else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels) + 1, 4), squeeze=False)
    for ax, (col, title, scale) in zip(axes[0], panels):
        grouped_bars(ax, med, keys, col, scale)
        ax.set_title(title, fontsize="small")
        ax.set_ylabel(("MB" if scale > 1 else "count") + " per query, median")
    fig.suptitle("Storage operations (the OSDs' counters)", fontsize="medium")
    figure_legend(fig, axes)
    return [save(fig, out / "storage-ops.png")]


SIDES = (("compute_cpu_s", "compute hosts: CPU", "CPU-seconds", 1.0),
         ("compute_rx_bytes", "compute hosts: received", "MB", 1e6),
         ("storage_cpu_s", "storage hosts: CPU", "CPU-seconds", 1.0),
         ("storage_tx_bytes", "storage hosts: sent", "MB", 1e6))
"""The alleviation figure's panels: results column, title, unit, scale."""


def plot_alleviation(run: RunDir, df: pd.DataFrame, out: Path) -> list[Path]:
    """Per configuration, what the compute side and the storage side spent during the query
    (medians, whiskers by :data:`~sae.results.drawing.plotting.SPREAD_RULE`): CPU-seconds and bytes (thesis
    fig. 13's areas under the curves), a bar per reader grouped by the other parameters."""
    if not any(c in df and df[c].notna().any() for c, _, _, _ in SIDES):
        return []
    keys = varying(df, list(CONFIG) + ["selectivity"])
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.8))
    for ax, (col, title, unit, scale) in zip(axes, SIDES):
        s = stats(df, keys, col) if keys else stats(df.assign(all="all"), ["all"], col)
        grouped_bars(ax, s, keys, scale=scale, yerr=whiskers(s, scale))
        ax.set_title(title, fontsize="medium")
        ax.set_ylabel(f"{unit} in the query, median")
    fig.suptitle("What each side spent during the query", fontsize="medium")
    figure_legend(fig, axes)
    return [save(fig, out / "alleviation.png", SPREAD_RULE)]


def plot_resources_disk(run: RunDir, df: pd.DataFrame, out: Path) -> list[Path]:
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
            if col == len(reps) - 1 and not wide.empty:
                legend_outside(ax, title="storage hosts")
            if r == 1:
                ax.set_xlabel("seconds since the query started (shaded: the query)")
    fig.suptitle("Storage devices per host", fontsize="medium")
    return [save(fig, out / "resources-disk.png")]
