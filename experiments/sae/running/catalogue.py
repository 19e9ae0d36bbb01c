"""The catalogue: every experiment file of a directory run one after another (``sae run
experiments/``), with one page linking every experiment's report.

Every file is loaded and planned first, so a bad one stops the catalogue before anything runs;
``exclude`` leaves experiments out by name (e.g. ``versions`` where PyPI is out of reach).
The runs then share what they can: local runs reattach to the one local cluster sae keeps
(:func:`sae.running.stages.choose_cluster`), a stack deployed by an earlier experiment reports "no
changes", datasets stay deployed for the next experiment that reads them, and consecutive runs
with the same Spark options and host shape query in one warm Spark application
(:mod:`sae.running.shared_app`; a run whose report reads Spark's event log has its own). An
experiment that fails is recorded and the next one runs; ``--teardown`` stops and releases after
the last one.

Written under ``<out>/catalogue/<YYYYmmdd-HHMMSS>-<profile>/`` (``latest`` points to the newest):
``index.html`` (per experiment: what it reproduces, outcome, wall time, a link to its report and
its headline figure) and ``catalogue.yaml`` (the same as data), both rewritten after every
experiment.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from pathlib import Path

import jinja2

from metareserve.errors import OperationalError, SaeError, UsageError
from metareserve.log import say
from metareserve.outputs import check_writable

from . import runner
from ..planning import settings as settings_mod
from ..planning.loader import experiment_files, load_experiment
from .context import RunOptions
from .shared_app import SharedApplication
from ..results.drawing.report import figure_names
from ..results.run.directory import RunDir

STAGE = "sae catalogue"
set_ = set   # ``set`` names the settings below


@dataclasses.dataclass
class Entry:
    """One experiment of a catalogue run: its file, name and description, the run directory,
    ``status`` (todo, running, done, failed), wall seconds, error and headline figure."""

    file: str
    experiment: str
    description: str
    status: str = "todo"
    run: str | None = None
    seconds: float | None = None
    error: str | None = None
    headline: str | None = None


def plan_catalogue(directory, *, profile: str | None = None, options: RunOptions | None = None,
                   set=None, exclude=()) -> list[tuple[Path, object]]:
    """(file, :class:`~sae.planning.planner.Plan`) of every experiment file of ``directory`` but
    those ``exclude`` names, in the order ``sae run DIR`` runs them, each checked as it would check
    it (``sae plan DIR``); the first usage error stops it."""
    options = options or RunOptions()
    return [(f, runner.prepare(f, profile=profile, options=options, settings=own)[1])
            for f, own in _settings_by_file(experiment_files(directory), set, exclude)]


def _settings_by_file(files: list[Path], settings, exclude=()) -> list[tuple[Path, dict]]:
    """(file, the settings that apply to its experiment) for each file whose experiment
    ``exclude`` does not name; UsageError for a setting scoped to, or an ``exclude`` of, an
    experiment none of them defines (:mod:`sae.planning.settings`), or nothing left to run."""
    names = [(f, load_experiment(f).name) for f in files]
    defined = {name for _, name in names}
    settings_mod.check_scopes(settings, defined)
    unknown = sorted(set_(exclude) - defined)
    if unknown:
        raise UsageError(f"--exclude {', '.join(unknown)}: no experiment of that name in {files[0].parent}; "
                         f"its experiments: {', '.join(sorted(defined))}")
    kept = [(f, name) for f, name in names if name not in exclude]
    if not kept:
        raise UsageError(f"--exclude leaves no experiment of {files[0].parent} to run")
    return [(f, settings_mod.of_experiment(settings, name)) for f, name in kept]


def run_catalogue(directory, *, profile: str | None = None, out="results",
                  options: RunOptions | None = None, set=None, exclude=()) -> Path:
    """Run every experiment file of ``directory`` but those ``exclude`` names (see the module);
    returns the index page. OperationalError at the end if any experiment failed (the others
    ran). ``set``: settings applied to every experiment, or to the one a setting's scope names
    (:mod:`sae.planning.settings`)."""
    options = options or RunOptions()
    files = _settings_by_file(experiment_files(directory), set, exclude)
    entries, profiles = [], set_()
    for f, own in files:   # every usage error before anything runs
        experiment, p = runner.prepare(f, profile=profile, options=options, settings=own)
        entries.append(Entry(str(f.resolve()), experiment.name, experiment.description))
        profiles.add(p.profile or "default")
    label = profiles.pop() if len(profiles) == 1 else "mixed"
    check_writable(out, "--out", directory=True)
    root = _new_root(Path(out), label)
    say(None, STAGE, f"{len(entries)} experiments; index {root / 'index.html'}")
    start, shared = time.time(), SharedApplication(root / "logs")
    with contextlib.closing(shared):
        _run_each(files, entries, root, label, start, profile=profile, out=out, options=options, shared=shared)
    failed = [e for e in entries if e.status == "failed"]
    say(None, STAGE, f"done in {_minutes(time.time() - start)}: {len(entries) - len(failed)} of {len(entries)} "
                     f"experiments ran; index {root / 'index.html'}")
    if failed:
        raise OperationalError(f"{len(failed)} of {len(entries)} experiments failed ("
                               f"{', '.join(e.experiment for e in failed)}; first: {failed[0].error}); "
                               f"see {root / 'index.html'}")
    return root / "index.html"


def _run_each(files: list, entries: list[Entry], root: Path, label: str, start: float, *, profile, out,
              options: RunOptions, shared: SharedApplication) -> None:
    """Run the experiments one after another, each recorded in ``entries`` and the index (wall
    time since ``start``) as it goes; they share one warm Spark application where they can
    (``shared``)."""
    for n, ((f, own), entry) in enumerate(zip(files, entries), 1):
        last = n == len(entries)
        entry.status, t0 = "running", time.time()
        _write(root, entries, label, time.time() - start)
        say(None, STAGE, f"experiment {n}/{len(entries)}: {entry.experiment}")
        latest = Path(out) / entry.experiment / "latest"
        before = latest.resolve() if latest.exists() else None
        try:
            final = last and options.teardown   # its stack stops at its end: no application outlives it
            if final:
                shared.stop()
            handle = runner.run(f, profile=profile, out=out, set=own, shared=None if final else shared,
                                options=dataclasses.replace(options, teardown=options.teardown and last))
            entry.status, entry.run = "done", str(handle.root)
        except SaeError as e:
            entry.status, entry.error = "failed", str(e)
            # the run directory it kept (a run that got nowhere keeps none and points latest back)
            entry.run = str(latest.resolve()) if latest.exists() and latest.resolve() != before else None
        finally:
            entry.seconds = round(time.time() - t0, 1)
            entry.headline = _headline(entry.run)
            _write(root, entries, label, time.time() - start)


def _new_root(out: Path, label: str) -> Path:
    parent = out / "catalogue"
    root = parent / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
    n = 1
    while root.exists():
        n += 1
        root = parent / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}-{n}"
    root.mkdir(parents=True)
    link = parent / f".latest-{os.getpid()}"
    link.unlink(missing_ok=True)
    link.symlink_to(root.name)
    os.replace(link, parent / "latest")
    return root


def _headline(run: str | None) -> str | None:
    """The first figure of the run's report (in report order), or None."""
    if run is None:
        return None
    rd = RunDir(run)
    try:
        names = figure_names(rd.load_plan())
    except SaeError:
        return None
    for name in names:
        for path in (rd.report / f"{name}.png", rd.report / f"{name}-cpu.png"):
            if path.exists():
                return str(path)
    return None


def _minutes(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s"


PAGE = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sae catalogue ({{ profile }})</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.4em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } img { max-width: 420px; border: 1px solid #eee; }
.failed { color: #a00; } .note { color: #555; font-size: 0.9em; }
</style></head><body>
<h1>sae catalogue ({{ profile }} profile)</h1>
<p class="note">{{ done }} of {{ entries|length }} experiments done, {{ failed }} failed; wall time so far
{{ elapsed }}. Each report holds the run's plan, hosts, per-point statistics and versions.</p>
<table><tr><th>experiment</th><th>what it reproduces</th><th>outcome</th><th>time</th><th>headline figure</th></tr>
{% for e in entries %}<tr>
<td>{% if e.report %}<a href="{{ e.report }}">{{ e.experiment }}</a>{% else %}{{ e.experiment }}{% endif %}<br>
<span class="note">{{ e.file }}</span></td>
<td>{{ e.description }}</td>
<td class="{{ e.status }}">{{ e.status }}{% if e.error %}: {{ e.error }}{% endif %}</td>
<td>{{ e.time }}</td>
<td>{% if e.headline %}<a href="{{ e.report }}"><img src="{{ e.headline }}" alt="{{ e.experiment }}"></a>{% endif %}</td>
</tr>{% endfor %}
</table></body></html>
""", autoescape=True)


def _write(root: Path, entries: list[Entry], profile: str, elapsed: float) -> None:
    """Rewrite ``catalogue.yaml`` and ``index.html`` (links relative to the page)."""
    rd = RunDir(root)
    rd.write_yaml(root / "catalogue.yaml", {"version": 1, "profile": profile, "seconds": round(elapsed, 1),
                                            "experiments": [dataclasses.asdict(e) for e in entries]})

    def rel(path: str | None) -> str | None:
        return os.path.relpath(path, root) if path else None
    rows = [dict(dataclasses.asdict(e), time=_minutes(e.seconds) if e.seconds is not None else "-",
                 report=rel(str(Path(e.run) / "report" / "index.html")) if e.run else None,
                 headline=rel(e.headline)) for e in entries]
    page = PAGE.render(profile=profile, entries=rows, elapsed=_minutes(elapsed),
                       done=sum(e.status == "done" for e in entries), failed=sum(e.status == "failed" for e in entries))
    tmp = root / "index.html.tmp"
    tmp.write_text(page)
    tmp.replace(root / "index.html")
