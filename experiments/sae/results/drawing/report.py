"""The report of a run, from its tidy results, metric windows and plan.

* the figures the experiment declares (``Experiment.figures``, kept in the plan) and the standard
  ones every run gets (:func:`sae.planning.figures.standard`), each drawn by its entry's function;
* ``summary.txt`` / ``summary.csv``: at each selectivity, each offloading reader against each
  baseline as ratios (bytes to the compute side, compute CPU, both sides' CPU, time), with the
  paper's figures beside ours, then the run's provenance (:func:`sae.results.run.provenance.facts`),
  its caveats and its headline at each selectivity (all of :mod:`sae.results.analysis.summary`);
* ``index.html``: one self-contained page: headlines, caveats, summary, figures, per-point
  p1/p50/p99, hosts, the warm-up rule, the plan and the provenance.

Warm-up repetitions are excluded from every statistic (they stay in results.parquet).
"""
from __future__ import annotations

import base64
import math
from pathlib import Path

import jinja2
import pandas as pd

from metareserve import Layout

from ...planning import figures as figure_entries, readers
from ...planning.planner import Plan
from ..analysis import statistics
from ..analysis.advice import report_lines
from ..analysis.calibration import caveat
from ..analysis.measured import BAND_MIN, measured_any, with_columns_read
from ..analysis.summary import (PAPER, Statements, caveats, point_table, statements, summary, summary_rows,
                                summary_text, warning_lines)
from ..analysis.indexed_summary import indexed_text
from ..analysis.write_summary import write_text
from ..run import capacities, provenance
from ..run.directory import RunDir, load_results
from .pages import STYLE


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
               said: Statements | None = None, crossover: list[str] = (), limits: list[str] = ()) -> Path:
    """``report/index.html``: one self-contained page (figures embedded as data URIs); ``notes``:
    its warnings (:func:`~sae.results.analysis.summary.warning_lines`); ``crossover``: the measured
    and the cost model's crossover (:func:`sae.results.analysis.advice.report_lines`); ``limits``:
    its caveats (:func:`~sae.results.analysis.summary.caveats`)."""
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
    measured yet). ``spread_caveat``: what the intervals cover
    (:func:`~sae.results.analysis.summary.caveats`; default: within the run, or calibrated by the
    machine's A/A record, :func:`sae.results.analysis.calibration.caveat`)."""
    run = RunDir.find(path)
    if spread_caveat is None:
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
    lines = [write_text(df) or summary_text(s), *filter(None, [indexed_text(df)]), *crossover, *(f"warning: {note}" for note in notes),
             *capacities.summary_lines(run), provenance_line(run),
             *(f"caveat: {line}" for line in limits), *said.lines()]
    (run.report / "summary.txt").write_text("\n".join(lines) + "\n")
    return figures + [run.report / "summary.txt", run.report / "summary.csv",
                      write_html(run, df, s, figures, notes, said, crossover, limits)]


def summary_of(path) -> str:
    """The summary text of a run's report (written by :func:`make_report`), or why there is none."""
    f = RunDir.find(path).report / "summary.txt"
    return f.read_text().rstrip() if f.exists() else "summary: no report yet; run 'sae report' first"
