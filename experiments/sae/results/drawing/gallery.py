"""The results page: every measurement the documentation shows, regenerated from recorded runs
by one command (``sae gallery``), each figure and table stamped with the run and the commit it
comes from.

A **recorded run** is a run directory trimmed to what the page draws from (:func:`record`,
``sae gallery --record RUN_DIR``), under ``<runs>/<experiment>/``:

* ``results.parquet``, ``spec.yaml``, ``plan.yaml``, ``versions.lock``, ``experiment.py``,
  ``layout.yaml``, ``layouts/`` and ``capacities/`` as the run wrote them, but for the paths of the
  machine it ran on (:func:`_without_local_paths`: the experiment file relative to the checkout,
  no checkout path);
* the metric windows of the repetitions the per-host figures draw (:data:`WINDOW_FILES`: the
  median repetition of each configuration, :func:`sae.results.drawing.figures.representatives`), only the
  file each figure reads: ``metrics/<point>/rep<k>/counters.parquet`` (resources) and
  ``metrics.parquet`` (resources-disk); every other figure and table reads results.parquet;
* where a figure reads Spark's event log (``reads_event_log`` in :mod:`sae.planning.figures`), the
  log cut to its task-end events and the task metrics the figures sum
  (:data:`EVENT_METRICS`), as plain text at the log's place under ``logs/``;
* ``recorded.yaml``: the run's id (the name of the directory it ran in), where it was recorded
  from and what was kept.

Logs, raw timings, the ledger, the reservation and the report are left out.

:func:`generate` draws every recorded run's figures into ``<out>/gallery/<experiment>/`` and writes
``<out>/measurements.md``: per experiment its headlines, caveats, summary table, figures,
provenance and points; an experiment without a recorded run gets its heading and a line saying
so (so links to its section hold before it is recorded).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import jinja2
import pandas as pd
import pyarrow as pa

from metareserve.errors import UsageError

from ..analysis.measured import measured_any, with_columns_read
from ..analysis.summary import SPREAD_CAVEAT, caveats, point_table, statements, summary, summary_rows, warning_lines
from ..analysis.indexed_summary import indexed_rows, indexed_text
from ..analysis.write_summary import write_rows, write_text
from ..run import capacities, eventlog, provenance
from ..run.directory import RunDir, read_results
from .plotting import sketching, stamping
from .report import draw_figures, figure_names, reads_event_log, warmup_rule

RECORDED = "recorded.yaml"
"""The file that makes a directory a recorded run."""
KEPT = ("results.parquet", "spec.yaml", "plan.yaml", "versions.lock", "experiment.py", "layout.yaml")
KEPT_DIRS = ("layouts", "capacities")
"""What a recorded run keeps of its run directory as the run wrote it (where the run has it)."""
WINDOW_FILES = {"resources": "counters.parquet", "resources-disk": "metrics.parquet"}
MAX_WINDOWS = 12
"""Representative repetitions whose metric windows a recording keeps, at most (the first ones: a
run of more configurations, as writes.py's 30, draws its per-host figures from these, and stays
small)."""
"""Figure → the metric-window file it reads for each representative repetition."""
EVENT_METRICS = (eventlog.INPUT_BATCHES,)
"""The task metrics the event-log figures (``reads_event_log``) sum."""
PAGE = "measurements.md"
GALLERY = "gallery"


def run_id(run: RunDir) -> str:
    """The name of the directory the run ran in: its lease's holder where it took one (a run
    copied elsewhere keeps its id), else its directory's name."""
    held = run.read_yaml(run.root / "lease.yaml") or {}
    holder = held.get("holder") if isinstance(held, dict) else None
    return Path(holder).name if isinstance(holder, str) and holder else run.root.name


def record(run_dir, runs) -> Path:
    """Trim the run at ``run_dir`` (or the ``latest`` under it) into ``runs/<experiment>/`` (see
    the module), replacing the experiment's recorded run; returns its directory. UsageError
    naming the run when it has no results yet; nothing is left behind when it fails."""
    run = RunDir.find(run_dir)
    plan = run.load_plan()
    if not run.results.exists():
        raise UsageError(f"{run.root}: no results.parquet; run 'sae report {run.root}' first, then record it")
    df = with_columns_read(read_results(run))   # grouped as the figures group it
    if not measured_any(df):
        raise UsageError(f"{run.root}: no measured query in results.parquet; record a run that measured one")
    target = Path(runs) / plan.experiment
    with _replacing(target) as tmp:
        for name in KEPT:
            if (run.root / name).exists():
                shutil.copy2(run.root / name, tmp / name)
        for name in KEPT_DIRS:
            if (run.root / name).is_dir():
                shutil.copytree(run.root / name, tmp / name)
        _without_local_paths(RunDir(tmp))
        windows = _copy_windows(run, df, tmp, figure_names(plan))
        logs = _cut_event_logs(run, tmp) if reads_event_log(plan) else []
        lock = run.read_yaml(run.versions) or {}
        RunDir(tmp).write_yaml(tmp / RECORDED, {
            "version": 1, "run": run_id(run), "experiment": plan.experiment, "profile": plan.profile,
            "sae": {k: (lock.get("sae") or {}).get(k) for k in ("commit", "dirty")},
            "windows": windows, "event_logs": logs})
    return target


def _without_local_paths(run: RunDir) -> None:
    """Drop where the run's checkout lived from a recorded run's spec.yaml (the experiment file,
    relative to the checkout when it lay inside it, else its name) and versions.lock (sae's
    ``checkout``; in the command, paths inside it made relative to it): a committed record names
    no path of the checkout it ran from."""
    lock = run.read_yaml(run.versions) if run.versions.exists() else None
    checkout = ((lock or {}).get("sae") or {}).pop("checkout", None) if isinstance(lock, dict) else None
    if lock is not None:
        if checkout and isinstance(lock.get("command"), str):
            lock["command"] = " ".join(_inside(word, checkout) for word in lock["command"].split(" "))
        run.write_yaml(run.versions, lock)
    spec = run.read_yaml(run.spec) if run.spec.exists() else None
    if isinstance(spec, dict) and spec.get("file"):
        path = Path(spec["file"])
        inside = checkout and path.is_absolute() and path.is_relative_to(checkout)
        spec["file"] = (path.relative_to(checkout) if inside else Path(path.name)).as_posix()
        run.write_yaml(run.spec, spec)


def _inside(word: str, checkout: str) -> str:
    """``word``, relative to ``checkout`` when it is an absolute path inside it."""
    path = Path(word)
    return path.relative_to(checkout).as_posix() if path.is_absolute() and path.is_relative_to(checkout) else word


def _copy_windows(run: RunDir, df: pd.DataFrame, dest: Path, figures: list[str]) -> list[str]:
    """Copy the metric-window files the run's ``figures`` read (:data:`WINDOW_FILES`) of the
    representative repetitions; their paths relative to the run."""
    files = sorted({WINDOW_FILES[f] for f in figures if f in WINDOW_FILES})
    if not files:
        return []
    from .figures import representatives   # a drawing module: loads matplotlib
    kept = []
    for _, row in representatives(df)[:MAX_WINDOWS]:
        for name in files:
            rel = Path("metrics") / row["point"] / f"rep{row['repetition']}" / name
            if (run.root / rel).exists():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(run.root / rel, dest / rel)
                kept.append(rel.as_posix())
    return kept


def _cut_event_logs(run: RunDir, dest: Path) -> list[str]:
    """Write each of the run's event logs cut to its task-end events and their
    :data:`EVENT_METRICS` (plain text, at the log's path without its codec suffix, where
    :func:`sae.results.run.eventlog.log_files` finds it); their paths relative to the run."""
    kept = []
    for path, codec in eventlog.log_files(run.root):
        lines = []
        with pa.input_stream(str(path), compression=codec) as stream:
            text = stream.read().decode(errors="replace")
        for line in text.splitlines():
            if '"SparkListenerTaskEnd"' not in line or not any(m in line for m in EVENT_METRICS):
                continue
            try:
                info = json.loads(line).get("Task Info", {})
            except ValueError:   # a live application's log may end mid-line
                continue
            metrics = [a for a in info.get("Accumulables", []) if a.get("Name") in EVENT_METRICS]
            lines.append(json.dumps({"Event": "SparkListenerTaskEnd", "Task Info": {
                "Finish Time": info.get("Finish Time"), "Accumulables": metrics}}))
        rel = path.relative_to(run.root)
        name = rel.name.removesuffix(".inprogress")
        name = name.removesuffix(Path(name).suffix) if Path(name).suffix in eventlog.CODECS else name
        (dest / rel.parent).mkdir(parents=True, exist_ok=True)
        (dest / rel.parent / name).write_text("".join(f"{line}\n" for line in lines))
        kept.append((rel.parent / name).as_posix())
    return kept


@contextlib.contextmanager
def _replacing(target: Path):
    """A fresh directory beside ``target`` to build in; on success it replaces ``target``, on
    failure it is removed (``target`` untouched)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{target.parent}: cannot make the directory ({e.strerror}); pass another") from None
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def recorded_runs(runs) -> list[RunDir]:
    """The recorded runs under ``runs`` (each a directory holding :data:`RECORDED`), by name."""
    d = Path(runs)
    if not d.is_dir():
        raise UsageError(f"{d}: no such directory of recorded runs; run from the repository root or pass --runs "
                         f"(record one with 'sae gallery --record RUN_DIR')")
    return [RunDir(p) for p in sorted(d.iterdir()) if (p / RECORDED).is_file()]


def stamp(run: RunDir) -> str:
    """``run <id>, sae <commit> (clean|dirty)``: what every figure and table of a run is stamped with."""
    rec = run.read_yaml(run.root / RECORDED) or {}
    commit = dict(provenance.facts(run.read_yaml(run.versions) or {}))["sae commit"]
    return f"run {rec.get('run') or run.root.name}, sae {commit}"


def generate(runs="docs/runs", out="docs", experiments=None, *,
             spread_caveat: Callable[[RunDir], str] = lambda run: SPREAD_CAVEAT) -> list[Path]:
    """Draw every recorded run's figures under ``runs`` into ``out/gallery/<experiment>/`` (the
    directory replaced: nothing stale stays) and write ``out/measurements.md``; returns the page
    and the figures. ``experiments``: a directory of experiment files, to name those without a
    recorded run; ``spread_caveat``: what a run's intervals cover (:func:`sae.results.analysis.summary.caveats`).
    Each experiment's section is headed by its name with ``-`` for ``_`` (one anchor in every
    Markdown renderer)."""
    out = Path(out)
    found = recorded_runs(runs)   # before anything is written
    with _replacing(out / GALLERY) as tmp:
        text, figures = _page(runs, found, tmp, out, experiments, spread_caveat)
    page = out / PAGE
    page.with_name(PAGE + ".tmp").write_text(text)
    page.with_name(PAGE + ".tmp").replace(page)
    return [page, *(out / GALLERY / f for f in figures)]


def check(runs="docs/runs", out="docs", experiments=None, *,
          spread_caveat: Callable[[RunDir], str] = lambda run: SPREAD_CAVEAT) -> list[str]:
    """What in ``out`` is not what :func:`generate` would make of ``runs`` now, one line each
    (none: up to date): the page's text, and figures missing or left over. The figures are built
    from the runs' data but not rendered (:func:`~sae.results.drawing.plotting.sketching`), so
    their pixels are not compared; seconds where :func:`generate` takes most of a minute."""
    out = Path(out)
    with tempfile.TemporaryDirectory() as tmp, sketching():
        text, figures = _page(runs, recorded_runs(runs), Path(tmp), out, experiments, spread_caveat)
    page = out / PAGE
    stale = [] if page.is_file() and page.read_text() == text else [f"{page}: not what the recorded runs give"]
    drawn = {Path(GALLERY, f).as_posix() for f in figures}
    there = {p.relative_to(out).as_posix() for p in (out / GALLERY).rglob("*.png")}
    stale += [f"{out / f}: missing" for f in sorted(drawn - there)]
    stale += [f"{out / f}: no recorded run draws it" for f in sorted(there - drawn)]
    return stale


def _page(runs, found: list[RunDir], gallery: Path, out: Path, experiments,
          spread_caveat) -> tuple[str, list[Path]]:
    """The page's text and the figures of the recorded runs ``found`` under ``runs``, drawn into
    ``gallery`` (paths relative to it)."""
    names = _experiments(experiments) if experiments else {}
    sections = [s for s in (_section(run, gallery, out, spread_caveat(run)) for run in found) if s]
    recorded = {s["experiment"]: s for s in sections}
    missing = [{"experiment": n, "description": d} for n, d in names.items() if n not in recorded]
    text = PAGE_TEMPLATE.render(sections=sorted(sections + missing, key=lambda s: s["experiment"]),
                                runs=_relative(Path(runs), out))
    return text, [p.relative_to(gallery) for s in sections for p in s["paths"]]


def _experiments(directory) -> dict[str, str]:
    """Experiment name → description of every experiment file in ``directory``."""
    from ...planning.loader import experiment_files, load_experiment
    return {e.name: e.description for e in map(load_experiment, experiment_files(directory))}


def _relative(path: Path, start: Path) -> str:
    """``path`` relative to ``start``, as a link on the page reads it."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(start))).as_posix()


def _section(run: RunDir, gallery: Path, out: Path, spread: str) -> dict | None:
    """One recorded run's part of the page: its figures drawn into ``gallery/<experiment>/`` and
    what the page states (None when the run measured nothing)."""
    df = read_results(run)
    if not measured_any(df):
        return None
    df = with_columns_read(df)
    plan = run.load_plan()
    rec = run.read_yaml(run.root / RECORDED) or {}
    here = gallery / plan.experiment
    here.mkdir()
    with stamping(stamp(run)):
        paths = draw_figures(run, df, here)
    for path in filter(Path.exists, paths):   # sketched figures are not written
        _compact(path)
    s = summary(df)
    said = statements(df, s)
    facts = provenance.facts(run.read_yaml(run.versions) or {})
    spec = run.read_yaml(run.spec) or {}
    experiment = spec.get("experiment") if isinstance(spec, dict) else None
    points = point_table(df)
    return {"experiment": plan.experiment, "id": rec.get("run") or run.root.name, "stamp": stamp(run),
            "profile": plan.profile or "default", "commit": dict(facts)["sae commit"],
            "command": dict(facts)["command"], "run_dir": _relative(run.root, out),
            "description": (experiment or {}).get("description") or "", "said": said,
            "caveats": caveats(run, df, spread), "warnings": warning_lines(df),
            "capacities": [line.removeprefix("warning: ") for line in capacities.summary_lines(run)
                           if line.startswith("warning: ")],
            **_summary(df, s),
            "figures": [(p.stem, Path(GALLERY, plan.experiment, p.name).as_posix()) for p in paths],
            "paths": paths, "provenance": _markdown(["what", "value"], [list(f) for f in facts]),
            "points": _markdown(list(map(str, points.columns)), [[_cell(v) for v in r] for r in
                                                                 points.itertuples(index=False)]),
            "warmup": warmup_rule(plan.warmup, min(p.repetitions for p in plan.points),
                                  max(p.repetitions for p in plan.points)),
            "event_log": reads_event_log(plan)}


SUMMARY_NOTE = ("Medians of the measured repetitions; ratio = baseline / offload (> 1: offload spends less) with its "
                "95 % bootstrap interval; total CPU = the compute and the storage hosts' CPU-seconds together.")
WRITES_NOTE = ("Medians of the measured repetitions; requests = S3 requests at the gateway and MDS requests; OSD "
               "writes = every client's; x = writer / sae-ceph with its 95 % bootstrap interval (> 1: sae-ceph "
               "asked less or took less).")


INDEXED_NOTE = ("Medians of the measured repetitions; lookups and joins: Spark's cache's time over the indexed "
                "cache's (> 1: the index was faster) with its 95 % bootstrap interval; the goals the project set and "
                "what the Indexed DataFrame paper reported beside each.")


def _summary(df: pd.DataFrame, s: pd.DataFrame) -> dict:
    """The page's summary table, its title and its note: the write jobs' for a run of them, the
    key queries' for a run of the in-memory readers, else offload's against each baseline (none
    without a pair)."""
    if write_text(df):
        return {"summary": _markdown(*write_rows(df)), "summary_title": "each writer against sae-ceph",
                "summary_note": WRITES_NOTE}
    if indexed_text(df):
        return {"summary": _markdown(*indexed_rows(df)), "summary_title": "the key queries beside the paper",
                "summary_note": INDEXED_NOTE}
    return {"summary": _markdown(*summary_rows(s)) if not s.empty else "",
            "summary_title": "offload against each baseline", "summary_note": SUMMARY_NOTE}


def _compact(path: Path) -> None:
    """Rewrite a figure's PNG in 256 colours (a third of its bytes: the page's figures are
    committed), keeping its text metadata (the stamp)."""
    from PIL import Image, PngImagePlugin
    with Image.open(path) as image:
        info = PngImagePlugin.PngInfo()
        for key, value in image.text.items():
            info.add_text(key, value)
        small = image.convert("RGB").quantize(256)
    small.save(path, "png", optimize=True, pnginfo=info)


def _cell(value) -> str:
    if isinstance(value, float):
        return "-" if pd.isna(value) else f"{value:.4g}"
    return str(value)


def _markdown(head: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (``|`` in a cell escaped)."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
    return "\n".join([line(head), line(["---"] * len(head)), *map(line, rows)])


PAGE_TEMPLATE = jinja2.Template("""# Measurements

<!-- Generated by `sae gallery` from the recorded runs in {{ runs }}/; do not edit: record a run
(`sae gallery --record RUN_DIR`) or change sae.results.drawing.gallery, then run `sae gallery`. -->

Every number and figure on this page comes from a recorded run in [{{ runs }}/]({{ runs }}/): a run
directory trimmed to its results, plan, provenance and the few metric windows its figures draw
(experiments/sae/results/drawing/gallery.py says what is kept). Each figure and table names the run it
comes from and the sae commit it ran. `sae gallery` (from the repository root) regenerates this page
and the figures in [gallery/](gallery/) from those runs; `sae gallery --record RUN_DIR` trims a
finished run into them first; `sae gallery --check` says, in seconds and writing nothing, whether
this page and its figures are still what the runs give. How to read a summary:
[reading-results.md](reading-results.md).

| experiment | run | sae commit | profile | recorded run |
|---|---|---|---|---|
{% for s in sections %}| [{{ s.experiment }}](#{{ s.experiment | replace("_", "-") }}) | {% if s.id %}`{{ s.id }}` | {{ s.commit }} | {{ s.profile }} | [{{ s.run_dir }}]({{ s.run_dir }}/){% else %}not recorded | - | - | -{% endif %} |
{% endfor %}
{%- for s in sections %}
## {{ s.experiment | replace("_", "-") }}
{% if not s.id %}
{{ s.description }}

No recorded run yet: `sae gallery --record results/{{ s.experiment }}/latest` after running it.
{% else %}
*{{ s.stamp }}; profile {{ s.profile }}; `{{ s.command }}`.*
{{ s.description }}
{% if s.said.headlines %}
Headline, at each selectivity:
{% for line in s.said.headlines %}
- {{ line }}
{%- endfor %}
{% endif %}
Caveats:
{% for line in s.caveats %}
- {{ line }}
{%- endfor %}
{% for line in s.warnings %}
**Warning:** {{ line }}.
{% endfor %}
{%- if s.said.correct %}
Correctness: {{ s.said.correct }}.
{% endif %}
{%- if s.said.drift %}
{{ "**Warning:**" if s.said.drift_warning else "Drift:" }} {{ s.said.drift }}.
{% endif %}
{%- for line in s.capacities %}
**Warning:** {{ line }}.
{% endfor %}
{%- if s.summary %}
### {{ s.experiment }}: {{ s.summary_title }}

*{{ s.stamp }}.* {{ s.summary_note }}

{{ s.summary }}
{% endif %}
### {{ s.experiment }}: figures
{% for name, path in s.figures %}
![{{ name }}]({{ path }})
*{{ name }}.png: {{ s.stamp }}.*
{% endfor %}
{%- if s.event_log %}
(The batch counts are read from the Spark event log the recorded run keeps, cut to its task-end events.)
{% endif %}
### {{ s.experiment }}: provenance

*{{ s.stamp }}.*

{{ s.provenance }}

<details><summary>{{ s.experiment }}: every point (query time min / p1 / p50 / p99 / max, {{ s.stamp }})</summary>

{{ s.warmup }}

{{ s.points }}

</details>
{% endif %}
{%- endfor %}""", keep_trailing_newline=True)
