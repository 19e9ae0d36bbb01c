"""The report of a run, from its tidy results, metric windows and plan.

* the figures the experiment declares (``Experiment.figures``, kept in the plan) and the standard
  ones every run gets (:data:`sae.planning.spec.STANDARD_FIGURES`), drawn by :mod:`sae.results.figures`;
* ``summary.txt`` / ``summary.csv``: at each selectivity, each offloading reader against each
  baseline (:mod:`sae.planning.readers`) as ratios (bytes to the compute side, compute CPU, time), with the
  paper's figures beside ours;
* ``index.html``: one self-contained page: summary, figures, per-point p1/p50/p99, hosts, the
  warm-up rule, the plan and the versions.

Warm-up repetitions are excluded from every statistic (they stay in results.parquet).
"""
from __future__ import annotations

import base64
import math
from pathlib import Path

import jinja2
import pandas as pd

from metareserve import Layout

from . import capacity_report

from ..planning import readers
from .figures import DRAW, columns_read
from ..planning.planner import Plan
from .plotting import CONFIG, stats, varying
from .results import RESOURCES, RunDir, load_results
from ..planning.spec import STANDARD_FIGURES

PAPER = {"bytes_x": 48.9, "compute_cpu_x": 8.0}
"""The paper's figures at 1 % selectivity, offload against its no-offload baseline: 48.9x less
network traffic to and 8.0x less CPU on the compute cluster."""


RATIOS = {"time_x": "total_s", "bytes_x": "compute_rx_bytes", "compute_cpu_x": "compute_cpu_s"}
"""Summary ratio → the measured column it divides (baseline median / offload median)."""


def warmup_rule(warmup: int, repetitions: int) -> str:
    """The warm-up rule as one sentence."""
    return (f"The first {warmup} of the {repetitions} repetitions of every point warm up (JVM, caches): they "
            f"stay in results.parquet with warmup=True and are left out of every statistic; p1, p50 "
            f"and p99 are quantiles over the {repetitions - warmup} measured repetitions.")


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Each offloading reader (``reader``) against each baseline (:mod:`sae.planning.readers`) at each
    selectivity (and other varied parameters): medians over measured repetitions, ratios
    baseline / offload (``time_x``, ``bytes_x``: bytes to the compute side, ``compute_cpu_x``;
    > 1 means offload spends less) and, for offload at 1 % against no-offload, the paper's ratios
    beside them. Empty unless the run has an offloading reader and a baseline."""
    if "reader" not in df or not set(readers.OFFLOADING) & set(df["reader"]):
        return pd.DataFrame()
    keys = varying(df, [c for c in CONFIG if c != "reader"]) + ["selectivity"]
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


def point_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per point, in run order: its varied parameters, n measured repetitions, query time p1/p50/p99
    and the medians of the side resources."""
    keys = varying(df, list(CONFIG) + ["selectivity"])
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


def figure_names(plan: Plan) -> list[str]:
    """The figures of a run, in report order: what its experiment declared, then the standard ones."""
    return list(dict.fromkeys([*plan.figures, *STANDARD_FIGURES]))


def make_report(path) -> list[Path]:
    """Write the run's figures (:func:`figure_names`), the summary (``summary.txt``,
    ``summary.csv``) and ``index.html`` into ``report/``; returns their paths (none when nothing is
    measured yet)."""
    run = RunDir.find(path)
    df = load_results(run.root)
    run.report.mkdir(exist_ok=True)
    if df.empty or df.loc[~df["warmup"], "total_s"].isna().all():
        return []
    if "columns" in df:
        df = df.assign(columns_read=columns_read(df))
    figures = [path for name in figure_names(run.load_plan()) for path in DRAW[name](run, df, run.report)]
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
