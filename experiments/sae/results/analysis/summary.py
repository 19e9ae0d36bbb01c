"""What a run's results say: at each selectivity, each offloading reader against each baseline
(:mod:`sae.planning.readers`) as ratios of medians with their intervals (:func:`summary`, as a
table: :func:`summary_text`), the headline at each selectivity (:func:`headlines`), whether the
readers agreed (:func:`correctness`) and the machine held its speed (:func:`drift`), what limits
the numbers (:func:`caveats`, :func:`warning_lines`) and each point's spread (:func:`point_table`).
Over measured repetitions only (:func:`sae.results.analysis.measured.measured`); the report
(:mod:`sae.results.drawing.report`) writes them out.
"""
from __future__ import annotations

import dataclasses
import math

import pandas as pd

from ...planning import queries, readers
from ...planning.planner import DRIFT_SUFFIX
from ..run import capacities, provenance
from ..run.directory import RESOURCES, RunDir
from . import statistics
from .measured import BAND_MIN, CONFIG, measured, shown, stats, varying

PAPER = {"bytes_x": 48.9, "compute_cpu_x": 8.0}
"""The paper's figures at 1 % selectivity, offload against its no-offload baseline: 48.9x less
network traffic to and 8.0x less CPU on the compute cluster."""


RATIOS = {"time_x": "total_s", "bytes_x": "compute_rx_bytes", "compute_cpu_x": "compute_cpu_s",
          "task_cpu_x": "compute_task_cpu_s", "total_cpu_x": "total_cpu_s"}
"""Summary ratio → the measured column it divides (baseline median / offload median); ``total_cpu_s``
is each repetition's compute plus storage CPU-seconds (:func:`with_total_cpu`);
``compute_task_cpu_s`` Spark's executors' task threads' CPU (a run with event logs)."""


def with_total_cpu(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``total_cpu_s``: CPU-seconds of the compute and the storage hosts together in
    each repetition (NaN where either side's is unknown; a host on both sides counted once per
    side, as each side's column counts it)."""
    if not {"compute_cpu_s", "storage_cpu_s"} <= set(df):
        return df
    return df.assign(total_cpu_s=df["compute_cpu_s"].astype(float) + df["storage_cpu_s"].astype(float))


def _hashable(key: tuple) -> tuple:
    """A group's key with NaN (a parameter a point leaves unset, e.g. ``lose_executor``) as None:
    NaN equals nothing, so a key holding it finds no group."""
    return tuple(None if isinstance(v, float) and math.isnan(v) else v for v in key)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Each offloading reader (``reader``) against each baseline (:mod:`sae.planning.readers`) at each
    selectivity (and other varied parameters): medians over measured repetitions, ratios
    baseline / offload (``time_x``, ``bytes_x``: bytes to the compute side, ``compute_cpu_x``,
    ``task_cpu_x``: Spark's task threads' CPU where the run has it; > 1 means offload spends less)
    with their 95 % bootstrap intervals (``<ratio>_low``, ``<ratio>_high``: NaN when a reader has
    fewer than :data:`statistics.MIN_N` values; :mod:`sae.results.analysis.statistics`), the
    number of measured repetitions of each side (``n_offload``, ``n_baseline``) and, for offload
    at 1 % against no-offload (the scan query: the paper's question), the paper's ratios beside
    them; ``total_cpu_x``: both sides' CPU-seconds (:func:`with_total_cpu`). Empty unless the run
    has an offloading reader and a baseline."""
    if "reader" not in df or not set(readers.OFFLOADING) & set(df["reader"]):
        return pd.DataFrame()
    df = with_total_cpu(df)
    keys = varying(df, [c for c in CONFIG if c != "reader"]) + ["selectivity"]
    values = ["total_s", *[c for c in (*RESOURCES, "compute_task_cpu_s", "total_cpu_s") if c in df]]
    data = measured(df).astype({v: float for v in values})
    med = data.groupby(keys + ["reader"], dropna=False)[values].median()
    groups = {_hashable(k): g for k, g in data.groupby(keys + ["reader"], dropna=False)}
    rows = []
    for key, g in med.groupby(level=keys if len(keys) > 1 else keys[0], dropna=False):
        g = g.droplevel(keys)
        key = key if isinstance(key, tuple) else (key,)
        for subject, base in [(s, b) for s in readers.OFFLOADING for b in readers.BASELINES
                              if s in g.index and b in g.index]:
            off = g.loc[subject]
            row = dict(zip(keys, key), reader=subject, baseline=base)
            for v in values:
                row[f"offload_{v}"], row[f"baseline_{v}"] = off[v], g.loc[base][v]
            sub_vals, base_vals = groups[_hashable((*key, subject))], groups[_hashable((*key, base))]
            row["n_offload"], row["n_baseline"] = len(sub_vals), len(base_vals)
            for ratio, v in RATIOS.items():
                iv = statistics.ratio_of_medians(base_vals[v], sub_vals[v]) if v in values \
                    else statistics.Interval(math.nan)
                row[ratio], row[f"{ratio}_low"], row[f"{ratio}_high"] = iv.estimate, iv.low, iv.high
            paper = (row["selectivity"] == 1 and subject == readers.OFFLOAD.name
                     and base == readers.NO_OFFLOAD.name and row.get("query", queries.SCAN.name) == queries.SCAN.name)
            row.update({f"paper_{k}": v if paper else math.nan for k, v in PAPER.items()})
            rows.append(row)
    return pd.DataFrame(rows)


def interval(row, ratio: str) -> statistics.Interval:
    """The summary row's ``ratio`` (``time_x``, ``bytes_x``, ``compute_cpu_x``) with its interval."""
    return statistics.Interval(row[ratio], row.get(f"{ratio}_low", math.nan), row.get(f"{ratio}_high", math.nan),
                               (int(row.get("n_baseline", 0)), int(row.get("n_offload", 0))))


def _x(value) -> str:
    return "-" if pd.isna(value) else f"{value:.1f}x"


def _num(value, scale=1.0, fmt="{:.2f}") -> str:
    return "-" if pd.isna(value) else fmt.format(value / scale)


def summary_rows(s: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows of the summary (shared by the text and the HTML table); Spark's
    task CPU (``task_cpu_x``) where the run has it."""
    extra = [c for c in s.columns if c in CONFIG and (c != "reader" or s["reader"].nunique() > 1)]
    tasks = "task_cpu_x" in s and not s["task_cpu_x"].isna().all()
    head = ["sel %", *extra, "baseline", "n off/base", "time s off/base", "time", "compute rx MB off/base", "bytes",
            "paper", "compute CPU s off/base", "CPU", "paper",
            *(["Spark task CPU s off/base", "task CPU"] if tasks else []), "storage CPU s off/base",
            "total CPU s off/base", "total CPU"]
    rows = []
    for _, r in s.iterrows():
        task = [f"{_num(r.get('offload_compute_task_cpu_s'))} / {_num(r.get('baseline_compute_task_cpu_s'))}",
                interval(r, "task_cpu_x").text()] if tasks else []
        rows.append([f"{r['selectivity']:g}", *[str(r[c]) for c in extra], r["baseline"],
                     f"{r.get('n_offload', '-')}/{r.get('n_baseline', '-')}",
                     f"{_num(r['offload_total_s'])} / {_num(r['baseline_total_s'])}", interval(r, "time_x").text(),
                     f"{_num(r.get('offload_compute_rx_bytes'), 1e6, '{:.1f}')} / "
                     f"{_num(r.get('baseline_compute_rx_bytes'), 1e6, '{:.1f}')}", interval(r, "bytes_x").text(),
                     _x(r["paper_bytes_x"]),
                     f"{_num(r.get('offload_compute_cpu_s'))} / {_num(r.get('baseline_compute_cpu_s'))}",
                     interval(r, "compute_cpu_x").text(), _x(r["paper_compute_cpu_x"]), *task,
                     f"{_num(r.get('offload_storage_cpu_s'))} / {_num(r.get('baseline_storage_cpu_s'))}",
                     f"{_num(r.get('offload_total_cpu_s'))} / {_num(r.get('baseline_total_cpu_s'))}",
                     interval(r, "total_cpu_x").text() if "total_cpu_x" in r else "-"])
    return head, rows


def headlines(s: pd.DataFrame) -> list[str]:
    """The run's findings, one sentence per selectivity, lowest first (the most favourable one
    alone would overstate it): how many times fewer bytes the first offloading reader's compute
    side received than each baseline's, what share of each baseline's time its queries took and
    what share of each baseline's CPU-seconds both sides spent together, each with its 95 %
    interval. Where other parameters vary, at the configuration of the summary's first row at
    the lowest selectivity (named in each sentence). Empty without a summary."""
    if s.empty:
        return []
    subject = next(r for r in readers.OFFLOADING if r in set(s["reader"]))
    rows = s[s["reader"] == subject]
    extra = [c for c in rows.columns if c in CONFIG and c != "reader"]
    first = rows[rows["selectivity"] == rows["selectivity"].min()].iloc[0]
    if extra:
        rows = rows[(rows[extra].astype(str) == first[extra].astype(str)).all(axis=1)]
    where = "".join(f", {c}={shown(c, first[c])}" for c in extra)
    return [_finding(subject, at, where) for _, at in rows.groupby("selectivity", sort=True)]


def _finding(subject: str, at: pd.DataFrame, where: str) -> str:
    """One headline sentence: ``subject`` against each baseline of the summary rows ``at`` (one
    selectivity)."""
    parts = []
    bytes_known = at[~at["bytes_x"].isna()]
    if not bytes_known.empty:
        parts.append(f"{subject}'s compute side received " + " and ".join(
            f"{interval(r, 'bytes_x').text()} fewer bytes than {r['baseline']}" if i == 0 else
            f"{interval(r, 'bytes_x').text()} fewer than {r['baseline']}"
            for i, (_, r) in enumerate(bytes_known.iterrows())))
    times = [f"{interval(r, 'time_x').inverse().text()} of {r['baseline']}'s" for _, r in at.iterrows()]
    parts.append(("its" if parts else f"{subject}'s") + " queries took " + " and ".join(times) + " time")
    cpu_known = at[~at["total_cpu_x"].isna()] if "total_cpu_x" in at else at.iloc[:0]
    if not cpu_known.empty:
        parts.append("both sides together spent " + " and ".join(
            f"{interval(r, 'total_cpu_x').inverse().text()} of {r['baseline']}'s" for _, r in cpu_known.iterrows())
            + " CPU-seconds")
    sel = f"{at['selectivity'].iloc[0]:g}"
    return f"At {sel} % selectivity{where} " + ", ".join(parts[:-1]) + (", and " if len(parts) > 1 else "") + \
        parts[-1] + " (medians, [95 % bootstrap interval])."


SPREAD_CAVEAT = "within-run intervals only (repetitions of one run); run-to-run spread not included"
"""The caveat on what the intervals cover, unless a caller knows more (:func:`make_report`'s
``spread_caveat``: e.g. a calibration against repeated runs)."""


def caveats(run: RunDir, df: pd.DataFrame, spread_caveat: str = SPREAD_CAVEAT) -> list[str]:
    """What limits the run's numbers, from the run itself: OSDs on memstore, every host on one
    machine (with each side's capacities, declared / measured), data inflated by hard links,
    and what the intervals cover (``spread_caveat``)."""
    d = measured(df)
    out = []
    if "store" in d and (d["store"] == "memstore").any():
        out.append("the OSDs keep their objects in memory (memstore): no query reads a disk, so the storage "
                   "side's time and CPU leave out the device reads of a bluestore OSD")
    local = [r for r in capacities.records(run) if r.get("provider", "local") == "local"]
    if local:
        hosts = sorted({h for r in local for h in (r.get("declared") or {})})
        cpu = dict(provenance.facts(run.read_yaml(run.versions) or {}, nodes_named=False))["CPU"]
        on = "" if cpu == provenance.NOT_RECORDED else f" ({cpu})"
        out.append(f"all {len(hosts)} hosts are network namespaces on one machine{on}, sharing its memory, caches "
                   f"and disk; their capacities, declared / measured: "
                   + "; ".join(capacities.sides_text(r) for r in local))
    if "link_multiplier" in d and (d["link_multiplier"].astype(float) > 1).any():
        k = int(d["link_multiplier"].astype(float).max())
        rows = f" {d.loc[d['link_multiplier'].astype(float) == k, 'rows'].iloc[0]:,.0f}" if "rows" in d else ""
        out.append(f"the data are inflated by hard links: every stored object is linked up to {k} times, so a "
                   f"query scans {k}x the{rows} stored rows, reading each object {k} times (a dataset really "
                   f"{k}x larger would not sit in the same memory and caches)")
    return out + [spread_caveat]


DRIFT_LIMIT = 0.10
"""A drift whose interval lies wholly more than this far from 1 gets a warning."""


def drift(df: pd.DataFrame) -> tuple[str, bool]:
    """The drift check: the reference point's query time measured again at the end of the run
    (``drift`` repetitions) against its measured repetitions (end / start median ratio with its
    interval), and whether the interval lies wholly more than :data:`DRIFT_LIMIT` from 1.
    Empty without drift repetitions."""
    if "drift" not in df or not df["drift"].fillna(False).astype(bool).any():
        return "", False
    end = df[df["drift"].fillna(False).astype(bool) & ~df["warmup"].astype(bool)]
    point = end["point"].iloc[0]
    point = point.removesuffix(DRIFT_SUFFIX)   # the check runs as point <id>-drift (sae.planning.planner)
    start = measured(df[df["point"] == point])
    iv = statistics.ratio_of_medians(end["total_s"].astype(float), start["total_s"].astype(float))
    row = end.iloc[0]
    at = ", ".join(f"{k}={shown(k, row[k])}" for k in varying(df, [*CONFIG, "selectivity"]) if k in row)
    text = (f"the reference point ({at}) measured again at the end of the run took {iv.text()} "
            f"of its time at the start (end / start median query time, {len(end)} vs {len(start)} repetitions)")
    moved = iv.known and (iv.low > 1 + DRIFT_LIMIT or iv.high < 1 - DRIFT_LIMIT)
    if moved:
        text += (f"; the machine's speed changed by more than {DRIFT_LIMIT:.0%} during the run: "
                 f"read its times with care")
    return text, moved


def correctness(df: pd.DataFrame) -> str:
    """Whether every reader returned the same rows and checksum at every point (every recorded
    repetition, warm-ups too), or the points where they did not; in a series of appends, at
    every number of rows appended (``appended_rows``), so after each append too."""
    if not {"rows_out", "checksum"} <= set(df.columns) or df.empty:
        return ""
    keys = [c for c in varying(df, [*CONFIG, "selectivity", "appended_rows"]) if c != "reader"]
    bad = []
    for key, g in (df.groupby(keys, dropna=False, sort=False) if keys else [((), df)]):
        answers = g.groupby("reader", sort=False)[["rows_out", "checksum"]].agg(lambda c: sorted(set(c)))
        if (len({(tuple(r["rows_out"]), tuple(r["checksum"])) for _, r in answers.iterrows()}) > 1 or
                any(len(r["rows_out"]) > 1 or len(r["checksum"]) > 1 for _, r in answers.iterrows())) and \
                not queries.same_answers(g["answer"] if "answer" in g else []):
            at = ", ".join(f"{k}={shown(k, v)}" for k, v in zip(keys, key if isinstance(key, tuple) else (key,)))
            got = "; ".join(f"{reader}: rows {'/'.join(map(str, r['rows_out']))} checksum "
                            f"{'/'.join(map(str, r['checksum']))}" for reader, r in answers.iterrows())
            bad.append(f"{at or 'the point'}: {got}")
    n = df["reader"].nunique() if "reader" in df else 1
    text = ("readers disagree (rows, checksum) at " + " | ".join(bad) if bad else
            "every reader returned the same rows and checksum at every point" if n > 1 else
            "every repetition returned the same rows and checksum at every point")
    return f"{text}; {read_back(df)}" if "input_checksum" in df else text


def read_back(df: pd.DataFrame) -> str:
    """A write run's check: whether every output, read back, had its input's rows and checksum
    (``input_rows``, ``input_checksum``: the job's input, taken before it wrote), or where not."""
    jobs = df[df["input_checksum"].notna()]
    wrong = jobs[(jobs["rows_out"] != jobs["input_rows"]) | (jobs["checksum"] != jobs["input_checksum"])]
    if wrong.empty:
        return f"every output read back ({len(jobs)} jobs) had its input's rows and checksum"
    at = sorted({f"{r.writer} {r.write} repetition {r.repetition}" for r in wrong.itertuples()})
    return f"{len(wrong)} of {len(jobs)} outputs read back differ from their input: " + ", ".join(at)


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


def jit_note(df: pd.DataFrame) -> str:
    """One line when some measured repetitions ran with ``spark.jit: quick`` (C1 only; empty
    otherwise); warm-ups, which no figure shows, are not counted."""
    measured = df[~df["warmup"]] if "warmup" in df else df
    if "spark_jit" not in measured or not measured["spark_jit"].eq("quick").any():
        return ""
    return (f"{int(measured['spark_jit'].eq('quick').sum())} of {len(measured)} measured repetitions ran with "
            f"spark.jit: quick (the JVMs "
            f"compiled with C1 only: cheaper cold starts, a lower peak speed); their times are not the "
            f"default JVM's")


def warning_lines(df: pd.DataFrame) -> list[str]:
    """The report's warnings: incomplete metric windows (:func:`window_note`), a quick JIT
    (:func:`jit_note`)."""
    return [n for n in (window_note(df), jit_note(df)) if n]


def summary_text(s: pd.DataFrame) -> str:
    """The summary as a fixed-width table (what ``sae report`` prints)."""
    if s.empty:
        return "summary: no offload point with a baseline at the same parameters in this run"
    return "\n".join(["offload vs each baseline (medians of measured repetitions; x = baseline / offload, "
                      "> 1: offload spends less; [95 % bootstrap interval], none below "
                      f"{statistics.MIN_N} repetitions; paper: its 1 % figures vs no-offload)",
                      *statistics.fixed_width(*summary_rows(s))])


@dataclasses.dataclass
class Statements:
    """What a report states in words: the headlines (one per selectivity), the correctness check (``agree``: no reader
    disagreed) and the drift check (``drift_warning``: it moved by more than
    :data:`DRIFT_LIMIT`)."""

    headlines: list[str] = dataclasses.field(default_factory=list)
    correct: str = ""
    agree: bool = True
    drift: str = ""
    drift_warning: bool = False

    def lines(self) -> list[str]:
        """The summary's closing lines: correctness, drift, then the headlines."""
        return [*(f"correctness: {self.correct}" for _ in [1] if self.correct),
                *((f"warning: {self.drift}" if self.drift_warning else f"drift: {self.drift}") for _ in [1]
                  if self.drift),
                *self.headlines]


def statements(df: pd.DataFrame, s: pd.DataFrame) -> Statements:
    """The run's :class:`Statements` from its results and summary."""
    correct = correctness(df)
    text, warn = drift(df)
    return Statements(headlines(s), correct, not correct.startswith("readers disagree"), text, warn)


def point_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per point, in run order: its varied parameters, n measured repetitions, query time min,
    p1, p50, p99 and max (p1 and p99 only with :data:`BAND_MIN` values or more) and the medians of
    the side resources."""
    keys = varying(df, list(CONFIG) + ["selectivity"])
    t = stats(df, ["order", "point"] + keys).rename(columns={"median": "p50"})
    few = t["n"] < BAND_MIN   # p1 and p99 of a handful of values are only its min and max
    t.loc[few, ["p1", "p99"]] = math.nan
    t = t[["order", "point", *keys, "n", "min", "p1", "p50", "p99", "max"]]
    extra = [c for c in RESOURCES if c in df]
    if extra:
        med = measured(df).groupby("point")[extra].median()
        t = t.join(med, on="point")
    return t.sort_values("order").drop(columns="order")
