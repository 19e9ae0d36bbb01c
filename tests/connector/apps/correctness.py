"""Spark app for tests/connector/test_spark.py: runs every correctness query through the connector
(offload on and off) and vanilla Spark Parquet, prints one line ``sae-result <json>``.

argv[1]: {"path", "vanilla", "options", "register", "thresholds": {"1": t, ...}}
"""
import importlib
import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("sae connector correctness").getOrCreate()
for spec in cfg["register"]:
    module, _, fn = spec.partition(":")
    getattr(importlib.import_module(module), fn)(spark)


def connector(offload, **extra):
    opts = dict(cfg["options"], offload=str(offload).lower(), **extra)
    return spark.read.format("sae-ceph").options(**opts).load(cfg["path"])


def vanilla():
    return spark.read.parquet(cfg["vanilla"])


def agg(df):
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum("total_amount").alias("s")).first()
    return [row["n"], row["s"]]


out = {"selectivity": {}, "reply_columns": None}
for sel, t in cfg["thresholds"].items():
    where = F.col("total_amount") < F.lit(t)
    out["selectivity"][sel] = {"offload": agg(connector(True).where(where)),
                               "offload-x2": agg(connector(True, objects_per_partition="2").where(where)),
                               "no-offload": agg(connector(False).where(where)),
                               "vanilla": agg(vanilla().where(where))}
    if sel == "10":
        df = connector(True).where(where)
        pushed = spark.sparkContext._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted")
        out["pushed_plan"] = pushed

proj = connector(True, columns="total_amount,VendorID").where(F.col("total_amount") < F.lit(cfg["thresholds"]["10"]))
out["projection"] = {"columns": proj.columns, "agg": agg(proj),
                     "schema": [f.name for f in proj.schema.fields]}


def scan_columns(df):
    """Column names of the sae-ceph scan in df's executed plan (what the reader asks the OSDs for)."""
    plan = spark.sparkContext._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "simple")
    line = next(ln for ln in plan.splitlines() if "BatchScan sae-ceph[" in ln)
    return [c.split("#")[0] for c in line.split("[", 1)[1].split("]", 1)[0].split(", ")]


def sums(df):
    row = df.agg(F.count(F.lit(1)), F.sum("VendorID"), F.sum("trip_distance")).first()
    return list(row)


# Automatic pruning (the session extension): no columns option, the query decides.
t10 = cfg["thresholds"]["10"]
picked = connector(True).where(F.col("total_amount") < F.lit(t10)).select("VendorID", "trip_distance")
counted = connector(True).where(F.col("total_amount") < F.lit(t10))
out["pruning"] = {
    "select": {"scan": scan_columns(picked), "columns": picked.columns,
               "sums": sums(picked),
               "vanilla": sums(vanilla().where(F.col("total_amount") < F.lit(t10)).select("VendorID", "trip_distance"))},
    "count": {"scan": scan_columns(connector(True).groupBy().count()),
              "filtered_scan": scan_columns(counted.groupBy().count()),
              "n": connector(False).count(), "filtered_n": counted.count()},
    "agg": {"scan": scan_columns(counted.agg(F.sum("total_amount"))), "agg": agg(counted)},
    "star": {"scan": scan_columns(connector(True)), "schema": connector(True).columns},
}

odd = "(total_amount * 2 < 20) OR (trip_distance > 3)"
out["unsupported"] = {"offload": agg(connector(True).where(odd)), "no-offload": agg(connector(False).where(odd)),
                      "vanilla": agg(vanilla().where(odd))}

# One DataFrame, several queries: pushed filters must not leak from one query into the next.
t10, t1 = cfg["thresholds"]["10"], cfg["thresholds"]["1"]
queries = [("lt10", lambda d: d.where(F.col("total_amount") < t10)), ("all", lambda d: d),
           ("or", lambda d: d.where((F.col("total_amount") < t1) | (F.col("total_amount") > 60))),
           ("lt1", lambda d: d.where(F.col("total_amount") < t1)), ("odd", lambda d: d.where(odd)),
           ("all-again", lambda d: d)]
repeated = {}
for name, source in (("offload", connector(True)), ("no-offload", connector(False)), ("vanilla", vanilla())):
    repeated[name] = [agg(q(source)) for _, q in queries]
    source.createOrReplaceTempView(f"t_{name.replace('-', '_')}")
    view = f"t_{name.replace('-', '_')}"
    repeated[name] += [list(spark.sql(f"SELECT count(*), sum(total_amount) FROM {view} WHERE total_amount < {t1}").first()),
                       list(spark.sql(f"SELECT count(*), sum(total_amount) FROM {view}").first())]
out["repeated"] = {"queries": [n for n, _ in queries] + ["sql-lt1", "sql-all"], **repeated}
print("sae-result " + json.dumps(out), flush=True)
spark.stop()
