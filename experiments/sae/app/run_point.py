"""Run every repetition of one sweep point inside one SparkSession (warm JVM, as the paper did).

Submitted by the sae runner with one argument, a JSON object::

    {"run_id", "point", "reps": [0, 1, 2], "prewarm": 0, "pause": 1.0, "out": "<jsonl path>",
     "format": "sae-ceph" | "parquet", "path": "...", "options": {...}, "register": ["mod:fn"],
     "column": "total_amount", "threshold": 12.5 | null, "columns": [] (all) | ["VendorID", ...]}

Each repetition loads the dataset afresh (pushed filters must not leak between queries), keeps
rows with ``column < threshold`` and computes the row count plus an order-independent checksum
over ``columns`` (every column when empty): the connector reads just the columns the query uses. One JSON line per
repetition goes to ``out`` and to stdout prefixed ``sae-rep`` (the runner publishes run markers
from those lines): repetition, start/end epoch, init and compute seconds, rows, checksum.
``prewarm`` extra repetitions run first and are only reported as ``"discarded": true``.
"""
import importlib
import json
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def emit(out, record):
    line = json.dumps(record, sort_keys=True)
    out.write(line + "\n")
    out.flush()
    os.fsync(out.fileno())
    print("sae-rep " + line, flush=True)


def query(spark, cfg):
    t0 = time.time()
    reader = spark.read.format(cfg["format"]).options(**{k: str(v) for k, v in cfg["options"].items()})
    df = reader.load(cfg["path"])
    if cfg["threshold"] is not None:
        df = df.filter(F.col(cfg["column"]) < F.lit(cfg["threshold"]))
    t1 = time.time()
    row = df.agg(F.count(F.lit(1)).alias("rows"),
                 F.sum(F.hash(*[F.col(c) for c in cfg.get("columns") or df.columns]).cast("long"))
                 .alias("checksum")).collect()[0]
    t2 = time.time()
    return {"start": t0, "end": t2, "init_s": t1 - t0, "compute_s": t2 - t1, "total_s": t2 - t0,
            "rows": int(row["rows"]), "checksum": int(row["checksum"] or 0)}


def main(cfg):
    spark = SparkSession.builder.appName(f"sae {cfg['run_id']} {cfg['point']}").getOrCreate()
    for spec in cfg.get("register", []):  # "module:function", called with the session
        module, _, name = spec.partition(":")
        getattr(importlib.import_module(module), name)(spark)
    os.makedirs(os.path.dirname(cfg["out"]), exist_ok=True)
    with open(cfg["out"], "a") as out:
        emit(out, {"event": "app", "pid": os.getpid(), "jvm_pid": os.getppid(), "time": time.time()})
        plan = [("prewarm", i) for i in range(cfg.get("prewarm", 0))] + [("rep", r) for r in cfg["reps"]]
        for n, (kind, rep) in enumerate(plan):
            print("sae-rep " + json.dumps({"event": "start", "repetition": rep, "kind": kind}), flush=True)
            result = query(spark, cfg)
            result.update(event="rep", repetition=rep, discarded=kind == "prewarm")
            emit(out, result)
            if n + 1 < len(plan) and cfg.get("pause"):
                time.sleep(cfg["pause"])
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
