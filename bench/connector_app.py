"""Spark app of bench/connector_bench.py: for every (reader, selectivity) runs ``reps`` queries
``count + sum(hash(every column)) WHERE total_amount < t`` on a fresh DataFrame, pausing between
queries so the controller's counter samples separate them. Prints ``bench-query <json>`` lines.

argv[1]: {"path", "vanilla", "options", "register", "thresholds": {"1": t, ...}, "reps", "pause"}
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
    if reader == "vanilla":
        return spark.read.parquet(cfg["vanilla"])
    opts = dict(cfg["options"], offload="true" if reader == "offload" else "false")
    return spark.read.format("sae-ceph").options(**opts).load(cfg["path"])


for sel, t in cfg["thresholds"].items():
    for rep in range(cfg["reps"]):
        for reader in ("offload", "no-offload", "vanilla"):
            time.sleep(cfg["pause"])
            start = time.time()
            df = frame(reader).where(F.col("total_amount") < F.lit(t))
            row = df.agg(F.count(F.lit(1)).alias("n"),
                         F.sum(F.hash(*[F.col(c) for c in df.columns]).cast("long")).alias("h")).first()
            end = time.time()
            print("bench-query " + json.dumps({"reader": reader, "sel": sel, "rep": rep, "start": start,
                                               "end": end, "rows": row["n"], "checksum": row["h"]}), flush=True)
spark.stop()
