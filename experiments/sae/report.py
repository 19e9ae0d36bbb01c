"""The report of a run, in the paper's shapes, from its tidy results and metric windows.

* ``selectivity.png``: median query time vs selectivity, band p1–p99, one line per reader
  (configuration).
* ``compute-side.png``: bytes the compute hosts received and their CPU-seconds vs selectivity.
* ``objectsize.png``: stacked init/compute bars (medians) per object size, one panel per selectivity.
* ``resources-cpu.png`` / ``resources-net.png``: per-host CPU (cores busy) and network (compute
  hosts: received, storage hosts: sent) over the median repetition of each configuration at the
  lowest selectivity, stacked by host, compute and storage in separate rows.
* ``bandwidth.png``: median query time vs link rate, a line per reader and reply compression, a panel
  per selectivity (when the sweep varies the link rate; the selectivity figures are left out then).
* ``points.png``: median time per point when the sweep varies neither selectivity nor object size.
* ``storage-phases.png``: per selectivity and reader, the object class's CPU-seconds per query by
  phase (read, decode, filter, project, encode, compress, reply) beside the storage hosts'
  measured CPU-seconds; ``storage-ops.png``: the OSDs' counters per query (read ops, bytes read
  from the store and sent) and the class calls.
* ``summary.txt`` / ``summary.csv``: at each selectivity, offload against each baseline as ratios
  (bytes to the compute side, compute CPU, time), with the paper's figures beside ours.
* ``index.html``: one self-contained page: summary, figures, per-point p1/p50/p99, hosts, the
  warm-up rule, the plan and the versions.

Warm-up repetitions are excluded from every statistic (they stay in results.parquet).
"""
from __future__ import annotations

import base64
import contextlib
import contextvars
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import jinja2  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from metareserve import format_size  # noqa: E402

from . import capacity_report, readers  # noqa: E402
from .results import RESOURCES, RunDir, host_roles, load_results  # noqa: E402
from .spec import SIZES  # noqa: E402
from .storage_work import CLS_PHASES  # noqa: E402

CONFIG = ("reader", "compression", "batch_size", "objects_per_partition", "object_size", "stored_compression",
          "columns_read", "rows", "link_multiplier", "nodes", "store", "link_rate", "cluster_cores")
PAPER = {"bytes_x": 48.9, "compute_cpu_x": 8.0}
"""The paper's figures at 1 % selectivity, offload against its no-offload baseline: 48.9x less
network traffic to and 8.0x less CPU on the compute cluster."""
RATIOS = {"time_x": "total_s", "bytes_x": "compute_rx_bytes", "compute_cpu_x": "compute_cpu_s"}
"""Summary ratio → the measured column it divides (baseline median / offload median)."""
SIDE_ROWS = {"cpu": (("compute", "cpu_seconds", "compute_cpu_s"), ("storage", "cpu_seconds", "storage_cpu_s")),
             "net": (("compute", "net_rx_bytes", "compute_rx_bytes"), ("storage", "net_tx_bytes", "storage_tx_bytes"))}
"""Figure → its (side, counter, results column) rows."""
YLABEL = {"cpu_seconds": "CPU (cores busy)", "net_rx_bytes": "received (MB/s)",
          "net_tx_bytes": "sent (MB/s)"}


def warmup_rule(warmup: int, repetitions: int) -> str:
    """The warm-up rule as one sentence."""
    return (f"The first {warmup} of the {repetitions} repetitions of every point warm up (JVM, caches): they "
            f"stay in results.parquet with warmup=True and are left out of every statistic; p1, p50 "
            f"and p99 are quantiles over the {repetitions - warmup} measured repetitions.")


def stats(df: pd.DataFrame, by: list[str], value: str = "total_s") -> pd.DataFrame:
    """Median, p1 and p99 of ``value`` over non-warm-up repetitions, grouped by ``by``."""
    d = df[~df["warmup"]].astype({value: float})
    g = d.groupby(by, dropna=False)[value]
    return pd.DataFrame({"median": g.median(), "p1": g.quantile(0.01), "p99": g.quantile(0.99),
                         "n": g.size()}).reset_index()


def _varying(df: pd.DataFrame, columns) -> list[str]:
    return [c for c in columns if c in df and df[c].astype(str).nunique() > 1]


def _label(row, keys) -> str:
    return ", ".join(readers.get(row[k]).label if k == "reader" else f"{k}={_shown(k, row[k])}"
                     for k in keys) or "all"


def _colour(row, keys) -> str | None:
    """The reader's colour when the reader is all that tells configurations apart, else None
    (matplotlib's cycle)."""
    return readers.get(row["reader"]).colour if list(keys) == ["reader"] else None


def _shown(column: str, value) -> str:
    """A parameter's value as a person reads it (sizes, stored in bytes, in binary units)."""
    return format_size(int(value)) if column in SIZES and not pd.isna(value) else str(value)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Each offloading reader (``reader``) against each baseline (:mod:`sae.readers`) at each
    selectivity (and other varied parameters): medians over measured repetitions, ratios
    baseline / offload (``time_x``, ``bytes_x``: bytes to the compute side, ``compute_cpu_x``;
    > 1 means offload spends less) and, for offload at 1 % against no-offload, the paper's ratios
    beside them. Empty unless the run has an offloading reader and a baseline."""
    if "reader" not in df or not set(readers.OFFLOADING) & set(df["reader"]):
        return pd.DataFrame()
    keys = _varying(df, [c for c in CONFIG if c != "reader"]) + ["selectivity"]
    values = ["total_s", *[c for c in RESOURCES if c in df]]
    med = df[~df["warmup"]].astype({v: float for v in values}).groupby(
        keys + ["reader"], dropna=False)[values].median()
    rows = []
    for key, g in med.groupby(level=keys if len(keys) > 1 else keys[0], dropna=False):
        g = g.droplevel(keys)
        for subject, base in [(s, b) for s in readers.OFFLOADING for b in readers.BASELINES
                              if s in g.index and b in g.index]:
            off = g.loc[subject]
            row = dict(zip(keys, key if isinstance(key, tuple) else (key,)), reader=subject, baseline=base)
            for v in values:
                row[f"offload_{v}"], row[f"baseline_{v}"] = off[v], g.loc[base][v]
            for ratio, v in RATIOS.items():
                row[ratio] = g.loc[base][v] / off[v] if v in values and off[v] > 0 else math.nan
            paper = (row["selectivity"] == 1 and subject == readers.OFFLOAD.name
                     and base == readers.NO_OFFLOAD.name)
            row.update({f"paper_{k}": v if paper else math.nan for k, v in PAPER.items()})
            rows.append(row)
    return pd.DataFrame(rows)


def _x(value) -> str:
    return "-" if pd.isna(value) else f"{value:.1f}x"


def _num(value, scale=1.0, fmt="{:.2f}") -> str:
    return "-" if pd.isna(value) else fmt.format(value / scale)


def summary_rows(s: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows of the summary (shared by the text and the HTML table)."""
    extra = [c for c in s.columns if c in CONFIG and (c != "reader" or s["reader"].nunique() > 1)]
    head = ["sel %", *extra, "baseline", "time s off/base", "time", "compute rx MB off/base", "bytes",
            "paper", "compute CPU s off/base", "CPU", "paper", "storage CPU s off/base"]
    rows = []
    for _, r in s.iterrows():
        rows.append([f"{r['selectivity']:g}", *[str(r[c]) for c in extra], r["baseline"],
                     f"{_num(r['offload_total_s'])} / {_num(r['baseline_total_s'])}", _x(r["time_x"]),
                     f"{_num(r.get('offload_compute_rx_bytes'), 1e6, '{:.1f}')} / "
                     f"{_num(r.get('baseline_compute_rx_bytes'), 1e6, '{:.1f}')}", _x(r["bytes_x"]),
                     _x(r["paper_bytes_x"]),
                     f"{_num(r.get('offload_compute_cpu_s'))} / {_num(r.get('baseline_compute_cpu_s'))}",
                     _x(r["compute_cpu_x"]), _x(r["paper_compute_cpu_x"]),
                     f"{_num(r.get('offload_storage_cpu_s'))} / {_num(r.get('baseline_storage_cpu_s'))}"])
    return head, rows


def window_note(df: pd.DataFrame) -> str:
    """One line naming the measured repetitions whose bytes and CPU are unknown because their
    Prometheus window is incomplete (empty when every window is complete)."""
    if "metric_window" not in df:
        return ""
    d = df[~df["warmup"]]
    bad = d[~d["metric_window"].isin(["complete", "off"])]
    if bad.empty:
        return ""
    kinds = ", ".join(f"{n} {k}" for k, n in bad["metric_window"].value_counts().items())
    return (f"{len(bad)} of {len(d)} measured repetitions have no complete metric window ({kinds}: Prometheus "
            f"or an exporter was down); their bytes and CPU-seconds are left out of the medians, not zero")


def summary_text(s: pd.DataFrame) -> str:
    """The summary as a fixed-width table (what ``sae report`` prints)."""
    if s.empty:
        return "summary: no offload point with a baseline at the same parameters in this run"
    head, rows = summary_rows(s)
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join(["offload vs each baseline (medians of measured repetitions; x = baseline / offload, "
                      "> 1: offload spends less; paper: its 1 % figures vs no-offload)",
                      line(head), *map(line, rows)])


def plot_selectivity(df: pd.DataFrame, out: Path) -> Path:
    """Selectivity curve: median total time with a p1–p99 band per configuration (reader)."""
    keys = _varying(df, CONFIG)
    s = stats(df, keys + ["selectivity"]).sort_values("selectivity")
    fig, ax = plt.subplots(figsize=(6, 4))
    for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
        line, = ax.plot(grp["selectivity"], grp["median"], marker="o", label=_label(grp.iloc[0], keys),
                        color=_colour(grp.iloc[0], keys))
        ax.fill_between(grp["selectivity"], grp["p1"], grp["p99"], alpha=0.2, color=line.get_color())
    ax.set_xlabel("selectivity (% of rows kept)")
    ax.set_ylabel("query time (s), median, p1–p99")
    ax.set_title("Query time vs selectivity")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    return _save(fig, out / "selectivity.png")


def plot_compute_side(df: pd.DataFrame, out: Path) -> Path:
    """Bytes received by and CPU-seconds of the compute hosts vs selectivity, per configuration."""
    keys = _varying(df, CONFIG)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, ylabel, scale) in zip(axes, (("compute_rx_bytes", "bytes received (MB), median", 1e6),
                                               ("compute_cpu_s", "CPU-seconds, median", 1.0))):
        s = stats(df, keys + ["selectivity"], col).sort_values("selectivity")
        for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
            ax.plot(grp["selectivity"], grp["median"] / scale, marker="o", label=_label(grp.iloc[0], keys),
                    color=_colour(grp.iloc[0], keys))
        ax.set_xlabel("selectivity (% of rows kept)")
        ax.set_ylabel(ylabel)
    axes[0].set_yscale("log")
    axes[0].set_title("Network: bytes to the compute hosts")
    axes[1].set_title("CPU of the compute hosts")
    axes[0].legend(fontsize="small")
    return _save(fig, out / "compute-side.png")


def plot_objectsize(df: pd.DataFrame, out: Path) -> Path:
    """Stacked init/compute bars (medians) per object size; a panel per selectivity."""
    sels = sorted(df["selectivity"].unique())
    keys = _varying(df, [c for c in CONFIG if c != "object_size"])
    fig, axes = plt.subplots(1, len(sels), figsize=(4 * len(sels) + 1, 4), squeeze=False)
    for ax, sel in zip(axes[0], sels):
        d = df[df["selectivity"] == sel]
        init = stats(d, ["object_size"] + keys, "init_s")
        comp = stats(d, ["object_size"] + keys, "compute_s")
        order = [int(s) for s in init["object_size"]]
        init = init.assign(order=order).sort_values(["order"] + keys)
        comp = comp.set_index(["object_size"] + keys).loc[
            list(init.set_index(["object_size"] + keys).index)].reset_index()
        labels = [_label(r, ["object_size"] + keys).replace("object_size=", "") for _, r in init.iterrows()]
        x = range(len(labels))
        ax.bar(x, init["median"], label="init")
        ax.bar(x, comp["median"], bottom=init["median"].values, label="compute")
        ax.set_xticks(list(x), labels, rotation=30, ha="right", fontsize="small")
        ax.set_title(f"selectivity {sel}%")
        ax.set_ylabel("time (s), median")
    axes[0][0].legend()
    return _save(fig, out / "objectsize.png")


def plot_bandwidth(df: pd.DataFrame, out: Path) -> Path:
    """Median query time vs the declared link rate (log scale; unlimited at the right end), one
    line per reader and reply compression, a panel per selectivity."""
    d = df.assign(rate=df["link_rate_declared_bps"].astype(float) / 1e9)
    finite = d["rate"].dropna()
    unlimited = (finite.max() if not finite.empty else 1.0) * 4
    d["rate"] = d["rate"].fillna(unlimited)
    sels = sorted(d["selectivity"].unique()) if "selectivity" in d else [None]
    keys = _varying(d, [c for c in CONFIG if c not in ("link_rate", "cluster_cores")])
    fig, axes = plt.subplots(1, len(sels), figsize=(4.5 * len(sels) + 1, 4), squeeze=False, sharey=False)
    for ax, sel in zip(axes[0], sels):
        s = stats(d if sel is None else d[d["selectivity"] == sel], keys + ["rate"]).sort_values("rate")
        for _, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
            row = grp.iloc[0]
            replies = "reader" not in row or readers.get(row["reader"]).connector   # vanilla: no replies
            shown = [k for k in keys if k != "compression" or replies]
            ax.plot(grp["rate"], grp["median"], marker="o", label=_label(row, shown))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted(set(d["rate"]))
        ax.set_xticks(ticks, [("unlimited" if t == unlimited else f"{t:g}") for t in ticks], fontsize="small")
        ax.minorticks_off()
        ax.set_xlabel("link rate per host (Gbit/s)")
        ax.set_ylabel("query time (s), median, log scale")
        ax.set_title("all" if sel is None else f"selectivity {sel:g}%")
    axes[0][0].legend(fontsize="small")
    return _save(fig, out / "bandwidth.png")


def plot_points(df: pd.DataFrame, out: Path) -> Path:
    """Median total time per point (fallback when neither selectivity nor object size varies)."""
    keys = _varying(df, list(CONFIG) + ["selectivity"])
    s = stats(df, ["order"] + keys).sort_values("order")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(range(len(s)), s["median"], yerr=[s["median"] - s["p1"], s["p99"] - s["median"]])
    ax.set_xticks(range(len(s)), [_label(r, keys) for _, r in s.iterrows()], rotation=30,
                  ha="right", fontsize="small")
    ax.set_ylabel("query time (s), median, p1–p99")
    return _save(fig, out / "points.png")


def representatives(df: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """(label, row) of the median measured repetition of each configuration, at the lowest
    selectivity when selectivity varies (the paper's alleviation figure: 1 %)."""
    keys = _varying(df, list(CONFIG) + ["selectivity"])
    d = df[~df["warmup"]]
    if "selectivity" in keys:
        d, keys = d[d["selectivity"] == d["selectivity"].min()], [k for k in keys if k != "selectivity"]
    out = []
    for _, grp in (d.groupby(keys, dropna=False, sort=False) if keys else [((), d)]):
        med = grp.iloc[(grp["total_s"] - grp["total_s"].median()).abs().argsort().iloc[0]]
        out.append((_label(med, keys) + (f" at {med['selectivity']:g} %" if "selectivity" in df else ""), med))
    return out


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
    reps = [(label, row, run.metrics / row["point"] / f"rep{row['repetition']}" / "counters.parquet")
            for label, row in representatives(df)]
    reps = [r for r in reps if r[2].exists()]
    if not reps:
        return []
    points = {p.id: p for p in run.load_plan().points}
    series = [(label, row, host_rates(pd.read_parquet(path), row["start"], row["end"]))
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
        paths.append(_save(fig, out / f"resources-{metric}.png"))
    return paths


STORAGE_OPS = (("osd_read_ops", "read ops (class calls included)", 1.0),
               ("osd_store_read_bytes", "read from the store (MB)", 1e6),
               ("osd_read_reply_bytes", "sent in read replies (MB)", 1e6),
               ("cls_calls", "object class calls", 1.0))
"""Storage-ops panels: results column, title, scale."""


def _config_medians(df: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Medians of ``columns`` over measured repetitions per configuration and selectivity, and
    the configuration keys."""
    keys = [k for k in _varying(df, CONFIG) if k != "selectivity"]
    by = keys + (["selectivity"] if "selectivity" in df else [])
    d = df[~df["warmup"]].astype({c: float for c in columns})
    return d.groupby(by, dropna=False)[columns].median().reset_index(), keys


def plot_storage_phases(df: pd.DataFrame, out: Path) -> list[Path]:
    """``storage-phases.png``: per selectivity and reader, the object class's CPU-seconds per
    query stacked by phase (medians of measured repetitions), the class's unphased rest, and the
    storage hosts' measured CPU-seconds beside it (a black tick): what of the storage side's work
    the class accounts for. Empty when no reader reported phases (vanilla only)."""
    phases = [f"cls_{p}_s" for p in CLS_PHASES]
    if "cls_total_s" not in df or df["cls_total_s"].notna().sum() == 0:
        return []
    cols = phases + ["cls_total_s"] + (["storage_cpu_s"] if "storage_cpu_s" in df else [])
    med, keys = _config_medians(df[df["cls_total_s"].notna()], cols)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(med) + 2), 4.5))
    x = np.arange(len(med))
    bottom = np.zeros(len(med))
    for col, phase in zip(phases, CLS_PHASES):
        ax.bar(x, med[col], bottom=bottom, label=phase)
        bottom += med[col].fillna(0).to_numpy()
    ax.bar(x, (med["cls_total_s"] - bottom).clip(lower=0), bottom=bottom, color="lightgrey", hatch="//",
           label="other (in the class)")
    if "storage_cpu_s" in med:
        ax.scatter(x, med["storage_cpu_s"], marker="_", s=400, color="black", zorder=3,
                   label="storage hosts, measured")
    labels = [(f"{r['selectivity']:g} %\n" if "selectivity" in med else "") + _label(r, keys) for _, r in med.iterrows()]
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("CPU-seconds per query, median")
    ax.set_title("Storage side: the object class's phases")
    ax.legend(fontsize="x-small", loc="upper left")
    return [_save(fig, out / "storage-phases.png")]


def plot_storage_ops(df: pd.DataFrame, out: Path) -> list[Path]:
    """``storage-ops.png``: the OSDs' own counters per query (read ops, bytes read from the store,
    bytes sent) and the class calls, per selectivity and reader (medians). Empty without them."""
    panels = [p for p in STORAGE_OPS if p[0] in df and df[p[0]].notna().any()]
    if not panels:
        return []
    med, keys = _config_medians(df, [p[0] for p in panels])
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels) + 1, 4), squeeze=False)
    labels = [(f"{r['selectivity']:g} %, " if "selectivity" in med else "") + _label(r, keys) for _, r in med.iterrows()]
    for ax, (col, title, scale) in zip(axes[0], panels):
        ax.bar(range(len(med)), med[col] / scale)
        ax.set_xticks(range(len(med)), labels, rotation=40, ha="right", fontsize="x-small")
        ax.set_title(title, fontsize="small")
    axes[0][0].set_ylabel("per query, median")
    fig.suptitle("Storage operations (the OSDs' counters)", fontsize="medium")
    return [_save(fig, out / "storage-ops.png")]


_kept: contextvars.ContextVar[list | None] = contextvars.ContextVar("sae_report_kept", default=None)


@contextlib.contextmanager
def keeping_figures():
    """Within the block, every figure saved is also kept: yields the list of (path, Figure)."""
    token = _kept.set([])
    try:
        yield _kept.get()
    finally:
        _kept.reset(token)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)   # out of pyplot's figure list; the Figure itself still draws
    if (kept := _kept.get()) is not None:
        kept.append((path, fig))
    return path


def point_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per point, in run order: its varied parameters, n measured repetitions, query time p1/p50/p99
    and the medians of the side resources."""
    keys = _varying(df, list(CONFIG) + ["selectivity"])
    t = stats(df, ["order", "point"] + keys).rename(columns={"median": "p50"})
    extra = [c for c in RESOURCES if c in df]
    if extra:
        med = df[~df["warmup"]].groupby("point")[extra].median()
        t = t.join(med, on="point")
    return t.sort_values("order").drop(columns="order")


PAGE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 0.8em; font-size: 0.8em; overflow-x: auto; }
.note { color: #555; font-size: 0.9em; } .warn { color: #a00; }
</style></head><body>
<h1>{{ title }}</h1>
<p class="note">{{ description }}<br>Run directory: <code>{{ root }}</code></p>
<h2>Summary: offload against each baseline</h2>
{% if note %}<p class="warn"><strong>Warning:</strong> {{ note }}.</p>{% endif %}
{% if summary %}<p class="note">Medians of the measured repetitions; ratio = baseline / offload (&gt; 1: offload
spends less). Bytes = bytes received by the compute hosts, CPU = CPU-seconds of the compute hosts, both
during the query. The paper's figures (at 1 %, against its no-offload baseline): {{ paper }}.</p>
<table><tr>{% for h in summary[0] %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in summary[1:] %}<tr>{% for c in r %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
{% else %}<p>No offload point has a baseline at the same parameters in this run.</p>{% endif %}
<h2>Figures</h2>
{% for name, data in figures %}<img src="data:image/png;base64,{{ data }}" alt="{{ name }}" title="{{ name }}">
{% endfor %}
<h2>Points: query time p1 / p50 / p99</h2>
<table><tr>{% for h in points[0] %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in points[1:] %}<tr>{% for c in r %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
<h2>Hosts</h2>
<p class="note">Declared capacities (cores: the cpuset a host runs on; link: its rate in each direction) and
the cores each host got under a busy loop when the capacities were put in force.
{% for line in capacities %}<br>{{ line }}{% endfor %}</p>
<table><tr>{% for h in host_head %}<th class="l">{{ h }}</th>{% endfor %}</tr>
{% for r in hosts %}<tr>{% for c in r %}<td class="l">{{ c }}</td>{% endfor %}</tr>{% endfor %}
</table>
<h2>Warm-up rule</h2><p>{{ warmup }}</p>
<h2>Plan</h2><pre>{{ plan }}</pre>
<h2>Versions</h2>
<table>{% for k, v in versions %}<tr><td class="l">{{ k }}</td><td class="l">{{ v }}</td></tr>{% endfor %}</table>
</body></html>
""", autoescape=True)


def _cells(t: pd.DataFrame) -> list[list[str]]:
    def cell(v):
        if isinstance(v, float):
            return "-" if math.isnan(v) else f"{v:.4g}"
        return str(v)
    return [list(map(str, t.columns))] + [[cell(v) for v in r] for r in t.itertuples(index=False)]


def write_html(run: RunDir, df: pd.DataFrame, s: pd.DataFrame, figures: list[Path], note: str = "") -> Path:
    """``report/index.html``: one self-contained page (figures embedded as data URIs)."""
    plan = run.load_plan()
    spec = run.read_yaml(run.spec) or {}
    layout = run.read_yaml(run.layout)
    hosts = []
    if layout:
        from metareserve import Layout
        lay = Layout.from_dict(layout)
        sides = lay.host_roles()
        hosts = [(n, sides.get(n, "-"), ", ".join(lay.roles_of(n))) for n in lay.all_names()]
    vers = (run.read_yaml(run.versions) or {}).get("controller", {})
    page = PAGE.render(
        title=f"{plan.experiment} ({plan.profile or 'default'} profile)", root=str(run.root), note=note,
        description=spec.get("description", "") if isinstance(spec, dict) else "",
        summary=[] if s.empty else [summary_rows(s)[0], *summary_rows(s)[1]], paper=f"{PAPER['bytes_x']}x less network, {PAPER['compute_cpu_x']}x less CPU",
        figures=[(f.stem, base64.b64encode(f.read_bytes()).decode()) for f in figures],
        points=_cells(point_table(df)), hosts=capacity_report.host_rows(run, hosts),
        host_head=capacity_report.HOST_HEAD, capacities=capacity_report.summary_lines(run), warmup=warmup_rule(plan.warmup, plan.repetitions),
        plan=plan.text(), versions=sorted((k, str(v)) for k, v in vers.items()))
    path = run.report / "index.html"
    tmp = path.with_name("index.html.tmp")
    tmp.write_text(page)
    tmp.replace(path)
    return path


def _figure(name: str):
    """``sae.figures.<name>(run, df, out)``, imported when drawn (that module imports this one)."""
    def draw(run, df, out):
        from . import figures
        return getattr(figures, name)(run, df, out)
    return draw


FIGURES = {
    "selectivity": lambda run, df, out: plot_selectivity(df, out),
    "compute-side": lambda run, df, out: plot_compute_side(df, out),
    "bandwidth": lambda run, df, out: plot_bandwidth(df, out),
    "objectsize": lambda run, df, out: plot_objectsize(df, out),
    "objectsize-selectivity": _figure("plot_objectsize_selectivity"),
    "backend": _figure("plot_backend"),
    "scalability": _figure("plot_scaling"),
    "batchsize": _figure("plot_batchsize"),
    "storedcompression": _figure("plot_storedcompression"),
    "projection": _figure("plot_projection"),
    "points": lambda run, df, out: plot_points(df, out),
    "alleviation": _figure("plot_alleviation"),
    "resources": plot_resources,
    "resources-disk": _figure("plot_devices"),
    "storage-phases": lambda run, df, out: plot_storage_phases(df, out),
    "storage-ops": lambda run, df, out: plot_storage_ops(df, out),
}
"""Figure name → its function (run directory, results, report directory) → path(s) or None."""
AXIS_FIGURES = (("link_multiplier", "scalability"), ("batch_size", "batchsize"),
                ("stored_compression", "storedcompression"), ("columns_read", "projection"))
"""A swept axis → the figure drawn against it (the Arrow-Spark paper's E1/E4/E5, thesis fig. 18)."""


def figure_names(df: pd.DataFrame) -> list[str]:
    """The figures that fit a run, by what it varies (thesis figure in brackets): backend-only
    scans (16); query time vs link rate (bandwidth.py), else selectivity (14), or object size ×
    selectivity (17), with the compute side; object size (15); one figure per axis of :data:`AXIS_FIGURES`; otherwise a bar per point, and when only
    the reader varies, the alleviation figures (10-13: per-host CPU, network, storage devices, what
    each side spent). Per-host CPU and network over the representative repetitions always."""
    varies = set(_varying(df, list(CONFIG) + ["selectivity"]))
    names = []
    if "objects" in df and df["objects"].notna().any():
        names.append("backend")
    else:
        if "link_rate" in varies:
            names.append("bandwidth")
        elif "selectivity" in varies:
            names.append("objectsize-selectivity" if "object_size" in varies else "selectivity")
            if "compute_rx_bytes" in df and df["compute_rx_bytes"].notna().any():
                names.append("compute-side")
        if "object_size" in varies:
            names.append("objectsize")
    names += [figure for axis, figure in AXIS_FIGURES if axis in varies]
    if not names:
        names += ["points"] + (["alleviation"] if varies <= {"reader"} else [])
    return names + ["storage-phases", "storage-ops", "resources"] + (["resources-disk"] if "alleviation" in names else [])


def make_report(path) -> list[Path]:
    """Write every plot that fits the run's sweep, the summary (``summary.txt``, ``summary.csv``)
    and ``index.html`` into ``report/``; returns their paths (none when nothing is measured yet)."""
    run = RunDir.find(path)
    df = load_results(run.root)
    run.report.mkdir(exist_ok=True)
    if df.empty or df.loc[~df["warmup"], "total_s"].isna().all():
        return []
    if "columns" in df:
        from .figures import columns_read
        df = df.assign(columns_read=columns_read(df))
    figures = []
    for name in figure_names(df):
        drawn = FIGURES[name](run, df, run.report)
        figures += drawn if isinstance(drawn, list) else [drawn] if drawn else []
    s = summary(df)
    s.to_csv(run.report / "summary.csv", index=False)
    note = window_note(df)
    lines = [summary_text(s), *(f"warning: {note}" for _ in [note] if note), *capacity_report.summary_lines(run)]
    (run.report / "summary.txt").write_text("\n".join(lines) + "\n")
    return figures + [run.report / "summary.txt", run.report / "summary.csv",
                      write_html(run, df, s, figures, note)]


def summary_of(path) -> str:
    """The summary text of a run's report (written by :func:`make_report`), or why there is none."""
    f = RunDir.find(path).report / "summary.txt"
    return f.read_text().rstrip() if f.exists() else "summary: no report yet; run 'sae report' first"
