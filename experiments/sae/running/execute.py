"""The ``run`` stage: the pending repetitions of a group of points that share a stack and Spark
options, inside one warm Spark application (:mod:`sae.app.run_points`).

The application runs the queries in the order :func:`interleave` gives (the repetitions of
points that differ only by how they are read round-robin over the readers) and prints one
``sae-rep`` JSON line per event. The lines reach :class:`Recorder` through
``SparkCluster.submit(on_line=...)`` (no logging configuration involved) and are recorded as they
arrive: a point's repetitions
become running when the application reaches it, each repetition done when its line arrives; a
separate thread publishes monitor_deploy's run marker. Spark's own output goes to the run's
``logs/`` (streamed at DEBUG, i.e. ``-v``). When the application has ended, its raw file is
fetched and replayed (a line lost on the way still counts), then each point's Prometheus
windows are exported (after the queries, so the export's CPU never competes with them; no
per-window plots) and the point is handed back to the runner (``on_point``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import queue
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Callable

from metareserve import Cluster, StageReport
from metareserve.errors import SaeError
from metareserve.log import node_log, say
from data_deploy.formats import SUFFIXES
from spark_deploy import merged_conf

from ..app import APP, APP_MODULES, BACKEND_SCAN, EVENT_TAG as TAG
from ..connector.protocol import Request
from ..planning import queries, writers
from ..planning.planner import digest
from ..planning.spec import CONNECTOR_OPTIONS, READ_OPTIONS
from .reader import app_config
from .writer import submit_parts
from .context import Session, Stack, StageInput, dataset_dirs, dataset_path
from .shared_app import stop_applications, stop_leftovers
from .storage_watch import StorageWatch, down_message
from .tenant_load import CpuTenant, ScanTenant, Tenant
from ..results.drawing.report import reads_event_log
from ..results.run.storage_work import OpsRecorder, json_lines

STAGE = "sae run"
SETTLE_MIN = 0.25
"""The shortest pause between queries when it waits for Prometheus (:func:`settle_config`): the
controller's snapshot of the OSDs' counters after a query takes milliseconds (seen: 20 ms)."""
RESULT_KEYS = ("init_s", "compute_s", "total_s", "rows", "checksum", "answer", "scan", "app_job",
               "index_bytes", "cached_bytes", "cached_rows", "index_partitions", "index_build_s", "appended_rows",
               "append_s", "executors", "executor_lost", "input_rows", "input_checksum", "output_bytes",
               "output_files", "verify_s")
"""What a repetition's result records (``scan``: sae-ceph readers only; ``answer``: SQL queries;
``app_job``: its job's place in the Spark application, > 0 where earlier runs' jobs warmed it;
the rest: what a reader keeps in memory, a series' appends and a lost executor, and a write
job's input and output, where they apply: docs/results.md)."""


@dataclasses.dataclass
class PointOutcome:
    """What happened to one point of a group: ``start``/``end`` epoch, the stage report, the
    error (None when every repetition is done)."""

    point: object
    start: float
    end: float
    report: StageReport
    error: str | None = None


def threshold(point) -> float | None:
    """The ``column < t`` threshold that keeps the point's selectivity of rows (None: its query
    has no selectivity filter)."""
    import data_deploy
    w = point.spec.workload
    if not w.question.selective:
        return None
    source, _ = dataset_dirs(point)
    return data_deploy.selectivity_threshold(source, w.selectivity / 100, column=w.column)


def scan_request(point) -> Request:
    """The scan request of a point's workload (what the connector sends with offloading on)."""
    w = point.spec.workload
    return Request(columns=list(w.columns), filter={"cmp": "<", "column": w.column, "value": threshold(point)},
                   codec=w.compression, batch_rows=w.batch_size or 0)


def scan_client_config(stack: Stack, point, request: Request, *, conf: str, in_flight: int, reps) -> dict:
    """The configuration of ``app/backend_scan.py`` for a point's objects: ``request`` to every
    object, ``in_flight`` calls at once, as the connector's cephx user, for ``reps`` (None: over
    and over, as a second application)."""
    return {"ceph_conf": conf, "ceph_user": stack.ceph.users.scan.id, "path": dataset_path(point),
            "request": request.encode().hex(), "reply_limit": 4 * point.spec.data.object_size + (1 << 20),
            "in_flight": in_flight, "reps": reps}


def point_config(session: Session, stack: Stack, point, *, first_of_reader: bool = False) -> dict:
    """One point's part of the application's configuration (query and reader parameters).

    Unrecorded warm-up queries run first (``prewarm``) where the point's own warm-ups cannot
    absorb the JVM's warm-up: its warm-ups are done already (a resume), or it is the first point
    of its reader in the application, an earlier run's jobs in a shared one included (measured:
    that reader's second query was still up to 2.5x slower than its third)."""
    pending = session.ledger.pending(point.id)
    w = point.spec.workload
    warmup = session.experiment.warmup
    limit = threshold(point)
    return {"point": point.id, "reps": pending,
            "prewarm": warmup if min(pending) >= warmup or first_of_reader else 0,
            "column": w.column, "threshold": limit, "columns": list(w.columns),
            "query": w.query, "sql": w.question.statement(w.column, limit),
            "float_digits": queries.FLOAT_DIGITS, "answer_rows": queries.MAX_ANSWER_ROWS,
            **keyed_config(point), **app_config(point, stack), **write_config(session, stack, point)}


def write_config(session: Session, stack: Stack, point) -> dict:
    """What the application's writes.py needs of a write job (its docstring): the writer's
    output, the job, teragen's rows and tasks, the run (outputs are written under it) and the
    query job's statement; empty for a point that reads."""
    w = point.spec.workload
    if w.writer is None:
        return {}
    written = writers.job(w.write).query
    return {"write": stack.writes[w.writer].output.app_config(point.spec.data.object_size), "job": w.write,
            "rows": w.write_rows, "tasks": w.write_tasks, "run_id": session.run.root.name,
            **({"sql": queries.QUERIES[written].statement(w.column, None)} if written else {})}


def keyed_config(point) -> dict:
    """What the application's keyed.py needs of a point (run_points.py's docstring): the dataset
    every reader reads, the key, the key views its statement reads (``keys``, ``probe``: the
    workload fields of the same names), how its answer is checked and the index answers it, its
    appends, the repetition it loses an executor before (its last where it has fewer), and the
    comparison it belongs to."""
    w = point.spec.workload
    q = w.question
    lose = None if w.lose_executor is None else min(w.lose_executor, point.repetitions - 1)
    return {"dataset": dataset_path(point), "key": queries.KEY, "summed": q.summed, "index": q.index,
            **{view: getattr(w, view) for view in q.views}, "append_rows": w.append_rows,
            "append_every": w.append_every, "lose_executor": lose, "comparison": comparison_key(point)}


READER_FIELDS = ("reader", *(name for name in READ_OPTIONS if CONNECTOR_OPTIONS[name].needs))
"""The workload fields that say which reader reads a point: the reader, and the options only some
modes take (``pushback``: the auto reader's choice, forced or not, makes variants of it); each is
pre-warmed once per application."""


def reader_of(point) -> tuple:
    """Which reader (and variant of it) reads ``point``: its :data:`READER_FIELDS`."""
    return tuple(getattr(point.spec.workload, f) for f in READER_FIELDS)


def comparison_key(point) -> str:
    """What a point is compared on: its parameters but how it is read (points that differ only by
    reader or by the reader's options, :data:`~sae.planning.spec.READ_OPTIONS`, share it and take
    turns)."""
    params = point.spec.params()
    drift = {"drift": True} if getattr(point, "drift_of", None) else {}   # the drift check: on its own, last
    how = {*READER_FIELDS, *READ_OPTIONS}
    workload = {k: v for k, v in params["workload"].items() if k not in how}
    return digest({**params, "workload": workload, **drift})


def interleave(configs: list[dict], keys: list[str], warmup: int) -> list[list]:
    """The order an application runs its queries in, as ``[point, kind, repetition]``
    (``kind``: ``prewarm`` or ``rep``), from the points' configurations (:func:`point_config`,
    in plan order) and their :func:`comparison_key`.

    Points that differ only by how they are read (reader, and the reader's options) are run
    together, in the order their key first appears:
    first every point's unrecorded pre-warm queries, then the warm-up repetitions (index below
    ``warmup``), then the measured ones, each round-robin over the readers (repetition 0 of each
    reader, then repetition 1 of each, ...), so that a machine that slows down during the run
    slows every reader of a comparison alike. Each round starts one reader further on (round ``i``
    of a phase with its ``i``-th reader), so no reader always runs first or always after the same
    other. Each pending repetition appears exactly once."""
    groups: dict[str, list[dict]] = {}
    for cfg, key in zip(configs, keys):
        groups.setdefault(key, []).append(cfg)
    order = []
    for group in groups.values():
        order += [[c["point"], "prewarm", i] for c in group for i in range(c.get("prewarm", 0))]
        for phase in (lambda r: r < warmup, lambda r: r >= warmup):
            lanes = [(c["point"], [r for r in c["reps"] if phase(r)]) for c in group]
            for i in range(max((len(lane) for _, lane in lanes), default=0)):
                turn = i % len(lanes)
                order += [[pid, "rep", lane[i]] for pid, lane in lanes[turn:] + lanes[:turn] if i < len(lane)]
    return order


def run_points(given: StageInput, points: list, on_point: Callable[[PointOutcome], None]) -> None:
    """Run every pending repetition of ``points`` (same stack and Spark options, in order) on the
    stack ``given``, calling ``on_point`` once per point as it finishes (done or failed).

    Points whose repetitions are all done already (a runner killed before it exported their
    windows) only get their windows exported. If the application dies, the points it never
    reached run in a new application; a point it was running fails (``sae resume`` retries it).
    """
    session, stack, ledger = given.session, given.stack, given.session.ledger
    todo = []
    for point in points:
        if ledger.pending(point.id):
            todo.append(point)
        else:
            now = time.time()
            ledger.record_aucs(point.id, export_windows(session, stack.monitoring,
                                                        [(point, _timings(session, point, None))])[0])
            _hand_back(on_point, stack, point, now, time.time(), False, "repetitions were done; windows exported")
    if todo and any(e["attempts"] for p in todo for e in ledger.of_point(p.id).values()):
        _kill_orphans(given)
    while todo:
        reached, error = _application(given, todo, on_point)
        if not reached:
            error = error or f"[{stack.spark.driver_node} spark-submit] the application reached no point"
            for point in todo:
                ledger.mark(point.id, ledger.pending(point.id), "failed", error=error)
                _hand_back(on_point, stack, point, time.time(), time.time(), False, "not run", error)
            return
        todo = [p for p in todo if p.id not in reached]


def _hand_back(on_point, stack: Stack, point, start: float, end: float, changed: bool, message: str,
               error: str | None = None) -> None:
    report = StageReport("run")
    report.add(stack.spark.driver_node, changed, f"point {point.id}: {message}", log=False)
    on_point(PointOutcome(point, start, end, report, error))


def _remote_dir(given: StageInput) -> str:
    return f"{given.hosts.reservation.node_dir(given.stack.spark.driver_node, 'sae')}/{given.session.run.root.name}"


def _kill_orphans(given: StageInput) -> None:
    """Stop applications of this run that a killed runner left behind (their raw files name them)."""
    driver = given.stack.spark.driver_node
    killed = stop_applications(given.hosts.cluster, driver, f"{_remote_dir(given)}/", f"{STAGE} orphans")
    if killed:
        say(driver, f"{STAGE} orphans", f"stopped application processes {killed} of an earlier attempt")


def settle_config(stack: Stack) -> dict:
    """How the application ends a pause between queries (sae/app/run_points.py, ``settle``): with
    monitoring, once Prometheus holds every host's counters read after the pause began
    (``Monitoring.read_by``), at least :data:`SETTLE_MIN` and at most ``pause`` seconds; without
    it (nothing to wait for), after ``pause`` seconds."""
    if stack.monitoring is None:
        return {}
    return {"settle": {"url": stack.monitoring.url, "read_by": stack.monitoring.read_by(), "min": SETTLE_MIN}}


IDLE_SCRAPES = 5
"""How many scrape intervals an application's idle window lasts (sae/app/run_points.py, ``idle``)."""


def idle_config(stack: Stack) -> dict:
    """With monitoring, the application ends with an idle window of :data:`IDLE_SCRAPES` scrape
    intervals: its processes up, no query running (what each host's CPU costs per second beside
    the queries' work: ``compute_idle_cpu_rate``, ``storage_idle_cpu_rate``); none without."""
    if stack.monitoring is None:
        return {}
    return {"idle_window": IDLE_SCRAPES * stack.monitoring.options.interval_seconds}


def _application(given: StageInput, points: list, on_point) -> tuple[set[str], str | None]:
    """One spark-submit for ``points``; returns the ids of the points the application reached
    and spark-submit's error (None if it exited 0)."""
    session, stack, cluster = given.session, given.stack, given.hosts.cluster
    spark, build, rd = stack.spark, stack.build, session.run
    driver = spark.driver_node
    tag = f"s{session.ledger.sessions}-{next(session.applications)}-{points[0].id}"
    remote_out = f"{_remote_dir(given)}/{tag}.jsonl"
    s = points[0].spec.spark
    shared = session.shared
    # a shared application's event log is read while it is written (_fetch_event_log): plain text,
    # since a compressed one cannot be read before the application closes it (Spark 4 compresses)
    logs = {"spark.eventLog.compress": "false"} if shared is not None else {}
    # executor memory is in the deployment's spark-defaults (SparkOptions); the driver's is per app
    write_conf, write_env = submit_parts(stack, dict.fromkeys(p.spec.workload.writer for p in points
                                                              if p.spec.workload.writer))
    submit = {"py_files": [*(build.py_files if build else []), *map(str, APP_MODULES)],
              "jars": list(build.jars) if build else [],
              "conf": merged_conf({"spark.driver.memory": s.driver_memory}, logs, build.conf if build else {},
                                  write_conf, s.conf),
              "env": {**(build.env if build else {}), **write_env}}
    key = points[0].app_key
    warm = shared.warmed(key, submit) if shared is not None else set()   # readers earlier runs warmed in it
    configs = []
    for p in points:
        configs.append(point_config(session, stack, p, first_of_reader=reader_of(p) not in warm))
        warm.add(reader_of(p))
    cfg = {"run_id": rd.root.name, "out": remote_out, "pause": session.experiment.pause, "points": configs,
           "schedule": interleave(configs, [comparison_key(p) for p in points], session.experiment.warmup),
           **settle_config(stack), **idle_config(stack)}
    ops = OpsRecorder(stack.ceph, rd.raw / f"{tag}.ceph.jsonl", by_type=any(p.spec.workload.writer for p in points)) \
        if stack.ceph else None
    recorder = Recorder(given, points, tag, ops=ops, tenants=_tenants(given, points[0]))

    def named() -> str:   # what the application's command lines name
        return (shared.text if shared is not None else None) or remote_out
    watch = StorageWatch(stack.ceph, lambda why: recorder.storage_down(why, named())) if stack.ceph else None
    _record_placement(session, stack, points, "before")
    error = None
    with ops or contextlib.nullcontext(), contextlib.ExitStack() as tenants, recorder, \
            watch or contextlib.nullcontext():
        for tenant in recorder.tenants:
            tenants.enter_context(tenant)
        try:
            if shared is not None:
                error = shared.run(key, spark, cfg, submit, recorder.line, cluster,
                                   warms={reader_of(p) for p in points})
            else:
                stop_leftovers(cluster, spark, STAGE)
                spark.submit(str(APP), args=[json.dumps(cfg)], log_dir=rd.logs / tag, on_line=recorder.line,
                             **submit)
        except SaeError as e:
            error = str(e)
        except KeyboardInterrupt:
            _stop_interrupted(given, named(), recorder)
            raise
        raw = rd.raw / f"{tag}.jsonl"
        _fetch(cluster, driver, remote_out, raw)
        if shared is not None and reads_event_log(session.plan):
            _fetch_event_log(given, driver, raw)
        recorder.replay(raw)
        recorder.finish(error or f"[{driver} spark-submit] the application ended before this point's "
                                 f"last repetition")
    if not recorder.down:
        if error and stack.ceph:   # a driver that died keeps its CephFS session, and a next reader waits on it
            _evict_dead_clients(stack)
        _record_placement(session, stack, points, "after")
    recorder.hand_back(on_point)
    if recorder.down:
        error = f"[{driver} {STAGE}] stopped the application; {recorder.down}"
    return recorder.reached, error


def _evict_dead_clients(stack: Stack) -> None:
    """End the CephFS sessions a dead application left (its driver held the dataset's capabilities:
    the placement record and the next application's listing would wait ~60 s for the MDS to time
    them out)."""
    evicted = stack.ceph.evict_dead_clients()
    if evicted:
        say(stack.spark.driver_node, f"{STAGE} sessions", f"evicted the CephFS sessions of dead clients: "
                                                            f"{', '.join(evicted)}")


def _record_placement(session: Session, stack: Stack, points: list, when: str) -> None:
    """Write where each point's data lives on the OSDs (objects, bytes and placement groups per
    OSD; ``before`` or ``after`` its application) into the run's ``placement/<point>.json``."""
    if stack.ceph is None:
        return
    by_path = {}
    for point in points:
        path = dataset_path(point)
        if path not in by_path:
            by_path[path] = stack.ceph.placement(path, suffixes=tuple(SUFFIXES.values()),
                                                 stage=f"{STAGE} placement")
        f = session.run.placement(point.id)
        record = json.loads(f.read_text()) if f.exists() else {}
        session.run.write_json(f, {**record, when: by_path[path]})


def _tenants(given: StageInput, point) -> list[Tenant]:
    """The second tenants on the point's storage hosts (``cluster.storage_load``,
    ``cluster.storage_scans``; none where they are 0)."""
    c, hosts = point.spec.cluster, given.hosts.layout_for(point).names("ceph-osd")
    tenants: list[Tenant] = []
    if c.storage_load:
        tenants.append(CpuTenant(given.hosts.reservation, hosts, c.storage_load))
    if c.storage_scans:
        tenants.append(_scan_tenant(given, point, hosts[0]))
    return tenants


def _scan_tenant(given: StageInput, point, host: str) -> ScanTenant:
    """A second application scanning the point's objects from ``host``: every column at 1 %."""
    stack, reservation = given.stack, given.hosts.reservation
    remote = f"{reservation.node_dir(host, 'sae')}/tenant-{BACKEND_SCAN.name}"
    given.hosts.cluster.put(str(BACKEND_SCAN), remote, nodes=[host], stage="sae tenant scan")
    one_percent = dataclasses.replace(point, spec=dataclasses.replace(point.spec, workload=dataclasses.replace(
        point.spec.workload, query=queries.SCAN.name, sql=None, selectivity=1.0, columns=())))
    cfg = scan_client_config(stack, point, scan_request(one_percent), conf=stack.ceph.client_conf(host),
                             in_flight=point.spec.cluster.storage_scans, reps=None)
    return ScanTenant(reservation, host, [stack.ceph.client_python, remote, json.dumps(cfg)],
                      point.spec.cluster.storage_scans)


def _storage_hint(stack: Stack) -> str:
    """When an application failed: the Ceph daemons that are down, by host, and what to do."""
    if stack.ceph is None:
        return ""
    try:
        down = stack.ceph.status().down
    except SaeError:
        return ""
    if not down:
        return ""
    return "; " + down_message([f"{d.name} on {d.host}" for d in down])


def _stop_interrupted(given: StageInput, named: str, recorder: "Recorder") -> None:
    """Ctrl-C: stop the application whose command lines name ``named`` on the driver node, over
    fresh connections (the interrupt also reached the streaming ones), and fail what it was
    running so ``sae resume`` reruns it."""
    driver = given.stack.spark.driver_node
    with Cluster(given.hosts.reservation) as cluster:
        pids = stop_applications(cluster, driver, named, f"{STAGE} interrupt")
    say(driver, f"{STAGE} interrupt", f"stopped the Spark application (processes {pids})")
    recorder.finish(f"[{driver} {STAGE}] interrupted (Ctrl-C); 'sae resume' reruns it")


class Recorder:
    """Records one application's events as they arrive (see the module docstring).

    ``line`` runs in the thread that streams spark-submit's output and only queues; one thread
    records ledger state in event order, another publishes the run marker. Points whose last
    query is in wait in ``closed`` for their windows to be exported.
    """

    def __init__(self, given: StageInput, points: list, tag: str, ops: OpsRecorder | None = None,
                 tenants: list[Tenant] = ()):
        self.session, self.hosts, self.stack, self.tag = given.session, given.hosts, given.stack, tag
        self.idle: dict | None = None    # the application's idle window (its ``idle`` event)
        self.ops, self.tenants = ops, list(tenants)
        self.points = {p.id: p for p in points}
        self.driver = self.stack.spark.driver_node
        self.reached: set[str] = set()
        self.closed: list[tuple] = []    # (point, start, end, missing repetitions, error)
        self.started: dict[str, float] = {}
        self.last = time.time()          # the previous point's end (the first point's: the submit)
        self.done: dict[str, set[int]] = {p.id: set() for p in points}
        self.events, self.marks = queue.Queue(), queue.Queue()
        self.marker = self.stack.marker
        self.threads = [threading.Thread(target=fn, daemon=True) for fn in (self._record, self._publish)]
        self.errors: list[str] = []
        self.down: str | None = None     # set by the storage watch: which Ceph daemons died

    def __enter__(self) -> "Recorder":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        for q, t in zip((self.events, self.marks), self.threads):
            q.put(None)
            t.join()
        for error in self.errors:
            node_log(None, f"{STAGE} marker", f"run marker not published: {error}", logging.WARNING)

    def line(self, text: str) -> None:
        """One line of spark-submit's output: an event, or Spark's own (DEBUG: shown with -v)."""
        if not text.startswith(TAG):
            node_log(self.driver, "spark-submit", text, logging.DEBUG)
            return
        try:
            event = json.loads(text[len(TAG):])
        except ValueError:
            return
        if event.get("event") in ("start", "rep"):
            self.marks.put(event)
        if self.ops is not None:
            self.ops.event(event)
        self.events.put(event)

    def replay(self, raw: Path) -> None:
        """Queue the application's raw file (events recorded already are ignored)."""
        for line in raw.read_text().splitlines() if raw.exists() else []:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                continue

    def storage_down(self, why: str, named: str) -> None:
        """A Ceph daemon died mid-application (:class:`StorageWatch`): stop the application (its
        command lines name ``named``) now rather than let its queries wait for the client's op
        timeout."""
        self.down = why
        with Cluster(self.hosts.reservation) as cluster:
            pids = stop_applications(cluster, self.driver, named, f"{STAGE} storage watch")
        say(self.driver, f"{STAGE} storage watch", f"stopped the Spark application (processes {pids}): {why}")

    def finish(self, error: str) -> None:
        """After the application ended: points it reached but never closed fail with ``error``."""
        self.events.put({"event": "finish", "error": error})

    def _record(self) -> None:
        while (event := self.events.get()) is not None:
            try:
                self._handle(event)
            except Exception as e:   # never lose the thread: the runner waits for it
                node_log(self.driver, STAGE, f"could not record {event.get('event')}: "
                                             f"{type(e).__name__}: {e}", logging.WARNING)

    def _handle(self, event: dict) -> None:
        kind, pid = event.get("event"), event.get("point")
        ledger = self.session.ledger
        closed = {c[0].id for c in self.closed}
        if kind == "idle":
            self.idle = event
            return
        if kind == "finish":
            for pid in [p for p in self.points if p in self.reached and p not in closed]:
                self._close(pid, event["error"])
            return
        if pid not in self.points or pid in closed:
            return
        if kind == "point" and pid not in self.reached:
            self.reached.add(pid)
            self.started[pid] = self.last
            ledger.mark(pid, ledger.pending(pid), "running")
            self.session.console.point_started(self.points[pid])
        elif kind == "rep" and pid in self.reached and not event.get("discarded"):
            rep = int(event["repetition"])
            if rep in self.done[pid] or rep not in ledger.pending(pid):
                return
            self.done[pid].add(rep)
            ledger.mark(pid, [rep], "done", timings={rep: {"start": event["start"], "end": event["end"]}},
                        results={rep: {k: event[k] for k in RESULT_KEYS if k in event}})
            self.session.console.repetition_done(self.points[pid], rep, event["total_s"])
        elif kind == "point-end" and pid in self.reached:
            self._close(pid, event.get("error") and f"[{self.driver} {STAGE}] point {pid}: {event['error']}")

    def _close(self, pid: str, error: str | None) -> None:
        """The point's last query is in: what is still running failed."""
        ledger = self.session.ledger
        missing = [e["repetition"] for e in ledger.of_point(pid).values() if e["state"] == "running"]
        if missing:
            error = (error or f"[{self.driver} {STAGE}] the application skipped repetitions {missing}") + \
                (f"; {self.down}" if self.down else _storage_hint(self.stack))
            ledger.mark(pid, missing, "failed", error=error)
        self.last = time.time()
        self.closed.append((self.points[pid], self.started[pid], self.last, missing,
                            f"repetitions {missing} failed: {error}" if missing else None))

    def hand_back(self, on_point) -> None:
        """Export the windows of every closed point and hand each to ``on_point`` in the plan's
        order, whatever order their last queries ended in (its start and end: when the
        application began and finished its share)."""
        rank = {pid: i for i, pid in enumerate(self.points)}
        closed = sorted(self.closed, key=lambda c: rank[c[0].id])
        timed = [(c[0], _timings(self.session, c[0], self.done[c[0].id])) for c in closed]
        for (point, start, end, missing, error), (_, timings), aucs in zip(
                closed, timed, export_windows(self.session, self.stack.monitoring, timed)):
            if self.tenants:
                self.session.ledger.add_results(point.id, {rep: {k: v for tenant in self.tenants
                                                             for k, v in tenant.results(t["start"], t["end"]).items()}
                                                       for rep, t in timings.items()})
            self.session.ledger.record_aucs(point.id, aucs)
            _hand_back(on_point, self.stack, point, start, end, bool(timings),
                       f"{len(timings)} of {len(timings) + len(missing)} repetitions done", error)
        if self.idle is not None and self.stack.monitoring is not None:
            result = _export(self.stack.monitoring, [(self.idle["start"], self.idle["end"],
                                                      self.session.run.idle_window(self.tag))])[0]
            if isinstance(result, SaeError):
                node_log(None, f"{STAGE} metrics", f"application {self.tag}'s idle window: {result}", logging.WARNING)

    def _publish(self) -> None:
        while (event := self.marks.get()) is not None:
            if self.marker is None:
                continue
            try:
                if event["event"] == "start":
                    self.marker.start(self.session.run.root.name, point=event["point"],
                                      repetition=event["repetition"])
                else:
                    self.marker.clear()
            except SaeError as e:
                self.errors.append(str(e))
        try:
            if self.marker is not None:
                self.marker.clear()   # an application that died mid-query left its window open
        except SaeError as e:
            self.errors.append(str(e))


def _timings(session: Session, point, reps: dict | None) -> dict:
    """Repetition → {start, end} of the point's done repetitions (``reps``: only those)."""
    return {e["repetition"]: {"start": e["start"], "end": e["end"]} for e in session.ledger.of_point(point.id).values()
            if e["state"] == "done" and (reps is None or e["repetition"] in reps)}


def _fetch(cluster: Cluster, node: str, remote_path: str, local: Path, what: str = "raw timings") -> None:
    """Copy the application's raw JSON lines (or ``what`` else) from the driver node (absent: nothing)."""
    tmp = local.parent / f".fetch-{local.name}"
    try:
        cluster.get(remote_path, str(tmp), nodes=[node], stage=f"{STAGE} fetch")
        shutil.move(str(tmp / node / Path(remote_path).name), str(local))
    except SaeError as e:
        node_log(node, f"{STAGE} fetch", f"no {what} fetched: {e}", logging.WARNING)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


EVENT_LOG_NAME = re.compile(r"(eventlog_v2_)?(app-[0-9]+-[0-9]+)(\.[a-z0-9]+)?(\.inprogress)?")
"""What a shared application's event log is named (run_points.event_log): a rolling log's directory
or a single file, after its application's id."""


def _fetch_event_log(given: StageInput, node: str, raw: Path) -> None:
    """Copy the event log of the shared application that ran the job whose raw lines are ``raw``
    (its ``app`` event names it) into ``logs/shared/<app id>/events/``, where
    sae.results.run.eventlog reads a run's logs, as it stands after the job: the application drained
    Spark's listeners before it ended the job, so the job's tasks are in it (a later job of the same
    run copies it again, whole)."""
    app = next((e for e in json_lines(raw) if e.get("event") == "app"), {})
    log = app.get("event_log") or {}
    path = Path(str(log.get("path", "")))
    name = EVENT_LOG_NAME.fullmatch(path.name)
    if not path.is_absolute() or name is None or name.group(2) != log.get("app_id"):
        node_log(node, f"{STAGE} event log", f"the application named no event log to read ({log or 'none'})",
                 logging.WARNING)
        return
    local = given.session.run.logs / "shared" / name.group(2) / "events" / path.name
    local.parent.mkdir(parents=True, exist_ok=True)
    if local.is_dir():
        shutil.rmtree(local)
    _fetch(given.hosts.cluster, node, str(path), local, "event log")   # a file moves over its earlier copy


def export_windows(session: Session, monitoring, points: list[tuple]) -> list[dict[int, dict]]:
    """Export each repetition's Prometheus window (padded by one scrape interval) into
    ``metrics/<point>/rep<k>/``, for each ``(point, timings)`` of ``points``, all at once (each
    series queried once for them: monitor_deploy's ``export_many``); returns, per point,
    repetition → areas under the curves."""
    if monitoring is None or not any(timings for _, timings in points):
        return [{} for _ in points]
    windows = [(point, rep, timings[rep]) for point, timings in points for rep in sorted(timings)]
    results = _export(monitoring, [(t["start"], t["end"], session.run.metrics / point.id / f"rep{rep}")
                                   for point, rep, t in windows])
    aucs = {point.id: {} for point, _ in points}
    for (point, rep, _), result in zip(windows, results):
        if isinstance(result, SaeError):
            node_log(None, f"{STAGE} metrics", f"point {point.id} repetition {rep}: {result}", logging.WARNING)
            continue
        aucs[point.id][rep] = {f"{metric}_{node}": round(v, 6) for metric, nodes in result.auc_dict.items()
                               for node, v in nodes.items()}
    return [aucs[point.id] for point, _ in points]


def _export(monitoring, windows: list[tuple]) -> list:
    """Export ``(start, end, directory)`` windows, each padded by one scrape interval, once
    Prometheus has scraped past the last of them (monitor_deploy's ``export_many``: a result or
    the SaeError of each)."""
    pad = monitoring.options.interval_seconds
    wait = max(end for _, end, _ in windows) + 2 * pad - time.time()
    if wait > 0:
        time.sleep(wait)
    return monitoring.export_many([(start - pad, end + pad, out) for start, end, out in windows],
                                  overwrite=True, plots=False)
