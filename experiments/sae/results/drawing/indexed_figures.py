"""The figures of the key queries and the readers that keep the data in memory (experiments/indexed.py),
each in the shape of the Indexed DataFrame paper's (Uta et al., IPDPS 2022):

* ``indexed-lookups.png`` (fig. 8): median lookup time vs the keys looked up, a line per reader,
  and each reader's time over the indexed reader's; under it, what the in-memory readers hold.
* ``indexed-joins.png`` (fig. 7): the same for joins vs the probe table's share of the keys.
* ``indexed-append-reads.png`` (fig. 9): a series' query time after its first append over the same
  query's without appends (the read slowdown while appending), vs the rows of one append; and
  each query of the indexed reader's series in the order it ran, the appends marked.
* ``indexed-appends.png`` (fig. 10): rows appended per second vs the rows of one append.
* ``indexed-executor-loss.png`` (fig. 12): each query of the series that lost an executor, in the
  order it ran, the loss marked.

Medians over measured repetitions (warm-ups left out), as everywhere in the report; a figure with
no points of its kind draws nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from metareserve import format_size

from ...planning import readers
from ..analysis.indexed_summary import JOIN, LOOKUP, SUBJECT, plain, series, unbroken
from ..analysis.measured import measured, stats
from .plotting import SPREAD_RULE, figure_legend, log_axis, pyplot, save, whiskers

plt = pyplot()   # a drawing module: importing it loads matplotlib



def _by_reader(s: pd.DataFrame):
    """(reader, its rows) in the order readers are listed."""
    return sorted(s.groupby("reader"), key=lambda kv: readers.order(kv[0]))


def _sweep(d: pd.DataFrame, axis: str, xlabel: str, title: str, name: str, out: Path, note: str) -> Path | None:
    """Median time vs ``axis`` (log scale) a line per reader, and beside it each reader's median
    over the indexed reader's (above 1: the index was faster)."""
    if d.empty:
        return None
    s = stats(d, ["reader", axis]).sort_values(axis)
    fig, (times, ratios) = plt.subplots(1, 2, figsize=(10, 4))
    for reader, g in _by_reader(s):
        r = readers.get(reader)
        times.errorbar(g[axis], g["median"], yerr=whiskers(g), marker="o", capsize=3, label=r.label, color=r.colour)
    subject = s[s["reader"] == SUBJECT].set_index(axis)["median"]
    for reader, g in _by_reader(s[s["reader"] != SUBJECT]):
        r = readers.get(reader)
        ratio = g.set_index(axis)["median"] / subject.reindex(g[axis]).to_numpy()
        ratios.plot(ratio.index, ratio.to_numpy(), marker="o", color=r.colour, label=r.label)
    for ax in (times, ratios):
        ax.set_xscale("log")
        ax.set_xticks(sorted(set(s[axis])), [f"{v:g}" for v in sorted(set(s[axis]))])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
    log_axis(times)
    times.set_ylabel("query time (s), median, log scale")
    times.set_title(title, fontsize="medium")
    ratios.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ratios.set_ylim(bottom=0)
    ratios.set_ylabel(f"median time / the {SUBJECT} reader's")
    ratios.set_title(f"each reader's time over the {SUBJECT} reader's", fontsize="medium")
    figure_legend(fig, [times, ratios])
    return save(fig, out / f"{name}.png", "\n".join(t for t in (SPREAD_RULE, note) if t))


def memory_note(df: pd.DataFrame) -> str:
    """What the readers that keep a copy or an index held (at their first measured query without
    appends): the indexed cache's rows and key maps (their share of the rows, bytes a row), Spark's
    cache, and the OSD index in the objects' omaps (bytes a row), with their build times."""
    d = measured(df)
    if not {"index_build_s", "append_rows"} <= set(d):
        return ""
    d = unbroken(d[d["index_build_s"].notna()])
    parts = []
    for reader, g in _by_reader(d):
        row = g.iloc[0]
        if pd.isna(row.get("cached_bytes")):   # the OSD index: nothing held in the executors
            rows = sum(r for r, _ in json.loads(row["index_partitions"]))
            parts.append(f"{reader}: {format_size(int(row['index_bytes']))} of indexes in the OSDs "
                         f"({row['index_bytes'] / rows:.1f} B an indexed row), built in {row['index_build_s']:.1f} s "
                         f"of OSD time")
            continue
        held = f"{format_size(int(row['cached_bytes']))} of rows"
        if not pd.isna(row.get("index_bytes")):
            held += (f" and {format_size(int(row['index_bytes']))} of key maps ({row['index_bytes'] / row['cached_bytes']:.1%}"
                     f" of the rows, {row['index_bytes'] / row['cached_rows']:.1f} B a row)")
        parts.append(f"{reader}: {held}, built in {row['index_build_s']:.1f} s")
    return "; ".join(parts)


def plot_indexed_lookups(df: pd.DataFrame, out: Path) -> Path | None:
    """Lookups (the paper's fig. 8): time vs keys looked up, and over the indexed reader's."""
    return _sweep(plain(df, LOOKUP), "keys", "keys looked up (log scale)", "key lookups", "indexed-lookups", out,
                  memory_note(df))


def plot_indexed_joins(df: pd.DataFrame, out: Path) -> Path | None:
    """Joins (the paper's fig. 7): time vs the probe table's share of the keys, and over the
    indexed reader's."""
    return _sweep(plain(df, JOIN), "probe", "probe table (% of the keys, log scale)", "joins with a probe table",
                  "indexed-joins", out, "")


def plot_indexed_append_reads(df: pd.DataFrame, out: Path) -> Path | None:
    """Reads while appending (the paper's fig. 9): each reader's median query time in a series
    after its first append over its median time of the same query without appends, vs the rows
    of one append; beside it the indexed reader's queries (each series a line) in the order they
    ran, an append before each marked repetition."""
    appending = series(df)
    if appending.empty:
        return None
    after = appending[appending["appended_rows"] > 0]
    base = measured(unbroken(df)).groupby(["reader", "query", "keys", "probe"])["total_s"].median()
    rows = []
    for (reader, size, query, keys, probe), g in after.groupby(["reader", "append_rows", "query", "keys", "probe"]):
        if (reader, query, keys, probe) in base.index:
            rows.append({"reader": reader, "size": size, "slowdown": g["total_s"].median() / base[reader, query, keys, probe]})
    fig, (slow, order) = plt.subplots(1, 2, figsize=(10, 4))
    ratios = pd.DataFrame(rows, columns=["reader", "size", "slowdown"])
    for reader, g in _by_reader(ratios):
        r = readers.get(reader)
        g = g.sort_values("size")
        slow.plot(g["size"], g["slowdown"], marker="o", color=r.colour, label=r.label)
    slow.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    slow.set_xscale("log")
    slow.set_ylim(bottom=0)
    slow.set_xlabel("rows of one append (log scale)")
    slow.set_ylabel("median query time after appends / without")
    slow.set_title("reads while appending", fontsize="medium")
    own = appending[appending["reader"] == SUBJECT]
    every = own["append_every"].iloc[0] if not own.empty else None
    for i, (size, g) in enumerate(sorted(own.groupby("append_rows"))):
        g = g.sort_values("repetition")
        order.plot(g["repetition"], g["total_s"], marker=".", color=f"C{i}", label=f"{SUBJECT}, appends of {size:,.0f}")
    if every:
        for rep in range(int(every), int(own["repetition"].max()) + 1, int(every)):
            order.axvline(rep - 0.5, color="grey", linewidth=0.8, linestyle=":")
    order.set_ylim(bottom=0)
    order.set_xlabel("repetition (an append before each dotted line)")
    order.set_ylabel("query time (s)")
    order.set_title(f"the {SUBJECT} reader's series", fontsize="medium")
    slow.legend(fontsize="small")
    order.legend(fontsize="small")
    return save(fig, out / "indexed-append-reads.png",
                "slowdown: the series' median after its first append over the same query's median without appends")


def plot_indexed_appends(df: pd.DataFrame, out: Path) -> Path | None:
    """Append throughput (the paper's fig. 10): rows appended per second vs the rows of one
    append, a line per reader (the indexed reader appends a version of its index; the others
    cache the new rows), whiskers over the appends of a series."""
    d = df[df["append_s"].notna()] if "append_s" in df else df.iloc[:0]
    if d.empty:
        return None
    d = d.assign(rate=d["append_rows"].astype(float) / d["append_s"].astype(float))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for reader, g in _by_reader(d):
        r = readers.get(reader)
        s = g.groupby("append_rows")["rate"].agg(["median", "min", "max"]).sort_index()
        err = np.clip(np.vstack([s["median"] - s["min"], s["max"] - s["median"]]), 0, None)
        ax.errorbar(s.index, s["median"], yerr=err, marker="o", capsize=3, color=r.colour, label=r.label)
    ax.set_xscale("log")
    log_axis(ax)
    ax.set_xlabel("rows of one append (log scale)")
    ax.set_ylabel("rows appended per second, log scale")
    ax.set_title("appends", fontsize="medium")
    ax.legend(fontsize="small")
    return save(fig, out / "indexed-appends.png", "whiskers: min-max over a series' appends")


def plot_indexed_executor_loss(df: pd.DataFrame, out: Path) -> Path | None:
    """A lost executor (the paper's fig. 12): each measured query of the series that lost one,
    in the order it ran, a line per reader; the loss marked before the repetition it came before
    (``executor_lost``)."""
    if "lose_executor" not in df or df["lose_executor"].isna().all():
        return None
    d = measured(df[df["lose_executor"].notna()])
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for reader, g in _by_reader(d):
        r = readers.get(reader)
        g = g.sort_values("repetition")
        ax.plot(g["repetition"], g["total_s"], marker="o", color=r.colour, label=r.label)
    lost = df[df["executor_lost"].eq(True)] if "executor_lost" in df else df.iloc[:0]
    for rep in sorted(set(lost["repetition"].astype(int))):
        ax.axvline(rep - 0.5, color="tab:red", linewidth=1, linestyle="--")
        ax.annotate("executor killed", (rep - 0.5, 1), xycoords=("data", "axes fraction"), rotation=90,
                    va="top", ha="right", fontsize="small", color="tab:red")
    log_axis(ax)
    ax.set_xlabel("repetition")
    ax.set_ylabel("query time (s), log scale")
    ax.set_title("an executor lost in a series of joins", fontsize="medium")
    ax.legend(fontsize="small")
    return save(fig, out / "indexed-executor-loss.png")
