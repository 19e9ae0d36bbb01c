"""Run the pending repetitions of several sweep points inside one SparkSession (warm JVM and
executors, as the paper did): the points share a stack and Spark options and take their query
parameters in turn.

Submitted by the sae runner with one argument, a JSON object::

    {"run_id", "out": "<jsonl path>", "pause": 1.0, "idle_window": 5.0,
     "schedule": [["<point>", "prewarm" | "rep", 0], ...] (absent: each point's in turn),
     "points": [{"point", "reps": [0, 1, 2], "prewarm": 0,
                 "format": "sae-ceph" | "parquet" | "csv", "path": "...", "options": {...}, "register": ["mod:fn"],
                 "schema": "<DDL>" (CSV data: its columns),
                 "column": "total_amount", "threshold": 12.5 | null, "columns": [] (all) | ["VendorID", ...],
                 "query": "scan", "sql": null | "SELECT ...", "zones": "<path>" (sql reading zones),
                 "float_digits": 9, "answer_rows": 1000},
                ...]}

Each repetition loads the dataset afresh (pushed filters must not leak between queries). A point
with ``sql`` registers it as the view ``trips`` (and ``zones`` from its path) and runs the
statement: ``rows`` is the answer's row count, ``checksum`` an order-independent fingerprint of
its rows (floats to ``float_digits`` significant digits) and ``answer`` its first ``answer_rows``
rows in that order. Otherwise (the ``scan`` query) it keeps rows with ``column < threshold`` and
computes the row count plus an order-independent checksum over ``columns`` (every column when
empty): the connector reads just the columns the query uses.

The key queries and the readers that keep the data in memory (keyed.py, shipped beside this file)
add to a point: ``"dataset"`` (its CephFS path, naming the data every reader reads), ``"key"``,
``"keep": "cache" | "index"`` (the reader's copy in memory, which replaces the fresh load),
``"keys": n`` and ``"probe": percent`` (the views its statement reads), ``"summed": true`` (the
answer counted and checksummed in Spark, as the scan's), ``"index": "lookup" | "join"`` (how the
index answers it), ``"append_rows"``, ``"append_every"``, ``"lose_executor"`` and
``"comparison"`` (the points compared with each other lose one executor between them). What a
repetition reads is made before its clock starts, and the repetition records it (``append_s``,
``index_bytes``, ...: keyed.Memory.prepare).
A point with ``"write"`` runs a write job instead of a query (writes.py, shipped beside this
file: its docstring says what the repetition records); after the job, before its output is read
back, it emits ``written`` (the job's start and end: the controller snapshots the storage side's
counters then).
For the ``sae-ceph`` format the repetition also carries ``scan``: the connector's sums over the
query (the object class's phase times and counts, calls, reply waits; sae.results.run.storage_work).
Queries run in ``schedule`` order (sae.running.execute.interleave: the readers of a comparison
take turns), several points being open at once; ``seq`` in a ``rep`` event is the query's place
in the application's order. Events go to stdout prefixed ``sae-rep`` (the runner records them as they arrive) and, except
``start``, to ``out`` (fsynced; the runner reconciles from it): ``app`` (pids, the event log), ``point`` (a
point begins), ``start`` (a query begins), ``rep`` (repetition, start/end epoch, init and compute
seconds, rows, checksum; ``prewarm`` extra queries are ``"discarded": true``), ``point-end``
(after the point's last query, with ``error`` when a query of the point raised: its remaining
queries are skipped, the other points still run), ``idle`` (with ``"idle_window": <seconds>``: after the
last query, a pause, then that long with no query; its start and end: the controller reads each
host's CPU while the application's processes are up and idle).
``pause`` seconds separate consecutive queries, across points too, and precede the first (the
controller reads the OSDs' counters in these pauses). With ``"settle": {"url": <Prometheus>,
"read_by": [<PromQL>, ...], "min": 0.25}`` (monitoring on) a pause ends as soon as every
expression, the time up to which every host's counters have been read (``Monitoring.read_by``),
is past the pause's start, and ``min`` seconds have gone by (the
controller's snapshot of the OSDs' counters takes milliseconds); ``pause`` is its longest, and the
pause before an application's first query stays whole.

With ``"serve": {"dir": "<dir>", "idle": 1800}`` the application stays up after its points for
more of them (sae.running.shared_app: the runs of a catalogue share it): it prints ``job-end``
(``"job": n``, the first configuration being job 0) once Spark's listeners have taken the job's
events (its tasks are then in the event log, which the ``app`` event names), then waits for ``<dir>/job-<n+1>.json`` (a
configuration like this one, without ``serve``) and runs it in the same session; it stops at
``<dir>/stop`` or after ``idle`` seconds without a job.
"""
import hashlib
import importlib
import json
import os
import sys
import time
import urllib.parse
import urllib.request

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

try:
    from . import keyed, writes   # imported as sae.app.run_points
except ImportError:
    import keyed                  # submitted: shipped beside it (--py-files)
    import writes

TAG = "sae-rep "   # sae.app.EVENT_TAG: this file runs without sae


def emit(out, record):
    line = json.dumps(record, sort_keys=True)
    if out is not None:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())
    print(TAG + line, flush=True)


def settle(cfg, first):
    """The pause before a query (module docstring): ``pause`` seconds, or with ``settle`` until
    every host's counters have been read after now (when the previous query, and what this one
    reads made before its clock, have ended), at least ``min`` and at most ``pause`` seconds."""
    pause, how = cfg.get("pause", 0), cfg.get("settle")
    if how is None or first:
        time.sleep(pause)
        return
    start = since = time.time()
    time.sleep(how["min"])
    while time.time() - start < pause:
        try:
            if all(read_by(how["url"], expr) >= since for expr in how["read_by"]):
                return
        except (OSError, ValueError, KeyError, IndexError):   # Prometheus not answering: the whole pause
            pass
        time.sleep(0.05)


def read_by(url, expr):
    """The value of the instant query ``expr`` (one series) at Prometheus ``url``; -inf without one."""
    query = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=1) as r:
        result = json.load(r)["data"]["result"]
    return float(result[0]["value"][1]) if result else float("-inf")


def register(spark, specs, registered):
    """Call each ``"module:function"`` of ``specs`` not in ``registered`` with the session."""
    for spec in specs:
        if spec not in registered:
            module, _, name = spec.partition(":")
            getattr(importlib.import_module(module), name)(spark)
            registered.add(spec)


def load(spark, cfg, path, schema=None):
    """A fresh DataFrame of ``path`` through the point's reader (``schema``: the table's, for a
    directory without files)."""
    reader = spark.read.format(cfg["format"]).options(**{k: str(v) for k, v in cfg["options"].items()})
    return (reader.schema(schema) if schema is not None else reader).load(path)


def canonical(value, digits):
    """``value`` as the fingerprint sees it: floats to ``digits`` significant digits, times and
    decimals as text."""
    if isinstance(value, float):
        return value if value != value or value in (float("inf"), float("-inf")) else float(f"{value:.{digits}g}")
    return value if value is None or isinstance(value, (bool, int, str)) else str(value)


def answer(rows, digits, keep):
    """(row count, order-independent 64-bit fingerprint, the first ``keep`` rows in fingerprint
    order) of an answer's ``rows``."""
    keyed = sorted(((json.dumps([canonical(v, digits) for v in r]), r) for r in rows), key=lambda kr: kr[0])
    digest = hashlib.blake2b(digest_size=8)
    for key, _ in keyed:
        digest.update(key.encode() + b"\n")
    kept = [[v if isinstance(v, float) else canonical(v, digits) for v in r] for _, r in keyed[:keep]]   # floats whole
    return len(keyed), int.from_bytes(digest.digest(), "little", signed=True), kept


def fresh(spark, cfg, schema=None):
    """A function making a fresh DataFrame of the point's dataset through its reader."""
    return lambda: load(spark, cfg, cfg["path"], schema or cfg.get("schema"))


def query(spark, cfg, memory, schema=None):
    """One query of ``cfg`` on fresh DataFrames (or the reader's copy in ``memory``, a
    keyed.Memory, with the point's appended rows): ``sql`` over the views ``trips`` (and ``zones``,
    ``keys``, ``probe``), or the index's own operation for the indexed reader, else the scan (rows
    below ``threshold`` in ``column``, checksum of ``columns``); its timings and results."""
    t0 = time.time()
    if cfg.get("keep") == "index":
        result = memory.indexed(cfg)   # a lookup runs here
    else:
        result = memory.trips(cfg, fresh(spark, cfg, schema))
        if cfg.get("index") == "lookup":
            result = memory.lookup(result, cfg)   # the statement, its keys as values
        elif cfg.get("sql"):
            result.createOrReplaceTempView("trips")
            memory.views(cfg)
            if cfg.get("zones"):
                load(spark, cfg, cfg["zones"]).createOrReplaceTempView("zones")
            result = spark.sql(cfg["sql"])
        elif cfg["threshold"] is not None:
            result = result.filter(F.col(cfg["column"]) < F.lit(cfg["threshold"]))
    t1 = time.time()
    if cfg.get("sql") and not cfg.get("summed"):
        rows, checksum, kept = answer(result.collect(), cfg["float_digits"], cfg["answer_rows"])
        extra = {"answer": kept}
    else:
        result = keyed.checksummed(result, () if cfg.get("sql") else cfg.get("columns"))
        row = result.collect()[0]
        rows, checksum, extra = int(row["rows"]), int(row["checksum"] or 0), {}
    t2 = time.time()
    out = {"start": t0, "end": t2, "init_s": t1 - t0, "compute_s": t2 - t1, "total_s": t2 - t0,
           "rows": rows, "checksum": checksum, **extra}
    if cfg["format"] == "sae-ceph" and not cfg.get("keep"):
        out["scan"] = json.loads(spark._jvm.sae.connector.ScanMetrics.json(result._jdf))
    return out


def schedule(cfg):
    """The application's queries in order: ``cfg["schedule"]``, else each point's pre-warm
    queries and repetitions in turn."""
    if cfg.get("schedule"):
        return [tuple(entry) for entry in cfg["schedule"]]
    return [(p["point"], kind, rep) for p in cfg["points"]
            for kind, rep in [("prewarm", i) for i in range(p.get("prewarm", 0))] + [("rep", r) for r in p["reps"]]]


def run_job(spark, cfg, registered, job=0, memory=None):
    """Run one configuration's points in ``spark`` (see the module docstring), keeping data in
    ``memory`` (a keyed.Memory; a new one by default); each repetition records ``app_job``, the
    job's place in the application (0: its first)."""
    memory = memory or keyed.Memory(spark)
    written = writes.Writes(spark)
    os.makedirs(os.path.dirname(cfg["out"]), exist_ok=True)
    points = {p["point"]: p for p in cfg["points"]}
    order = [entry for entry in schedule(cfg) if entry[0] in points]
    last = {pid: i for i, (pid, _, _) in enumerate(order)}
    pause = cfg.get("pause", 0)
    with open(cfg["out"], "a") as out:
        emit(out, {"event": "app", "pid": os.getpid(), "jvm_pid": os.getppid(), "time": time.time(),
                   "event_log": event_log(spark)})
        started, failed = set(), {}
        for seq, (pid, kind, rep) in enumerate(order):
            point = points[pid]
            if pid not in started:
                started.add(pid)
                emit(out, {"event": "point", "point": pid, "time": time.time()})
            if pid not in failed:
                try:
                    register(spark, point.get("register", []), registered)
                    if point.get("write"):
                        written.prepare(point, fresh(spark, point))
                        kept = {}
                    else:
                        kept = memory.prepare(point, fresh(spark, point), rep if kind == "rep" else None)
                    settle(cfg, first=seq == 0)
                    emit(None, {"event": "start", "point": pid, "repetition": rep, "kind": kind})
                    if point.get("write"):
                        def said(start, end, pid=pid, rep=rep, kind=kind):
                            emit(out, {"event": "written", "point": pid, "repetition": rep,
                                       "discarded": kind == "prewarm", "start": start, "end": end})
                        result = written.run(point, fresh(spark, point), rep, said, pause, last[pid] == seq)
                    else:
                        result = query(spark, point, memory)
                    result.update(kept, event="rep", point=pid, repetition=rep, discarded=kind == "prewarm",
                                  seq=seq, app_job=job)
                    emit(out, result)
                except Exception as e:  # reported per point; the other points still run
                    failed[pid] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:500]
            if last[pid] == seq:
                memory.release(pid)
                emit(out, {"event": "point-end", "point": pid, "time": time.time(), "error": failed.get(pid)})
        for pid in [p for p in points if p not in started]:   # a point with nothing to run
            emit(out, {"event": "point", "point": pid, "time": time.time()})
            emit(out, {"event": "point-end", "point": pid, "time": time.time(), "error": None})
        if cfg.get("idle_window") and started:
            settle(cfg, first=False)
            start = time.time()
            time.sleep(cfg["idle_window"])
            emit(out, {"event": "idle", "start": start, "end": time.time()})


def next_job(serve, n, poll=0.1):
    """Job ``n``'s configuration from the serve directory, once it is there; None at the
    ``stop`` file or after ``serve["idle"]`` seconds without it."""
    path, stop = os.path.join(serve["dir"], f"job-{n}.json"), os.path.join(serve["dir"], "stop")
    deadline = time.time() + serve["idle"]
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)
        if os.path.exists(stop):
            return None
        time.sleep(poll)
    return None


def event_log(spark):
    """Where the application writes Spark's event log, as Spark's own writer names it:
    {"path": a path on the driver's host, "app_id"}, the path being a rolling log's directory
    (``eventlog_v2_<app id>``, Spark 4's default) or the single file being written
    (``<app id>[.<codec>].inprogress``, Spark 3.5's default); None without an event log."""
    logger = spark.sparkContext._jsc.sc().eventLogger()   # Option[EventLoggingListener]
    if logger.isEmpty():
        return None
    path = logger.get().logWriter().logPath()               # a URI: file:/dir/...
    path = path[len("file:"):] if path.startswith("file:") else path
    if not os.path.isdir(path):   # a single file is written under its in-progress name until it closes
        path += ".inprogress"
    return {"path": os.path.normpath(path), "app_id": spark.sparkContext.applicationId}


def drain_listeners(spark, timeout_ms=10000):
    """Wait until Spark's listeners have taken every event posted so far: the event log's writes
    the job's task ends and flushes at its job ends, so a job's tasks are in the log when the job
    ends (an application serving jobs closes its log only when it stops)."""
    try:
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(timeout_ms)
    except Exception as e:   # py4j or a timeout: the log may lack the job's last tasks; say so
        print(f"sae: Spark's listeners not drained at the job's end ({type(e).__name__}): the event log may "
              f"lack its last tasks", file=sys.stderr, flush=True)


def main(cfg):
    spark = SparkSession.builder.appName(f"sae {cfg['run_id']}").getOrCreate()
    registered, memory, serve, job = set(), keyed.Memory(spark), cfg.get("serve"), 0
    while cfg is not None:
        run_job(spark, cfg, registered, job, memory)
        if serve is None:
            break
        drain_listeners(spark)
        emit(None, {"event": "job-end", "job": job})
        job += 1
        cfg = next_job(serve, job)
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
