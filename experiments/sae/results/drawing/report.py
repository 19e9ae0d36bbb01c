"""The report of a run, from its tidy results, metric windows and plan.

* the figures the experiment declares (``Experiment.figures``, kept in the plan) and the standard
  ones every run gets (:func:`sae.planning.figures.standard`), each drawn by its entry's function;
* ``summary.txt`` / ``summary.csv``: at each selectivity, each offloading reader against each
  baseline (:mod:`sae.planning.readers`) as ratios (bytes to the compute side, compute CPU, both
  sides' CPU, time), with the paper's figures beside ours, then the run's provenance
  (:func:`sae.results.run.provenance.facts`), its caveats (:func:`caveats`) and its headline at each
  selectivity (:func:`headlines`);
* ``index.html``: one self-contained page: headlines, caveats, summary, figures, per-point
  p1/p50/p99, hosts, the warm-up rule, the plan and the provenance.

Warm-up repetitions are excluded from every statistic (they stay in results.parquet).
"""
from __future__ import annotations

import base64
import dataclasses
import math
from pathlib import Path

import jinja2
import pandas as pd

from metareserve import Layout

from ..analysis import statistics
from ..run import capacities, provenance

from ...planning import queries, readers
from ...planning.planner import DRIFT_SUFFIX, Plan
from ..analysis.advice import report_lines
from .pages import STYLE
from .plotting import BAND_MIN, CONFIG, columns_read, measured, shown, stats, varying
from ..run.directory import RESOURCES, RunDir, load_results
from ...planning import figures as figure_entries

PAPER = {"bytes_x": 48.9, "compute_cpu_x": 8.0}
"""The paper's figures at 1 % selectivity, offload against its no-offload baseline: 48.9x less
network traffic to and 8.0x less CPU on the compute cluster."""


RATIOS = {"time_x": "total_s", "bytes_x": "compute_rx_bytes", "compute_cpu_x": "compute_cpu_s",
          "total_cpu_x": "total_cpu_s"}
"""Summary ratio → the measured column it divides (baseline median / offload median); ``total_cpu_s``
is each repetition's compute plus storage CPU-seconds (:func:`with_total_cpu`)."""


def with_total_cpu(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``total_cpu_s``: CPU-seconds of the compute and the storage hosts together in
    each repetition (NaN where either side's is unknown; a host on both sides counted once per
    side, as each side's column counts it)."""
    if not {"compute_cpu_s", "storage_cpu_s"} <= set(df):
        return df
    return df.assign(total_cpu_s=df["compute_cpu_s"].astype(float) + df["storage_cpu_s"].astype(float))


def warmup_rule(warmup: int, repetitions: int, most: int | None = None) -> str:
    """The warm-up rule as one sentence (``most``: the largest point's repetitions where points
    differ, ``Sweep.repetitions``)."""
    each = f"{repetitions}" if not most or most == repetitions else f"{repetitions} (up to {most})"
    measured = f"{repetitions - warmup}" if not most or most == repetitions else \
        f"{repetitions - warmup} (up to {most - warmup})"
    return (f"The first {warmup} of the {each} repetitions of every point warm up (JVM, caches): they "
            f"stay in results.parquet with warmup=True and are left out of every statistic; medians, "
            f"intervals and quantiles are over the {measured} measured repetitions (p1 and p99 "
            f"only where a point has {BAND_MIN} or more).")


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Each offloading reader (``reader``) against each baseline (:mod:`sae.planning.readers`) at each
    selectivity (and other varied parameters): medians over measured repetitions, ratios
    baseline / offload (``time_x``, ``bytes_x``: bytes to the compute side, ``compute_cpu_x``;
    > 1 means offload spends less) with their 95 % bootstrap intervals (``<ratio>_low``,
    ``<ratio>_high``: NaN when a reader has fewer than :data:`statistics.MIN_N` values;
    :mod:`sae.results.analysis.statistics`), the number of measured repetitions of each side
    (``n_offload``, ``n_baseline``) and, for offload at 1 % against no-offload (the scan query:
    the paper's question), the paper's ratios beside them; ``total_cpu_x``: both sides' CPU-seconds
    (:func:`with_total_cpu`). Empty unless the run has an offloading reader and a baseline."""
    if "reader" not in df or not set(readers.OFFLOADING) & set(df["reader"]):
        return pd.DataFrame()
    df = with_total_cpu(df)
    keys = varying(df, [c for c in CONFIG if c != "reader"]) + ["selectivity"]
    values = ["total_s", *[c for c in (*RESOURCES, "total_cpu_s") if c in df]]
    data = measured(df).astype({v: float for v in values})
    med = data.groupby(keys + ["reader"], dropna=False)[values].median()
    groups = {k: g for k, g in data.groupby(keys + ["reader"], dropna=False)}
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
            sub_vals, base_vals = groups[(*key, subject)], groups[(*key, base)]
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
    """Header and formatted rows of the summary (shared by the text and the HTML table)."""
    extra = [c for c in s.columns if c in CONFIG and (c != "reader" or s["reader"].nunique() > 1)]
    head = ["sel %", *extra, "baseline", "n off/base", "time s off/base", "time", "compute rx MB off/base", "bytes",
            "paper", "compute CPU s off/base", "CPU", "paper", "storage CPU s off/base", "total CPU s off/base",
            "total CPU"]
    rows = []
    for _, r in s.iterrows():
        rows.append([f"{r['selectivity']:g}", *[str(r[c]) for c in extra], r["baseline"],
                     f"{r.get('n_offload', '-')}/{r.get('n_baseline', '-')}",
                     f"{_num(r['offload_total_s'])} / {_num(r['baseline_total_s'])}", interval(r, "time_x").text(),
                     f"{_num(r.get('offload_compute_rx_bytes'), 1e6, '{:.1f}')} / "
                     f"{_num(r.get('baseline_compute_rx_bytes'), 1e6, '{:.1f}')}", interval(r, "bytes_x").text(),
                     _x(r["paper_bytes_x"]),
                     f"{_num(r.get('offload_compute_cpu_s'))} / {_num(r.get('baseline_compute_cpu_s'))}",
                     interval(r, "compute_cpu_x").text(), _x(r["paper_compute_cpu_x"]),
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
    repetition, warm-ups too), or the points where they did not."""
    if not {"rows_out", "checksum"} <= set(df.columns) or df.empty:
        return ""
    keys = [c for c in varying(df, [*CONFIG, "selectivity"]) if c != "reader"]
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
    if not bad:
        return ("every reader returned the same rows and checksum at every point" if n > 1 else
                "every repetition returned the same rows and checksum at every point")
    return "readers disagree (rows, checksum) at " + " | ".join(bad)


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
    head, rows = summary_rows(s)
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join(["offload vs each baseline (medians of measured repetitions; x = baseline / offload, "
                      "> 1: offload spends less; [95 % bootstrap interval], none below "
                      f"{statistics.MIN_N} repetitions; paper: its 1 % figures vs no-offload)",
                      line(head), *map(line, rows)])


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


PAGE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
{{ style | safe }}</style></head><body>
<h1>{{ title }}</h1>
{% if said.headlines %}<ul class="headline">{% for line in said.headlines %}<li><strong>{{ line }}</strong></li>{% endfor %}</ul>{% endif %}
{% if caveats %}<p class="note"><strong>Caveats:</strong></p><ul class="note">{% for line in caveats %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
<p>{{ description }}</p>
{% if definitions %}<p>The readers:</p><ul>{% for name, text in definitions %}<li><strong>{{ name }}</strong>: {{ text }}</li>{% endfor %}</ul>{% endif %}
{% if said.correct %}<p class="{{ 'note' if said.agree else 'warn' }}"><strong>Correctness:</strong> {{ said.correct }}.</p>{% endif %}
{% if said.drift %}<p class="{{ 'warn' if said.drift_warning else 'note' }}"><strong>Drift:</strong> {{ said.drift }}</p>{% endif %}
<p class="note">Run directory: <code>{{ root }}</code></p>
<h2>Summary: offload against each baseline</h2>
{% for note in notes %}<p class="warn"><strong>Warning:</strong> {{ note }}.</p>{% endfor %}
{% if summary %}<p class="note">Medians of the measured repetitions; ratio = baseline / offload (&gt; 1: offload
spends less), with its 95 % interval in brackets (a percentile bootstrap of the ratio of medians, each
reader's repetitions resampled on their own; none with fewer than {{ min_n }} repetitions per reader). Bytes = bytes received by the compute hosts, CPU = CPU-seconds of the compute hosts, total CPU = CPU-seconds of the compute and the storage hosts together, all
during the query. The paper's figures (at 1 %, against its no-offload baseline): {{ paper }}.</p>
<table><tr>{% for h in summary[0] %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in summary[1:] %}<tr>{% for c in r %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
{% else %}<p>No offload point has a baseline at the same parameters in this run.</p>{% endif %}
{% for line in crossover %}<p class="note">{{ line }}.</p>{% endfor %}
<h2>Figures</h2>
{% for name, data in figures %}<img src="data:image/png;base64,{{ data }}" alt="{{ name }}" title="{{ name }}">
{% endfor %}
<h2>Points: query time min / p1 / p50 / p99 / max</h2>
<p class="note">p1 and p99 only where a point has {{ band_min }} or more measured repetitions (with fewer they are only its min and max).</p>
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
<h2>Provenance</h2>
<table>{% for k, v in provenance %}<tr><td class="l">{{ k }}</td><td class="l">{{ v }}</td></tr>{% endfor %}</table>
</body></html>
""", autoescape=True)


def _cells(t: pd.DataFrame) -> list[list[str]]:
    def cell(v):
        if isinstance(v, float):
            return "-" if math.isnan(v) else f"{v:.4g}"
        return str(v)
    return [list(map(str, t.columns))] + [[cell(v) for v in r] for r in t.itertuples(index=False)]


def description(run: RunDir) -> str:
    """The experiment's description as ``spec.yaml`` records it (under ``experiment``)."""
    spec = run.read_yaml(run.spec) or {}
    exp = spec.get("experiment") if isinstance(spec, dict) else None
    return str(exp.get("description") or "") if isinstance(exp, dict) else ""


def write_html(run: RunDir, df: pd.DataFrame, s: pd.DataFrame, figures: list[Path], notes: list[str] = (),
               said: "Statements | None" = None, crossover: list[str] = (), limits: list[str] = ()) -> Path:
    """``report/index.html``: one self-contained page (figures embedded as data URIs); ``notes``:
    its warnings (:func:`warning_lines`); ``crossover``: the measured and the cost model's crossover
    (:func:`sae.results.analysis.advice.report_lines`); ``limits``: its caveats (:func:`caveats`)."""
    plan = run.load_plan()
    said = said or statements(df, s)
    layout = run.read_yaml(run.layout)
    hosts = []
    if layout:
        lay = Layout.from_dict(layout)
        sides = lay.host_roles()
        hosts = [(n, sides.get(n, "-"), ", ".join(lay.roles_of(n))) for n in lay.all_names()]
    page = PAGE.render(style=STYLE,
        title=f"{plan.experiment} ({plan.profile or 'default'} profile)", root=str(run.root), notes=notes,
        min_n=statistics.MIN_N, band_min=BAND_MIN,
        description=description(run), said=said,
        definitions=[(r.name, r.definition) for r in readers.READERS.values()
                     if "reader" in df and r.name in set(df["reader"])],
        summary=[] if s.empty else [summary_rows(s)[0], *summary_rows(s)[1]], crossover=crossover, paper=f"{PAPER['bytes_x']}x less network, {PAPER['compute_cpu_x']}x less CPU",
        figures=[(f.stem, base64.b64encode(f.read_bytes()).decode()) for f in figures],
        points=_cells(point_table(df)), hosts=capacities.host_rows(run, hosts),
        host_head=capacities.HOST_HEAD, capacities=capacities.summary_lines(run), warmup=warmup_rule(plan.warmup, min(p.repetitions for p in plan.points),
                                                         max(p.repetitions for p in plan.points)),
        plan=plan.text(), caveats=limits, provenance=provenance.facts(run.read_yaml(run.versions) or {}))
    path = run.report / "index.html"
    tmp = path.with_name("index.html.tmp")
    tmp.write_text(page)
    tmp.replace(path)
    return path


def figure_names(plan: Plan) -> list[str]:
    """The figures of a run, in report order: what its experiment declared, then the standard ones."""
    return list(dict.fromkeys([*plan.figures, *figure_entries.standard()]))


def reads_event_log(plan: Plan) -> bool:
    """Whether the run's report reads its applications' event logs: a shared application's
    (sae.running.shared_app) is then copied into the run after each of its jobs."""
    return any(figure_entries.get(name).reads_event_log for name in figure_names(plan))


def measured_any(df: pd.DataFrame) -> bool:
    """Whether a run's results hold a measured query time (else there is nothing to report)."""
    return not (df.empty or df.loc[~df["warmup"], "total_s"].isna().all())


def with_columns_read(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``columns_read`` (:func:`~sae.results.drawing.plotting.columns_read`) where it has ``columns``."""
    return df.assign(columns_read=columns_read(df)) if "columns" in df else df


def draw_figures(run: RunDir, df: pd.DataFrame, out: Path) -> list[Path]:
    """Draw the run's figures (:func:`figure_names`) from its results ``df`` into ``out``; their paths."""
    return [path for name in figure_names(run.load_plan()) for path in figure_entries.get(name)(run, df, out)]


def provenance_line(run: RunDir) -> str:
    """The summary's provenance line: sae's commit, Ceph, Spark, the JDK, the kernel and the CPU
    (:func:`sae.results.run.provenance.facts`)."""
    shown = ("sae commit", "Ceph", "Spark", "JDK", "kernel", "CPU")
    facts = dict(provenance.facts(run.read_yaml(run.versions) or {}, nodes_named=False))
    return "provenance: " + "; ".join(f"{k} {facts[k]}" for k in shown)


def make_report(path, *, spread_caveat: str | None = None) -> list[Path]:
    """Write the run's figures (:func:`figure_names`), the summary (``summary.txt``,
    ``summary.csv``) and ``index.html`` into ``report/``; returns their paths (none when nothing is
    measured yet). ``spread_caveat``: what the intervals cover (:func:`caveats`; default: within
    the run, or calibrated by the machine's A/A record, :func:`sae.results.analysis.calibration.caveat`)."""
    run = RunDir.find(path)
    if spread_caveat is None:
        from ..analysis.calibration import caveat
        spread_caveat = caveat(run.root)
    df = load_results(run.root)
    run.report.mkdir(exist_ok=True)
    if not measured_any(df):
        return []
    df = with_columns_read(df)
    figures = draw_figures(run, df, run.report)
    s = summary(df)
    s.to_csv(run.report / "summary.csv", index=False)
    notes = warning_lines(df)
    said = statements(df, s)
    crossover = report_lines(run.root, df)
    limits = caveats(run, df, spread_caveat)
    lines = [summary_text(s), *crossover, *(f"warning: {note}" for note in notes),
             *capacities.summary_lines(run), provenance_line(run),
             *(f"caveat: {line}" for line in limits), *said.lines()]
    (run.report / "summary.txt").write_text("\n".join(lines) + "\n")
    return figures + [run.report / "summary.txt", run.report / "summary.csv",
                      write_html(run, df, s, figures, notes, said, crossover, limits)]


def summary_of(path) -> str:
    """The summary text of a run's report (written by :func:`make_report`), or why there is none."""
    f = RunDir.find(path).report / "summary.txt"
    return f.read_text().rstrip() if f.exists() else "summary: no report yet; run 'sae report' first"
