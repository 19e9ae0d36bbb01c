"""Run the pending repetitions of several sweep points inside one SparkSession (warm JVM and
executors, as the paper did): the points share a stack and Spark options and take their query
parameters in turn.

Submitted by the sae runner with one argument, a JSON object::

    {"run_id", "out": "<jsonl path>", "pause": 1.0,
     "points": [{"point", "reps": [0, 1, 2], "prewarm": 0,
                 "format": "sae-ceph" | "parquet", "path": "...", "options": {...}, "register": ["mod:fn"],
                 "column": "total_amount", "threshold": 12.5 | null, "columns": [] (all) | ["VendorID", ...]},
                ...]}

Each repetition loads the dataset afresh (pushed filters must not leak between queries), keeps
rows with ``column < threshold`` and computes the row count plus an order-independent checksum
over ``columns`` (every column when empty): the connector reads just the columns the query uses.
For the ``sae-ceph`` format the repetition also carries ``scan``: the connector's sums over the
query (the object class's phase times and counts, calls, reply waits; sae.results.storage_work).
Events go to stdout prefixed ``sae-rep`` (the runner records them as they arrive) and, except
``start``, to ``out`` (fsynced; the runner reconciles from it): ``app`` (pids), ``point`` (a
point begins), ``start`` (a query begins), ``rep`` (repetition, start/end epoch, init and compute
seconds, rows, checksum; ``prewarm`` extra queries are ``"discarded": true``), ``point-end``
(with ``error`` when a query of the point raised; the next point still runs).
``pause`` seconds separate consecutive queries, across points too, and precede the first (the
controller reads the OSDs' counters in these pauses).
"""
import importlib
import json
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

TAG = "sae-rep "


def emit(out, record):
    line = json.dumps(record, sort_keys=True)
    if out is not None:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())
    print(TAG + line, flush=True)


def register(spark, specs, registered):
    """Call each ``"module:function"`` of ``specs`` not in ``registered`` with the session."""
    for spec in specs:
        if spec not in registered:
            module, _, name = spec.partition(":")
            getattr(importlib.import_module(module), name)(spark)
            registered.add(spec)


def query(spark, cfg, schema=None):
    """One query of ``cfg`` (a read source, ``column``, ``threshold``, ``columns``) on a fresh
    DataFrame (``schema``: the table's, for a directory without files); its timings and results."""
    t0 = time.time()
    reader = spark.read.format(cfg["format"]).options(**{k: str(v) for k, v in cfg["options"].items()})
    df = (reader.schema(schema) if schema is not None else reader).load(cfg["path"])
    if cfg["threshold"] is not None:
        df = df.filter(F.col(cfg["column"]) < F.lit(cfg["threshold"]))
    t1 = time.time()
    agg = df.agg(F.count(F.lit(1)).alias("rows"),
                 F.sum(F.hash(*[F.col(c) for c in cfg.get("columns") or df.columns]).cast("long")).alias("checksum"))
    row = agg.collect()[0]
    t2 = time.time()
    out = {"start": t0, "end": t2, "init_s": t1 - t0, "compute_s": t2 - t1, "total_s": t2 - t0,
           "rows": int(row["rows"]), "checksum": int(row["checksum"] or 0)}
    if cfg["format"] == "sae-ceph":
        out["scan"] = json.loads(spark._jvm.sae.connector.ScanMetrics.json(agg._jdf))
    return out


def run_point(spark, cfg, out, pause_before):
    """Every query of one point; returns whether a query ran (the next one pauses first)."""
    plan = [("prewarm", i) for i in range(cfg.get("prewarm", 0))] + [("rep", r) for r in cfg["reps"]]
    for kind, rep in plan:
        if pause_before:
            time.sleep(pause_before)
        emit(None, {"event": "start", "point": cfg["point"], "repetition": rep, "kind": kind})
        result = query(spark, cfg)
        result.update(event="rep", point=cfg["point"], repetition=rep, discarded=kind == "prewarm")
        emit(out, result)
        pause_before = cfg.get("pause", 0)
    return bool(plan)


def main(cfg):
    spark = SparkSession.builder.appName(f"sae {cfg['run_id']}").getOrCreate()
    registered = set()
    os.makedirs(os.path.dirname(cfg["out"]), exist_ok=True)
    with open(cfg["out"], "a") as out:
        emit(out, {"event": "app", "pid": os.getpid(), "jvm_pid": os.getppid(), "time": time.time()})
        pause = cfg.get("pause", 0)
        for point in cfg["points"]:
            point = dict(point, pause=cfg.get("pause", 0))
            emit(out, {"event": "point", "point": point["point"], "time": time.time()})
            error = None
            try:
                register(spark, point.get("register", []), registered)
                if run_point(spark, point, out, pause):
                    pause = point["pause"]
            except Exception as e:  # reported per point; the next point still runs
                error = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:500]
            emit(out, {"event": "point-end", "point": point["point"], "time": time.time(), "error": error})
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
