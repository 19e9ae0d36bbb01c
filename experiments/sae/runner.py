"""The runner: follows a plan step by step, records every step and repetition in the ledger,
and resumes from it. ``run`` starts a new run directory; ``resume`` continues one."""
from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

import yaml

from metareserve import StageReport, load_reservation
from metareserve.errors import OperationalError, SaeError, UsageError
from metareserve.log import node_log

from . import stages as builtin
from .ledger import RunLedger
from .loader import load_experiment
from .planner import Plan, plan as make_plan
from .results import RunDir, versions
from .spec import STAGES, Experiment

SETUP_KEYS = {"install": "stack_key", "start": "spark_key", "build": "stack_key",
              "generate": "data_key", "deploy": "data_key"}


@dataclasses.dataclass
class RunOptions:
    """How to run: provider (when sae reserves), an existing reservation file, teardown at end,
    stages to skip (e.g. ``install`` on nodes known to be ready)."""

    provider: str = "local"
    reservation: str | None = None
    teardown: bool = False
    skip: tuple = ()

    def __post_init__(self):
        self.skip = tuple(self.skip)
        for stage in self.skip:
            if stage not in STAGES or stage in ("reserve", "run"):
                raise UsageError(f"--skip {stage}: not a skippable stage (skippable: "
                                 f"{', '.join(s for s in STAGES if s not in ('reserve', 'run'))})")


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def prepare(file, *, profile: str | None, options: RunOptions) -> tuple[Experiment, Plan]:
    """Load, validate and plan an experiment file, and check a given reservation is big enough
    for every point's layout: every usage error surfaces here, before anything is touched."""
    experiment = load_experiment(file)
    try:
        profile = experiment.default_profile(profile)
        experiment = experiment.with_profile(profile)
        p = make_plan(experiment, profile=profile, teardown=options.teardown)
    except UsageError as e:
        raise UsageError(f"{file}: {e}") from None
    if options.reservation:
        builtin.check_reservation(load_reservation(options.reservation), p, str(options.reservation))
    return experiment, p


def run(file, *, profile: str | None = None, out="results", options: RunOptions | None = None) -> RunDir:
    """Run the experiment in ``file`` into a new run directory under ``out``; returns it.

    ``profile`` defaults to ``tiny`` when the experiment defines it.
    The spec and plan are written first, then every step of the plan is executed in order.
    Raises UsageError before touching nodes for a bad file, profile or reservation, and
    OperationalError naming point, stage and host when a step or repetition failed.
    """
    options = options or RunOptions()
    file = Path(file).resolve()
    experiment, p = prepare(file, profile=profile, options=options)
    profile = p.profile
    rd = RunDir.new(out, experiment.name, profile)
    rd.write_yaml(rd.spec, {"version": 1, "file": str(file), "file_sha256": _file_hash(file),
                            "profile": profile,
                            "options": {**dataclasses.asdict(options), "skip": list(options.skip)},
                            "experiment": _spec_dict(experiment)})
    rd.write_yaml(rd.plan, p.to_dict())
    vers = versions()
    rd.write_yaml(rd.versions, {"version": 1, "controller": vers})
    ledger = RunLedger.create(rd.ledger, p, vers)
    node_log(None, "sae run", f"run directory {rd.root}")
    _execute(experiment, p, rd, ledger, options, command="run")
    return rd


def resume(path) -> RunDir:
    """Continue the run in ``path``: done repetitions are skipped, failed or interrupted ones
    rerun, setup stages re-checked (they report no changes where nothing is missing)."""
    rd = RunDir.find(path)
    spec = rd.read_yaml(rd.spec)
    file = Path(spec["file"])
    if not file.exists() or _file_hash(file) != spec["file_sha256"]:
        raise UsageError(f"{file}: the experiment file changed or vanished since run {rd.root.name} "
                         f"started; start a new run with 'sae run'")
    options = RunOptions(**spec["options"])
    experiment, p = prepare(file, profile=spec["profile"], options=options)
    if yaml.safe_load(yaml.safe_dump(p.to_dict())) != rd.read_yaml(rd.plan):   # as stored: tuples are lists
        raise UsageError(f"{rd.plan}: the plan differs from the recorded one; start a new run")
    ledger = RunLedger.load(rd.ledger)
    if not any(ledger.pending(pid) for pid in p.order):
        from metareserve.errors import NothingToDo
        raise NothingToDo(f"{rd.root}: every repetition is done; nothing to resume")
    _execute(experiment, p, rd, ledger, options, command="resume")
    return rd


def _spec_dict(experiment: Experiment) -> dict:
    d = {}
    for f in dataclasses.fields(experiment):
        v = getattr(experiment, f.name)
        if f.name == "stages":
            v = {k: f"{fn.__module__}.{fn.__qualname__}" for k, fn in v.items()}
        elif f.name == "profiles":
            v = sorted(v)
        elif f.name == "sweep":
            v = {"cartesian": v.cartesian, "zipped": v.zipped, "where": repr(v.where) if v.where else None}
        elif dataclasses.is_dataclass(v):
            v = dataclasses.asdict(v)
        d[f.name] = v
    return d


def _needed(p: Plan, ledger: RunLedger) -> tuple[set[str], set[str]]:
    """Point ids still pending, and the setup keys those points need."""
    pending = {pid for pid in p.order if ledger.pending(pid)}
    keys = {getattr(p.point(pid), k) for pid in pending for k in ("stack_key", "spark_key", "data_key")}
    return pending, keys


def _execute(experiment: Experiment, p: Plan, rd: RunDir, ledger: RunLedger, options: RunOptions,
             *, command: str) -> None:
    ledger.begin_session(command)
    pending, keys = _needed(p, ledger)
    ctx = builtin.StageContext(experiment=experiment, plan=p, run=rd, ledger=ledger, options=options)
    reports = rd.read_yaml(rd.stages) or []
    try:
        for index, step in enumerate(p.steps):
            point = p.point(step.point) if step.point else None
            if step.stage == "run" and step.point not in pending:
                continue
            if step.stage in SETUP_KEYS and getattr(point, SETUP_KEYS[step.stage]) not in keys:
                continue
            ctx.point = point
            if step.stage in options.skip:
                now = time.time()
                ledger.step(index, step.stage, step.point, start=now, end=now, outcome="skipped")
                continue
            report = _step(ctx, index, step.stage, point)
            reports.append({"session": len(ledger.data["runs"]), "step": index, "stage": step.stage,
                            "point": step.point,
                            "nodes": {n: {"changed": o.changed, "message": o.message}
                                      for n, o in (report.nodes.items() if report else [])}})
            rd.write_yaml(rd.stages, reports)
    finally:
        ctx.close()
    failed = ledger.failures()
    if failed:
        first = failed[0]
        raise OperationalError(f"{len(failed)} of {len(ledger.entries)} repetitions failed "
                               f"(first: point {first['point']} repetition {first['repetition']}: "
                               f"{first['error']}); fix the cause and run 'sae resume {rd.root}'")
    node_log(None, "sae run", f"done: {rd.root} ({ledger.counts()['done']} repetitions)")


def _step(ctx, index: int, stage: str, point) -> StageReport | None:
    """Run one stage step (the experiment's own function if it replaces the stage), recording
    it in the ledger in a finally block. Setup failures stop the run; run failures are
    recorded per repetition and the next point goes on."""
    fn = ctx.experiment.stages.get(stage) or getattr(builtin, f"stage_{stage}")
    where = f"point {point.id}" if point else "run"
    node_log(None, f"sae {stage}", f"step {index + 1}/{len(ctx.plan.steps)} ({where})")
    start, outcome, error, report = time.time(), "failed", None, None
    try:
        report = fn(ctx)
        outcome = "done"
        return report
    except SaeError as e:
        error = str(e)
        if stage == "run":
            running = [e["repetition"] for e in ctx.ledger.of_point(point.id).values()
                       if e["state"] == "running"]
            ctx.ledger.mark(point.id, running, "failed", error=error)
            return None
        raise OperationalError(f"{where} stage {stage}: {error}; fix the cause and run "
                               f"'sae resume {ctx.run.root}'") from None
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
        raise OperationalError(f"{where} stage {stage}: {error}; fix the cause and run "
                               f"'sae resume {ctx.run.root}'") from e
    finally:
        changed = {n: o.changed for n, o in report.nodes.items()} if report else {}
        ctx.ledger.step(index, stage, point.id if point else None, start=start, end=time.time(),
                        outcome=outcome, changed=changed, error=error)


def status(path) -> dict:
    """Summary of a run directory: counts per state, per-point progress, failures, steps."""
    rd = RunDir.find(path)
    ledger = RunLedger.load(rd.ledger)
    p = rd.read_yaml(rd.plan)
    points = []
    for pid in p["order"]:
        entries = ledger.of_point(pid).values()
        axes = next(x["axes"] for x in p["points"] if x["id"] == pid)
        points.append({"point": pid, "axes": axes,
                       "states": [e["state"] for e in entries]})
    return {"run": str(rd.root), "experiment": p["experiment"], "profile": p["profile"],
            "counts": ledger.counts(), "points": points,
            "failures": [f"point {e['point']} repetition {e['repetition']}: {e['error']}"
                         for e in ledger.failures()],
            "sessions": len(ledger.data["runs"]), "steps": len(ledger.data["steps"])}


def status_text(info: dict) -> str:
    """``sae status`` output."""
    c = info["counts"]
    lines = [f"{info['run']}", f"experiment {info['experiment']} profile {info['profile']}: "
             f"{c['done']} done, {c['failed']} failed, {c['running']} running, {c['todo']} todo "
             f"({info['sessions']} sessions, {info['steps']} steps)"]
    for pt in info["points"]:
        axes = " ".join(f"{k}={v}" for k, v in pt["axes"].items())
        lines.append(f"  {pt['point']}  {' '.join(s[0].upper() for s in pt['states'])}  {axes}")
    lines += [f"  failed: {f}" for f in info["failures"]]
    return "\n".join(lines)
