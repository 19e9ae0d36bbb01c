"""The ``run`` stage: every pending repetition of one point inside one Spark application.

The runner marks the repetitions running, submits :mod:`sae.app.run_point` from the driver node,
publishes the run marker live from the application's ``sae-rep`` lines, fetches the raw
per-repetition timings, records each repetition done (or failed, naming host and stage) and
exports each repetition's Prometheus window through monitor_deploy.
"""
from __future__ import annotations

import json
import logging
import queue
import shutil
import threading
import time
from pathlib import Path

from metareserve import StageReport
from metareserve.errors import OperationalError, SaeError
from metareserve.log import node_log

from . import remote
from .app import APP
from .reader import app_config
from .stages import StageContext, dataset_dirs

TAG = "sae-rep "
STAGE = "sae run"


class LiveMarker(logging.Handler):
    """Publishes monitor_deploy's run marker from the application's streamed ``sae-rep`` lines.

    Lines arrive through the ``sae`` logger while spark-submit streams; a worker thread with its
    own SSH connections publishes, so the streaming connection is never blocked.
    """

    def __init__(self, marker, run_id: str, point: str):
        super().__init__()
        self.marker, self.run_id, self.point = marker, run_id, point
        self.events: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._publish, daemon=True)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if TAG in text:
            try:
                self.events.put(json.loads(text.split(TAG, 1)[1]))
            except ValueError:
                pass

    def _publish(self) -> None:
        while (event := self.events.get()) is not None:
            try:
                if event.get("event") == "start":
                    self.marker.start(self.run_id, point=self.point, repetition=event["repetition"])
                elif event.get("event") == "rep":
                    self.marker.clear()
            except SaeError as e:
                self.errors.append(str(e))

    def __enter__(self) -> "LiveMarker":
        self.thread.start()
        logging.getLogger("sae").addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        logging.getLogger("sae").removeHandler(self)
        self.events.put({"event": "rep"})
        self.events.put(None)
        self.thread.join(60)
        for error in self.errors:
            node_log(None, f"{STAGE} marker", f"run marker not published: {error}", logging.WARNING)


def parse_raw(path: Path) -> dict[int, dict]:
    """Repetition → record from the application's JSON lines (discarded pre-warm runs dropped)."""
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("event") == "rep" and not rec.get("discarded"):
            out[int(rec["repetition"])] = rec
    return out


def threshold(ctx: StageContext) -> float:
    """The ``column < t`` threshold that keeps the point's selectivity of rows."""
    import data_deploy
    w = ctx.point.params["workload"]
    source, _ = dataset_dirs(ctx.point)
    return data_deploy.selectivity_threshold(source, w["selectivity"] / 100, column=w["column"])


def run_point(ctx: StageContext, stack: dict) -> StageReport:
    """Run the current point's pending repetitions; returns the stage report."""
    point, ledger, rd = ctx.point, ctx.ledger, ctx.run
    pending = ledger.pending(point.id)
    warmup = ctx.experiment.warmup
    attempt = 1 + max(e["attempts"] for e in ledger.of_point(point.id).values())
    tag = f"{point.id}-a{attempt}"
    spark = stack["spark"]
    driver = spark.driver_node
    remote_out = f"{ctx.reservation.node_dir(driver, 'sae')}/{rd.root.name}/{tag}.jsonl"
    cfg = {"run_id": rd.root.name, "point": point.id, "reps": pending,
           "prewarm": warmup if min(pending) >= warmup else 0, "pause": ctx.experiment.pause,
           "out": remote_out, "column": point.params["workload"]["column"], "threshold": threshold(ctx),
           "columns": list(point.params["workload"]["columns"]),
           **app_config(ctx, stack)}
    build = stack.get("build")
    s = point.params["spark"]
    conf = {"spark.driver.memory": s["driver_memory"], "spark.executor.memory": s["executor_memory"],
            **(build.conf if build else {}), **s["conf"]}
    if attempt > 1:
        orphans = ctx.connect().call(remote, "kill_orphans", f"{Path(remote_out).parent}/{point.id}-a*.jsonl",
                                     nodes=[driver], stage=f"{STAGE} orphans")[driver]
        if orphans:
            node_log(driver, f"{STAGE} orphans", f"stopped application processes {orphans} of an earlier attempt")
    ledger.mark(point.id, pending, "running")
    marker = stack.get("marker")
    submit_error = None
    try:
        with (LiveMarker(marker, rd.root.name, point.id) if marker else _Null()):
            spark.submit(str(APP), args=[json.dumps(cfg)], py_files=list(build.py_files) if build else [],
                         jars=list(build.jars) if build else [], conf=conf,
                         env=dict(build.env) if build else {}, log_dir=rd.logs / tag, stream=True)
    except SaeError as e:
        submit_error = str(e)
    raw = rd.raw / f"{tag}.jsonl"
    _fetch(ctx, driver, remote_out, raw)
    records = parse_raw(raw)
    done = {r: {"start": rec["start"], "end": rec["end"]} for r, rec in records.items() if r in pending}
    for rep in done:
        ledger.mark(point.id, [rep], "done", timings=done)
        key = next(k for k, e in ledger.of_point(point.id).items() if e["repetition"] == rep)
        ledger.entries[key]["result"] = {k: records[rep][k] for k in
                                         ("init_s", "compute_s", "total_s", "rows", "checksum")}
    ledger.save()
    missing = [r for r in pending if r not in done]
    if missing:
        why = submit_error or f"[{driver} spark-submit] the application ended without repetitions {missing}"
        ledger.mark(point.id, missing, "failed", error=why)
    if stack.get("monitoring") and done:
        export_windows(ctx, stack["monitoring"], done)
    report = StageReport("run")
    report.add(driver, True, f"point {point.id}: {len(done)} of {len(pending)} repetitions done")
    if missing:
        raise OperationalError(f"point {point.id}: repetitions {missing} failed: {why}")
    return report


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def _fetch(ctx: StageContext, node: str, remote: str, local: Path) -> None:
    """Copy the application's raw JSON lines from the driver node (absent file: nothing)."""
    tmp = local.parent / f".fetch-{local.name}"
    try:
        ctx.connect().get(remote, str(tmp), nodes=[node], stage=f"{STAGE} fetch")
        shutil.move(str(tmp / node / Path(remote).name), str(local))
    except SaeError as e:
        node_log(node, f"{STAGE} fetch", f"no raw timings fetched: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def export_windows(ctx: StageContext, monitoring, timings: dict) -> None:
    """Export each repetition's Prometheus window (padded by one scrape interval) into
    ``metrics/<point>/rep<k>/`` and record the areas under the curves in the ledger."""
    pad = monitoring.options.interval_seconds
    wait = max(t["end"] for t in timings.values()) + 2 * pad - time.time()
    if wait > 0:
        time.sleep(wait)
    for rep, t in sorted(timings.items()):
        out = ctx.run.metrics / ctx.point.id / f"rep{rep}"
        try:
            result = monitoring.export(t["start"] - pad, t["end"] + pad, out, overwrite=True)
        except SaeError as e:
            node_log(None, f"{STAGE} metrics", f"point {ctx.point.id} repetition {rep}: {e}")
            continue
        key = next(k for k, e in ctx.ledger.of_point(ctx.point.id).items() if e["repetition"] == rep)
        ctx.ledger.entries[key]["auc"] = {f"{metric}_{node}": round(v, 6)
                                          for metric, nodes in result.auc_dict.items()
                                          for node, v in nodes.items()}
    ctx.ledger.save()
