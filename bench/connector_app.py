"""Spark app of bench/connector_bench.py: for every (selectivity, query, repetition, reader) runs
``count + sum(hash(columns)) WHERE total_amount < t`` on a fresh DataFrame, pausing between
queries so the controller's counter samples separate them. Prints ``bench-query <json>`` lines.

argv[1]: {"path", "vanilla", "options", "register", "thresholds": {"1": t, ...}, "reps", "pause",
          "readers": {name: {option: value} | "vanilla"}, "queries": {name: [columns] | []}}
A query's columns ``[]`` means every column; the connector prunes its scan to the ones used.
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


def frame(reader):
    opts = cfg["readers"][reader]
    if opts == "vanilla":
        return spark.read.parquet(cfg["vanilla"])
    return spark.read.format("sae-ceph").options(**cfg["options"], **opts).load(cfg["path"])


for sel, t in cfg["thresholds"].items():
    for query, columns in cfg["queries"].items():
        for rep in range(cfg["reps"]):
            for reader in cfg["readers"]:
                time.sleep(cfg["pause"])
                start = time.time()
                df = frame(reader).where(F.col("total_amount") < F.lit(t))
                row = df.agg(F.count(F.lit(1)).alias("n"),
                             F.sum(F.hash(*[F.col(c) for c in columns or df.columns]).cast("long")).alias("h")).first()
                end = time.time()
                print("bench-query " + json.dumps({"reader": reader, "sel": sel, "query": query, "rep": rep,
                                                   "start": start, "end": end, "rows": row["n"],
                                                   "checksum": row["h"]}), flush=True)
spark.stop()
