"""The runner: follows a plan step by step, records every step and repetition in the ledger,
and resumes from it. ``run`` starts a new run directory; ``resume`` continues one."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from metareserve import load_reservation
from metareserve.errors import OperationalError, SaeError, UsageError
from metareserve.log import say
from metareserve.providers.local_requirements import require

from ..planning import capacities, machine
from ..planning import settings as settings_mod
from . import hosts, stages as builtin
from .context import RunOptions, Session, StageInput, StageResult, spark_software
from .plan_checks import check_own_node_names, check_reservation
from .shared_app import SharedApplication
from .console import RunConsole
from ..results.handle import RunHandle
from ..results.run.ledger import RunLedger
from ..planning.loader import load_experiment
from ..planning.planner import Plan, plan as make_plan
from ..results.run import provenance
from ..results.run.directory import RunDir, versions
from ..planning.spec import Experiment, check_every_setting_runs
from ..planning.stages import STAGES

def _setup_keys() -> dict[str, str]:
    """The setup stages and the planned point's key each is done once per."""
    return {s.name: s.key for s in STAGES.values() if s.key}


def _app_stage(stage: str) -> bool:
    """Whether ``stage`` is done once per application group: it changes what a running Spark
    application runs on (daemons, connector, the hosts' cores), so a catalogue's shared
    application started for other points stops before it."""
    return STAGES[stage].scope == "group"


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


OBJECT = "Experiment object"
"""What names an experiment given as a Python object (no file) in messages and spec.yaml."""


def prepare(file, *, profile: str | None, options: RunOptions, settings=None) -> tuple[Experiment, Plan]:
    """Load (``file``: a path, or an :class:`Experiment`), apply the profile and ``settings``
    (:mod:`sae.planning.settings`), validate and plan it, and check a given reservation is big
    enough for every point's layout: every usage error surfaces here, before anything is touched."""
    experiment = file if isinstance(file, Experiment) else load_experiment(file)
    if isinstance(file, Experiment):
        file = OBJECT
    try:
        settings_mod.check_scopes(settings, {experiment.name})
        if file == OBJECT:   # a file is checked as it loads
            check_every_setting_runs(experiment)
        profile = experiment.default_profile(profile)
        experiment = experiment.with_profile(profile)
        experiment = settings_mod.apply(experiment, settings)
        p = make_plan(experiment, profile=profile, teardown=options.teardown)
    except UsageError as e:
        raise UsageError(f"{file}: {e}") from None
    if options.hosts:
        hosts.check(hosts.load(options.hosts), p, options.hosts)
        capacities.check_plan(p.points, "ssh", str(file))
    elif options.reservation:
        res = load_reservation(options.reservation)
        check_reservation(res, p, str(options.reservation))
        capacities.check_plan(p.points, res.provider, str(file))
    else:
        check_own_node_names(p, str(file))
        capacities.check_plan(p.points, options.provider, str(file))
        if options.provider == "local":
            require(machine.check(p.points), f"{Path(str(file)).name} local cluster")
    return experiment, p


def run(file, *, profile: str | None = None, out="results", options: RunOptions | None = None,
        set=None, shared: SharedApplication | None = None) -> RunHandle:
    """Run the experiment in ``file`` (a path, or an :class:`Experiment` object, e.g. one
    changed with ``dataclasses.replace``) into a new run directory under ``out``; returns its
    handle (``.root``: the directory, ``.results``, ``.summary``, ``.figures()``).

    ``profile`` defaults to ``tiny`` when the experiment defines it. ``set``: settings applied
    after the profile (``{"workload.selectivity": 5}`` or ``["workload.selectivity=5"]``,
    :mod:`sae.planning.settings`), validated like the file. ``shared``: the warm application
    the runs of a catalogue share (:mod:`sae.running.shared_app`; None: the run's own).
    The spec and plan are written first, then every step of the plan is executed in order.
    Raises UsageError before touching nodes for a bad file, profile or reservation, and
    OperationalError naming point, stage and host when a step or repetition failed.
    """
    options = options or RunOptions()
    source = file if isinstance(file, Experiment) else Path(file).resolve()
    settings = settings_mod.parse(set)
    experiment, p = prepare(source, profile=profile, options=options, settings=settings)
    profile = p.profile
    made = NewRunDir.make(out, experiment.name, profile)
    rd, ledger = made.run, None
    file = None if isinstance(source, Experiment) else source
    try:
        rd.write_yaml(rd.spec, {"version": 1, "file": str(file) if file else None,
                                "file_sha256": _file_hash(file) if file else None,
                                "experiment_sha256": _experiment_hash(source) if not file else None,
                                "profile": profile, "settings": settings_mod.texts(settings),
                                "options": {**dataclasses.asdict(options), "skip": list(options.skip)},
                                "experiment": _spec_dict(experiment)})
        if file:
            shutil.copyfile(file, rd.root / "experiment.py")
        rd.write_yaml(rd.plan, p.to_dict())
        vers = versions()
        rd.write_yaml(rd.versions, provenance.record(vers, experiment_file="experiment.py" if file else None))
        ledger = RunLedger.create(rd.ledger, p, vers)
        say(None, "sae run", f"run directory {rd.root}")
        _execute(experiment, p, rd, ledger, options, command="run", shared=shared)
    except BaseException as e:
        if ledger is not None and _progressed(ledger):
            raise
        made.take_back()
        if isinstance(e, StepFailed):
            family = UsageError if isinstance(e.cause, UsageError) else OperationalError
            again = f"run 'sae run {file}' again" if file else "run it again"
            raise family(f"{e.where}: {e.cause}; no step finished, so no run directory was kept: fix the cause "
                         f"and {again}") from None
        raise
    return RunHandle.of(rd.root)


@dataclasses.dataclass
class NewRunDir:
    """A run directory ``sae run`` just made, and what it made for it: parent directories that
    did not exist and the ``latest`` link's previous target, so that a run that never got
    anywhere leaves nothing behind (:meth:`take_back`)."""

    run: RunDir
    made_dirs: list[Path]
    latest_before: str | None

    @classmethod
    def make(cls, out, experiment: str, profile: str | None) -> "NewRunDir":
        """``RunDir.new`` under ``out``; UsageError (nothing left) if it cannot be made there."""
        parent = Path(out) / experiment
        missing = [d for d in (parent, *parent.parents) if not os.path.lexists(d)][::-1]
        latest = parent / "latest"
        before = os.readlink(latest) if latest.is_symlink() else None
        try:
            return cls(RunDir.new(out, experiment, profile), missing, before)
        except OSError as e:
            for d in reversed(missing):
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise UsageError(f"--out {out}: cannot make a run directory there ({e.strerror}: {e.filename}); "
                             f"give a directory you can write") from None

    def take_back(self) -> None:
        """Remove the run directory and the parents made for it; point ``latest`` back where it
        pointed (unless another run moved it since)."""
        root = self.run.root
        shutil.rmtree(root, ignore_errors=True)
        latest = root.parent / "latest"
        if latest.is_symlink() and os.readlink(latest) == root.name:
            if self.latest_before is None:
                latest.unlink()
            else:
                tmp = root.parent / f".latest-{os.getpid()}"
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(self.latest_before)
                os.replace(tmp, latest)
        for d in reversed(self.made_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()   # only while empty: another run may have put something there since


class StepFailed(OperationalError):
    """A step of the plan failed: ``where`` (point, stage) and its ``cause`` (an error or its
    text); the message says how to continue the run in ``root``."""

    def __init__(self, where: str, cause, root: Path):
        self.where, self.cause = where, cause
        super().__init__(f"{where}: {cause}; fix the cause and run 'sae resume {root}'")


def _progressed(ledger: RunLedger) -> bool:
    """Whether the run holds something ``sae resume`` would build on: a step that finished or a
    repetition that ran."""
    return (any(s["outcome"] == "done" for s in ledger.steps)
            or any(e["state"] != "todo" for e in ledger.entries.values()))


def resume(path, *, experiment: Experiment | None = None, allow_changes: bool = False) -> RunHandle:
    """Continue the run in ``path``: done repetitions are skipped, failed or interrupted ones
    rerun, setup stages re-checked (they report no changes where nothing is missing); returns
    the run's handle. A run started from an :class:`Experiment` object resumes from Python with
    the same object (``experiment``); settings given at the start are applied again. When sae's
    commit or dirty flag, a controller package or (once the stack is started) a node's software
    differs from the run's ``versions.lock``, it refuses naming what changed, unless
    ``allow_changes`` (the changes are then recorded there)."""
    rd = RunDir.find(path)
    spec = rd.read_yaml(rd.spec)
    keys = ("file", "file_sha256", "options", "profile")
    if not isinstance(spec, dict) or any(k not in spec for k in keys) or not isinstance(spec["options"], dict):
        raise UsageError(f"{rd.spec}: not the spec sae wrote (needs {', '.join(keys)}); start a new run")
    if spec["file"] is None:   # started from an Experiment object
        if experiment is None:
            raise UsageError(f"{rd.root}: run {rd.root.name} was started from an Experiment object, not a file; "
                             f"resume it from Python: sae.resume({str(rd.root)!r}, experiment=<the same Experiment>)")
        if _experiment_hash(experiment) != spec.get("experiment_sha256"):
            raise UsageError(f"{rd.root}: the Experiment given differs from the one run {rd.root.name} started "
                             f"with; pass the same one or start a new run")
        source = experiment
    else:
        source = Path(spec["file"])
        if not source.exists() or _file_hash(source) != spec["file_sha256"]:
            raise UsageError(f"{source}: the experiment file changed or vanished since run {rd.root.name} "
                             f"started; start a new run with 'sae run'")
    try:
        options = RunOptions(**spec["options"])
    except TypeError as e:
        raise UsageError(f"{rd.spec}: options not sae's ({e}); start a new run") from None
    experiment, p = prepare(source, profile=spec["profile"], options=options,
                            settings=settings_mod.parse(spec.get("settings") or []))
    if yaml.safe_load(yaml.safe_dump(p.to_dict())) != rd.read_yaml(rd.plan):   # as stored: tuples are lists
        raise UsageError(f"{rd.plan}: the plan differs from the recorded one; start a new run")
    ledger = RunLedger.load(rd.ledger)
    if not _unfinished(p, ledger):
        from metareserve.errors import NothingToDo
        raise NothingToDo(f"{rd.root}: every repetition is done; nothing to resume")
    _check_changes(rd, {"sae": provenance.sae_state(), "controller": versions()}, allow_changes)
    _execute(experiment, p, rd, ledger, options, command="resume", allow_changes=allow_changes)
    return RunHandle.of(rd.root)


def _check_changes(rd: RunDir, now: dict, allow_changes: bool) -> None:
    """Compare ``now`` with the run's recorded provenance: UsageError naming what changed, or
    (``allow_changes``) the changes recorded in versions.lock."""
    recorded = rd.read_yaml(rd.versions) or {}
    changes = provenance.compare(recorded, now)
    if not changes:
        return
    if not allow_changes:
        raise UsageError(f"{rd.root}: changed since the run started: {'; '.join(changes)}; a resumed run would mix "
                         f"them: start a new run, or 'sae resume --allow-changes' (recorded in versions.lock)")
    recorded.setdefault("changes", []).append({"time": time.time(), "changes": changes})
    rd.write_yaml(rd.versions, recorded)
    say(None, "sae resume", f"allowed changes: {'; '.join(changes)}")


def _record_nodes(state: StageInput, allow_changes: bool) -> None:
    """Gather every node's software and platform through the deployers (after a start step),
    compare them with what the run recorded and add them to versions.lock; never fails the run
    for a node it cannot read. What Spark's nodes run (Spark, its Python env's pyarrow, Python,
    Java) is kept per Spark version (``spark``), so a run that sweeps versions compares each
    with itself."""
    from metareserve import node_agent
    nodes: dict[str, dict] = {}
    stack, run = state.stack, state.session.run
    try:
        with ThreadPoolExecutor(3) as pool:   # three questions to the nodes, each a round trip of ~0.6 s
            ceph = pool.submit(stack.ceph.versions)
            spark_versions = pool.submit(stack.spark.versions)
            platform = pool.submit(state.hosts.cluster.call, node_agent, "platform_facts",
                                   nodes=[n.name for n in state.hosts.reservation.nodes], stage="sae provenance",
                                   check=False)
            found_ceph, spark, facts = ceph.result(), spark_versions.result(), platform.result()
        for node, found in found_ceph.items():
            nodes.setdefault(node, {}).update(found)
        for node, found in facts.items():
            nodes.setdefault(node, {}).update({"platform": f"unavailable: {found}"} if isinstance(found, BaseException)
                                              else found)
    except Exception as e:   # provenance never stops a run
        say(None, "sae provenance", f"node versions unavailable: {e}")
        return
    _add_provenance(run, "nodes", nodes, allow_changes)
    _add_provenance(run, "spark", {spark_software(stack.spark.options): spark}, allow_changes)


def _record_builds(state: StageInput, allow_changes: bool) -> None:
    """Record what the build stage built (the object class's key per Arrow release, ``object_class
    (Arrow 26.0.1)``, and the connector jar per Spark version, ``connector (Spark 4.3.0)``) in
    versions.lock, after comparing it with what the run recorded before."""
    stack = state.stack
    build = stack.build
    builds = {f"connector (Spark {stack.build_spark})": Path(build.jars[0]).name if build.jars else None,
              **({f"object_class (Arrow {stack.build_arrow})": build.class_build} if build.class_build else {})}
    _add_provenance(state.session.run, "builds", builds, allow_changes)


def _add_provenance(run: RunDir, section: str, found: dict, allow_changes: bool) -> None:
    """Compare ``found`` with the run's recorded ``section`` of versions.lock (:func:`_check_changes`),
    then merge it in."""
    _check_changes(run, {section: found}, allow_changes)
    recorded = run.read_yaml(run.versions) or {}
    recorded[section] = {**(recorded.get(section) or {}), **found}
    run.write_yaml(run.versions, recorded)


def _experiment_hash(experiment: Experiment) -> str:
    """A digest of an Experiment object as recorded (what resuming one compares)."""
    d = _spec_dict(experiment)
    d["sweep"].pop("where")   # a function's repr holds its address
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _spec_dict(experiment: Experiment) -> dict:
    d = {}
    for f in dataclasses.fields(experiment):
        v = getattr(experiment, f.name)
        if f.name == "stages":
            v = {k: f"{fn.__module__}.{fn.__qualname__}" for k, fn in v.items()}
        elif f.name == "profiles":
            v = sorted(v)
        elif f.name == "sweep":
            v = {"cartesian": v.cartesian, "zipped": v.zipped, "where": repr(v.where) if v.where else None,
                 **({"repetitions": v.repetitions} if v.repetitions else {})}
        elif dataclasses.is_dataclass(v):
            v = dataclasses.asdict(v)
        elif f.name == "drift" and not v:
            continue   # as recorded before the drift check existed
        d[f.name] = v
    return d


def _unfinished(p: Plan, ledger: RunLedger) -> list[str]:
    """Point ids whose run is not finished: repetitions pending, or its run step never recorded
    done (a runner killed between the last repetition and the window export)."""
    executed = set(ledger.executed)
    return [pid for pid in p.order if ledger.pending(pid) or pid not in executed]


def _active_steps(p: Plan, unfinished: list[str]) -> list[tuple[int, object]]:
    """(index, step) of the plan's steps this session executes: run steps of unfinished points,
    setup steps those points need, run-wide steps."""
    points = [p.point(pid) for pid in unfinished]
    setup = _setup_keys()
    keys = {getattr(pt, k) for pt in points for k in set(setup.values())}
    out = []
    for index, step in enumerate(p.steps):
        point = p.point(step.point) if step.point else None
        if step.stage == "run" and step.point not in unfinished:
            continue
        if step.stage in setup and getattr(point, setup[step.stage]) not in keys:
            continue
        out.append((index, step))
    return out


def _groups(experiment: Experiment, p: Plan, steps: list, options: RunOptions) -> list[list]:
    """The active steps cut into groups: consecutive run steps of points that share Spark
    options form one group (one warm application) unless ``options.warm`` is off or the
    experiment replaces the run stage; every other step is a group of its own."""
    groups: list[list] = []
    for index, step in steps:
        last = groups[-1][-1][1] if groups else None
        if (options.warm and "run" not in experiment.stages and step.stage == "run" and last is not None
                and last.stage == "run" and p.point(last.point).start_key == p.point(step.point).start_key):
            groups[-1].append((index, step))
        else:
            groups.append([(index, step)])
    return groups


def _execute(experiment: Experiment, p: Plan, rd: RunDir, ledger: RunLedger, options: RunOptions,
             *, command: str, allow_changes: bool = False, shared: SharedApplication | None = None) -> None:
    ledger.begin_session(command)
    unfinished = _unfinished(p, ledger)
    console = RunConsole(p, ledger, unfinished)
    # what the steps gave so far (hosts, stack), held here alone between steps
    state = StageInput(Session(experiment=experiment, plan=p, run=rd, ledger=ledger, options=options,
                               console=console, shared=shared if options.warm else None))
    reports = rd.read_yaml(rd.stages) or []

    def record(index: int, stage: str, point: str | None, start: float, outcome: str, report=None,
               error: str | None = None, end: float | None = None) -> None:
        end = time.time() if end is None else end
        ledger.step(index, stage, point, start=start, end=end, outcome=outcome, error=error,
                    changed={n: o.changed for n, o in report.nodes.items()} if report else {})
        if outcome != "skipped":
            reports.append({"session": ledger.sessions, "step": index, "stage": stage, "point": point,
                            "nodes": {n: {"changed": o.changed, "message": o.message}
                                      for n, o in (report.nodes.items() if report else [])}})
            rd.write_yaml(rd.stages, reports)

    try:
        with console.session():
            for group in _groups(experiment, p, _active_steps(p, unfinished), options):
                index, step = group[0]
                point = p.point(step.point) if step.point else None
                if step.stage in options.skip:
                    record(index, step.stage, step.point, time.time(), "skipped")
                elif step.stage == "run" and "run" not in experiment.stages:
                    state = _run_group(state, group, record)
                else:
                    if state.session.shared is not None and point is not None and _app_stage(step.stage):
                        state.session.shared.stop_unless_for(point.app_key)
                    state = _step(state, index, step.stage, point, record)
                    if step.stage == "start" and state.stack is not None:
                        _record_nodes(state, allow_changes)
                    if step.stage in ("build", "start") and state.stack is not None and state.stack.build is not None:
                        _record_builds(state, allow_changes)   # a start that switched Spark or Arrow built again
    finally:
        state.close()
    failed = ledger.failures()
    if failed:
        first = failed[0]
        raise OperationalError(f"{len(failed)} of {len(ledger.entries)} repetitions failed "
                               f"(first: point {first['point']} repetition {first['repetition']}: "
                               f"{first['error']}); fix the cause and run 'sae resume {rd.root}'")
    say(None, "sae run", f"done: {rd.root} ({ledger.counts()['done']} repetitions)")


def _run_group(state: StageInput, group: list, record) -> StageInput:
    """Run steps of points sharing Spark options, in one warm application; each point's step is
    recorded as the point finishes (its repetitions were recorded as they arrived). Returns
    ``state`` with the stack they ran on (unchanged where the application could not start)."""
    session, stage = state.session, STAGES["run"]
    index_of = {step.point: index for index, step in group}
    points = [session.plan.point(step.point) for _, step in group]
    first, last = group[0][0], group[-1][0]
    session.console.step_started(first, "run", f"{len(points)} points in one Spark application"
                                 if len(points) > 1 else f"point {points[0].id}")
    finished = set()

    def on_point(outcome) -> None:
        pid = outcome.point.id
        finished.add(pid)
        record(index_of[pid], "run", pid, outcome.start, "failed" if outcome.error else "done",
               outcome.report, outcome.error, end=outcome.end)
        session.console.point_done(index_of[pid], outcome)

    start = time.time()
    try:
        return state.fold(stage, StageResult(stack=builtin.run_group(state.for_step(stage, points[0]), points,
                                                                     on_point)))
    except Exception as e:
        error = str(e) if isinstance(e, SaeError) else f"{type(e).__name__}: {e}"
        for point in points:
            if point.id not in finished:
                left = [x["repetition"] for x in session.ledger.of_point(point.id).values()
                        if x["state"] in ("running", "todo")]
                session.ledger.mark(point.id, left, "failed", error=error)
                record(index_of[point.id], "run", point.id, start, "failed", error=error)
        if not isinstance(e, SaeError):
            raise StepFailed(f"steps {first + 1}-{last + 1} stage run", error, session.run.root) from e
        return state


def _step(state: StageInput, index: int, stage: str, point, record) -> StageInput:
    """Run one stage step (the experiment's own function if it replaces the stage) on what its
    entry takes of ``state``, recording it in the ledger in a finally block; returns ``state``
    with what the step gave. Setup failures stop the run; run failures are recorded per
    repetition and the next point goes on."""
    session, entry = state.session, STAGES[stage]
    fn = session.experiment.stages.get(stage) or entry.builtin()
    where = f"point {point.id}" if point else "run"
    session.console.step_started(index, stage, where)
    start, outcome, error, report = time.time(), "failed", None, None
    try:
        result = fn(state.for_step(entry, point))
        state = state.fold(entry, result)
        report, outcome = result.report, "done"
        return state
    except SaeError as e:
        error = str(e)
        if stage == "run":
            running = [e["repetition"] for e in session.ledger.of_point(point.id).values()
                       if e["state"] == "running"]
            session.ledger.mark(point.id, running, "failed", error=error)
            return state
        raise StepFailed(f"{where} stage {stage}", e, session.run.root) from None
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
        raise StepFailed(f"{where} stage {stage}", error, session.run.root) from e
    finally:
        record(index, stage, point.id if point else None, start, outcome, report, error)
        session.console.step_done(index, stage, where, time.time() - start, outcome, report, error)


def status(path) -> dict:
    """Summary of a run directory: counts per state, per-point progress, failures, steps."""
    rd = RunDir.find(path)
    ledger = RunLedger.load(rd.ledger)
    p = rd.load_plan()
    points = [{"point": pt.id, "axes": pt.axes, "states": [e["state"] for e in ledger.of_point(pt.id).values()]}
              for pt in p.points]
    reservation, holder = rd.lease_holder() or (None, None)
    return {"run": str(rd.root), "experiment": p.experiment, "profile": p.profile,
            "lease": (f"{'holds' if not holder.is_gone() else 'held'} the lease of {reservation!r} "
                      f"(pid {holder.pid} on {holder.host})") if holder else "no lease taken yet",
            "counts": ledger.counts(), "points": points,
            "failures": [f"point {e['point']} repetition {e['repetition']}: {e['error']}"
                         for e in ledger.failures()],
            "sessions": ledger.sessions, "steps": len(ledger.steps)}


def status_text(info: dict) -> str:
    """``sae status`` output."""
    c = info["counts"]
    lines = [f"{info['run']}", f"experiment {info['experiment']} profile {info['profile']}: "
             f"{c['done']} done, {c['failed']} failed, {c['running']} running, {c['todo']} todo "
             f"({info['sessions']} sessions, {info['steps']} steps)", info["lease"]]
    for pt in info["points"]:
        axes = " ".join(f"{k}={v}" for k, v in pt["axes"].items())
        lines.append(f"  {pt['point']}  {' '.join(s[0].upper() for s in pt['states'])}  {axes}")
    lines += [f"  failed: {f}" for f in info["failures"]]
    return "\n".join(lines)
