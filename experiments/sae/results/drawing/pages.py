"""The HTML pages of the results: the style sheet every page shares (:data:`STYLE`: the report's
too), and the pages of ``sae compare --html`` (:func:`comparison_page`) and ``sae history --html``
(:func:`history_page`): one self-contained page each (:func:`write_page`) of notes, tables and a
figure per metric."""
from __future__ import annotations

import base64
import functools
import math
from pathlib import Path
from typing import Callable

import jinja2

from ..analysis.compare import Comparison
from ..analysis.history import History
from ..analysis.measured import BAND_MIN, stats
from .plotting import pyplot, save


STYLE = """body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 0.8em; font-size: 0.8em; overflow-x: auto; }
.note { color: #555; font-size: 0.9em; } .warn { color: #a00; }
"""
"""The pages' CSS (the report's and sae compare's / sae history's)."""

PAGE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
{{ style | safe }}</style></head><body>
<h1>{{ title }}</h1>
{% for line in notes %}<p>{{ line }}</p>{% endfor %}
{% for line in warnings %}<p class="warn">{{ line }}</p>{% endfor %}
{% for caption, head, rows in tables %}<h2>{{ caption }}</h2>
<table><tr>{% for h in head %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in rows %}<tr>{% for c in r %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
{% endfor %}
<h2>Figures</h2>
{% for name, data in figures %}<img src="data:image/png;base64,{{ data }}" alt="{{ name }}" title="{{ name }}">
{% endfor %}
</body></html>
""", autoescape=True)


def write_page(out_dir, title: str, notes: list[str], warnings: list[str],
               tables: list[tuple[str, list[str], list[list[str]]]],
               figures: dict[str, Callable[[Path], Path]]) -> Path:
    """``out_dir/index.html`` (``out_dir`` created): one self-contained page of notes, tables and
    ``figures`` (file name → the function drawing it there; embedded)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    drawn = [draw(out / name) for name, draw in figures.items()]
    path = out / "index.html"
    path.write_text(PAGE.render(style=STYLE, title=title, notes=notes, warnings=warnings, tables=tables,
                                figures=[(f.stem, base64.b64encode(f.read_bytes()).decode()) for f in drawn]))
    return path


def comparison_figure(c: Comparison, metric: str, path: Path) -> Path:
    """The sides' medians of ``metric`` per point, side by side, with their spread (p1–p99 where
    every point has :data:`BAND_MIN` values, else min–max)."""
    plt = pyplot()
    labels = [p.label for p in c.points]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) + 3) + 3, 4.5))
    width = 0.8 / len(c.sides)
    medians = [stats(s.results, ["_point"], metric).set_index("_point").reindex(labels).dropna(subset=["median"])
               for s in c.sides]
    low, high = ("p1", "p99") if all(s["n"].min() >= BAND_MIN for s in medians if len(s)) else ("min", "max")
    for i, (side, s) in enumerate(zip(c.sides, medians)):
        x = [labels.index(p) + (i - (len(c.sides) - 1) / 2) * width for p in s.index]
        ax.errorbar(x, s["median"], yerr=[s["median"] - s[low], s[high] - s["median"]], fmt="o", capsize=3,
                    label=f"{side.label}: {side.name}")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric}: median per point and side over its repetitions, bars {low}–{high} (p1–p99 with "
                 f"{BAND_MIN} or more values)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save(fig, path)


def comparison_page(c: Comparison, out_dir) -> Path:
    """``out_dir/index.html`` (created): the comparison's table and, per metric, a figure
    (``compare-<metric>.png``)."""
    return write_page(out_dir, f"{len(c.sides)} sides compared", c.notes() + c.passed(),
                      c.warnings + [f.text() for f in c.failures], [("Medians, ratios and verdicts", *c.table())],
                      {f"compare-{m}.png": functools.partial(comparison_figure, c, m) for m in c.metrics})


def history_figure(h: History, metric: str, path: Path) -> Path:
    """Each point's median of ``metric`` per run, flagged runs circled in red."""
    plt = pyplot()
    names = [r.label for r in h.runs]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 3), 4.5))
    for point in h.points:
        series = [e for e in h.entries if e.point == point and e.metric == metric and not math.isnan(e.median)]
        ax.plot([names.index(e.run.label) for e in series], [e.median for e in series], marker="o",
                label=point.label)
        bad = [e for e in series if e.flagged]
        ax.scatter([names.index(e.run.label) for e in bad], [e.median for e in bad], s=160, facecolors="none",
                   edgecolors="red", linewidths=2, zorder=3)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"{metric}, median of measured repetitions")
    ax.set_title(f"{h.experiment}: {metric} per run (red: |z| > {h.threshold:g})", fontsize=10)
    if len(h.points) > 1:
        ax.legend(fontsize=7)
    return save(fig, path)


def history_page(h: History, out_dir) -> Path:
    """``out_dir/index.html`` (created): the history's tables and a series figure per metric
    (``history-<metric>.png``)."""
    return write_page(out_dir, f"History of {h.experiment}", h.notes(), h.flag_lines(), h.tables(),
                      {f"history-{m}.png": functools.partial(history_figure, h, m) for m in h.metrics})
