"""Spark app of bench/connector_bench.py: for every (selectivity, query, table, repetition, reader)
runs ``count + sum(hash(columns)) WHERE total_amount < t`` on a fresh DataFrame, pausing between
queries so the controller's counter samples separate them. Prints ``bench-query <json>`` lines,
with the connector's per-query sums (``scan``: the object class's phases and counts) for the
sae-ceph readers.

argv[1]: {"tables": {name: {"path", "vanilla", "empty"}}, "options", "register", "thresholds": {"1": t, ...},
          "reps", "warmup", "pause", "readers": {name: {option: value} | "vanilla"}, "queries": {name: [columns] | []}}
``warmup`` rounds of every reader's queries on the full table run first (printed with rep -1).
A query's columns ``[]`` means every column; the connector prunes its scan to the ones used. An
``empty`` table (no file) is read with the ``full`` table's schema; the others infer their own.
"""
import importlib
import json
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("sae connector bench").getOrCreate()
for spec in cfg["register"]:
    module, _, fn = spec.partition(":")
    getattr(importlib.import_module(module), fn)(spark)
tables = cfg["tables"]
schema = spark.read.parquet(tables["full"]["vanilla"]).schema


def frame(reader, table):
    opts, t = cfg["readers"][reader], tables[table]
    given = schema if t.get("empty") else None
    if opts == "vanilla":
        r = spark.read.schema(given) if given else spark.read
        return r.parquet(t["vanilla"])
    r = spark.read.format("sae-ceph").options(**cfg["options"], **opts)
    return (r.schema(given) if given else r).load(t["path"])


def run(sel, query, table, rep, reader):
    time.sleep(cfg["pause"])
    start = time.time()
    columns = cfg["queries"][query]
    df = frame(reader, table).where(F.col("total_amount") < F.lit(cfg["thresholds"][sel]))
    agg = df.agg(F.count(F.lit(1)).alias("n"),
                 F.sum(F.hash(*[F.col(c) for c in columns or df.columns]).cast("long")).alias("h"))
    row = agg.collect()[0]
    end = time.time()
    scan = json.loads(spark._jvm.sae.connector.ScanMetrics.json(agg._jdf)) if cfg["readers"][reader] != "vanilla" else {}
    print("bench-query " + json.dumps({"reader": reader, "sel": sel, "query": query, "table": table, "rep": rep,
                                       "start": start, "end": end, "rows": row["n"], "checksum": row["h"],
                                       "scan": scan}), flush=True)


# Warm-up: every reader's queries on the full table, once each (rep -1), so the measured ones
# find the JVMs' code compiled (the first minutes of an application are mostly JIT compilation).
for _ in range(cfg.get("warmup", 1)):
    for sel in cfg["thresholds"]:
        for query in cfg["queries"]:
            for reader in cfg["readers"]:
                run(sel, query, "full", -1, reader)
for sel in cfg["thresholds"]:
    for query in cfg["queries"]:
        for table in tables:
            for rep in range(cfg["reps"]):
                for reader in cfg["readers"]:
                    run(sel, query, table, rep, reader)
spark.stop()
