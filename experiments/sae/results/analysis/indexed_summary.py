"""The summary of a run's key queries (experiments/indexed.py) beside the Indexed DataFrame's
results (Uta et al., IPDPS 2022): per measure, sae's value with its 95 % bootstrap interval (none
below :data:`~sae.results.analysis.statistics.MIN_N` repetitions), the goal the project set for
it and what the paper reported. Medians of measured repetitions throughout.

* lookups and joins: Spark's cache over the indexed cache (x > 1: the index was faster), per
  keys looked up and per probe share (figs. 8 and 7);
* the indexed cache's key maps over its rows (fig. 11);
* reads while appending: a series' query time after its first append over the same query's
  without appends, per append size (fig. 9), and the rows appended a second (fig. 10);
* a lost executor: the series' query right after the loss, and the slowest after it, over the
  median before it (fig. 12);
* the OSD index: a one-key lookup's bytes read in the OSDs and time, offload-index over offload.

The selections of points (:func:`unbroken`, :func:`plain`, :func:`series`) are the figures' too
(sae.results.drawing.indexed_figures).
"""
from __future__ import annotations

import dataclasses

import pandas as pd

from ...planning import readers
from . import statistics
from .measured import measured

LOOKUP, JOIN = "key-lookup", "key-join"
SUBJECT, CACHE = readers.INDEXED.name, readers.CACHE.name
OFFLOAD, OFFLOAD_INDEX = readers.OFFLOAD.name, readers.OFFLOAD_INDEX.name
SMALL_APPENDS = 100_000
"""The paper's fig. 9 splits at appends of 100 K rows: about 3x slower reads at or below, 6x above."""


def unbroken(df: pd.DataFrame) -> pd.DataFrame:
    """The points without appends or a lost executor."""
    keep = df["append_rows"].fillna(0) == 0
    if "lose_executor" in df:
        keep &= df["lose_executor"].isna()
    return df[keep]


def plain(df: pd.DataFrame, query: str) -> pd.DataFrame:
    """The points of ``query`` without appends or a lost executor."""
    if "query" not in df or "append_rows" not in df:
        return df.iloc[:0]
    d = unbroken(df)
    return d[d["query"] == query]


def series(df: pd.DataFrame) -> pd.DataFrame:
    """The measured queries of the series with appends."""
    if "append_rows" not in df:
        return df.iloc[:0]
    return measured(df[df["append_rows"].fillna(0) > 0])


def _percent(interval: statistics.Interval) -> str:
    """A ratio as a percentage, its interval too (:meth:`~statistics.Interval.text`)."""
    scaled = dataclasses.replace(interval, estimate=interval.estimate * 100, low=interval.low * 100,
                                 high=interval.high * 100)
    return scaled.text("%")


def _reader(d: pd.DataFrame, name: str, column: str = "total_s") -> pd.Series:
    return d.loc[d["reader"] == name, column].astype(float)


def _speedups(d: pd.DataFrame, axis: str, what: str, goal: str, seed: str) -> list[list[str]]:
    """Per value of ``axis``: the cache's time over the indexed cache's."""
    rows = []
    for value, g in sorted(d.groupby(axis)):
        rows.append([f"{what} {value:g}", statistics.ratio_of_medians(_reader(g, CACHE), _reader(g, SUBJECT)).text(),
                     goal, seed])
    return rows


def _appends(df: pd.DataFrame) -> list[list[str]]:
    """Per append size: the indexed reader's slowdown after its first append, and its append rate."""
    s = series(df)
    s = s[s["reader"] == SUBJECT]
    if s.empty:
        return []
    base = measured(unbroken(df))
    rows = []
    for size, g in sorted(s.groupby("append_rows")):
        after = g[g["appended_rows"] > 0] if "appended_rows" in g else g
        same = base[(base["reader"] == SUBJECT) & (base["query"] == g["query"].iloc[0])
                    & (base["probe"] == g["probe"].iloc[0]) & (base["keys"] == g["keys"].iloc[0])]
        small = size <= SMALL_APPENDS
        rows.append([f"reads while appending {size:,.0f} rows", statistics.ratio_of_medians(
            after["total_s"].astype(float), same["total_s"].astype(float)).text(),
            "<= 3x" if small else "-", "about 3x at <= 100 K rows (fig. 9)" if small else "about 6x above 100 K (fig. 9)"])
        rate = (g["append_rows"].astype(float) / g["append_s"].astype(float)).dropna() if "append_s" in g else pd.Series(dtype=float)
        if not rate.empty:
            rows.append([f"rows appended a second, {size:,.0f} a time", f"{rate.median():,.0f}", "-",
                         "200 M in batches of 1 M in under 7 s: > 28 M a second (fig. 10)"])
    return rows


def _memory(df: pd.DataFrame) -> list[list[str]]:
    d = measured(unbroken(df))
    d = d[(d["reader"] == SUBJECT) & d["index_bytes"].notna() & d["cached_bytes"].notna()] \
        if {"index_bytes", "cached_bytes"} <= set(d) else d.iloc[:0]
    if d.empty:
        return []
    share = (d["index_bytes"].astype(float) / d["cached_bytes"].astype(float)).median()
    return [["index memory / cached rows", f"{share:.2%}", "<= 2 %", "under 2 % (fig. 11)"]]


def _lost(df: pd.DataFrame) -> list[list[str]]:
    if "lose_executor" not in df or df["lose_executor"].isna().all():
        return []
    d = measured(df[df["lose_executor"].notna() & (df["reader"] == SUBJECT)]).sort_values("repetition")
    if d.empty:
        return []
    at = int(d["lose_executor"].iloc[0])
    before, after = d[d["repetition"] < at]["total_s"].astype(float), d[d["repetition"] >= at]["total_s"].astype(float)
    if before.empty or after.empty:
        return []
    first, rest = after.iloc[0] / before.median(), (after.iloc[1:].max() / before.median() if len(after) > 1 else None)
    return [["query after a lost executor / before", f"{first:.2f}x", "-", "one slow query, over 13 s (fig. 12)"],
            ["slowest query after that / before", "-" if rest is None else f"{rest:.2f}x", "-", "then none (fig. 12)"]]


def _osd_index(df: pd.DataFrame) -> list[list[str]]:
    d = measured(plain(df, LOOKUP))
    d = d[d["keys"] == 1] if "keys" in d else d.iloc[:0]
    if d.empty or not {OFFLOAD, OFFLOAD_INDEX} <= set(d["reader"]) or "cls_read_bytes" not in d:
        return []
    return [["OSD index, 1-key lookup: bytes read in the OSDs / offload's",
             _percent(statistics.ratio_of_medians(_reader(d, OFFLOAD_INDEX, "cls_read_bytes"),
                                                  _reader(d, OFFLOAD, "cls_read_bytes"))), "<= 1 %", "- (not in the paper)"],
            ["OSD index, 1-key lookup: time / offload's",
             statistics.ratio_of_medians(_reader(d, OFFLOAD_INDEX), _reader(d, OFFLOAD)).text(), "<= 0.5x", "-"]]


def indexed_rows(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the summary."""
    rows = [*_speedups(measured(plain(df, LOOKUP)), "keys", "lookup, keys:", ">= 10x", "5-20x (figs. 8, 15)"),
            *_speedups(measured(plain(df, JOIN)), "probe", "join, probe %:", ">= 3x", "3-8x (fig. 7)"),
            *_memory(df), *_appends(df), *_lost(df), *_osd_index(df)]
    return ["measure", "sae (cache / indexed for lookups and joins)", "goal", "the paper"], rows


def indexed_text(df: pd.DataFrame) -> str | None:
    """The summary as fixed-width text; None for a run without key queries of both the indexed
    cache and Spark's cache."""
    if "reader" not in df or not {SUBJECT, CACHE} <= set(df["reader"].dropna()) or "append_rows" not in df:
        return None
    return "\n".join(["key queries beside the Indexed DataFrame (IPDPS 2022): medians of measured repetitions, "
                      "[95 % bootstrap interval]", *statistics.fixed_width(*indexed_rows(df))])
