"""Spark app for tests/connector/test_spark.py: runs every correctness query through the connector
(modes offload, auto, auto with every object read whole and scanned in the task, and no-offload) and
vanilla Spark Parquet, prints one line ``sae-result <json>``.

argv[1]: {"path", "vanilla", "options", "register", "thresholds": {"1": t, ...},
          "zones": {"path", "vanilla"}, "shapes": {name: SQL statement},
          "edge": {"path", "vanilla", "queries": {name: SQL statement over the view edge},
                   "csv": {"path", "vanilla", "schema": DDL} (the same table as CSV)}}
"""
import importlib
import json
import sys
import time
import urllib.request

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("sae connector correctness").getOrCreate()
for spec in cfg["register"]:
    module, _, fn = spec.partition(":")
    getattr(importlib.import_module(module), fn)(spark)


def connector(offload, **extra):
    opts = dict(cfg["options"], mode="offload" if offload else "no-offload", **extra)   # Mode.java
    return spark.read.format("sae-ceph").options(**opts).load(cfg["path"])


def auto(**extra):
    return spark.read.format("sae-ceph").options(**dict(cfg["options"], mode="auto", **extra)).load(cfg["path"])


def vanilla():
    return spark.read.parquet(cfg["vanilla"])


def answered(df):
    """The count and sum of total_amount, the scan's metrics and the simple plan, from one query."""
    q = df.agg(F.count(F.lit(1)).alias("n"), F.sum("total_amount").alias("s"))
    row = q.collect()[0]
    return ([row["n"], row["s"]], json.loads(spark._jvm.sae.connector.ScanMetrics.json(q._jdf)),
            spark.sparkContext._jvm.PythonSQLUtils.explainString(q._jdf.queryExecution(), "simple"))


def agg(df):
    return answered(df)[0]


out = {"selectivity": {}, "reply_columns": None}
for sel, t in cfg["thresholds"].items():
    where = F.col("total_amount") < F.lit(t)
    out["selectivity"][sel] = {"offload": agg(connector(True).where(where)),
                               "offload-x2": agg(connector(True, objects_per_partition="2").where(where)),
                               "no-offload": agg(connector(False).where(where)),
                               "vanilla": agg(vanilla().where(where))}
    for name, extra in (("auto-local", {"pushback": "always"}), ("auto", {})):   # every object read whole; auto's choice
        answer, scan, plan = answered(auto(**extra).where(where))
        out["selectivity"][sel].update({name: answer, f"{name}-scan": scan, f"{name}-plan": plan})
    if sel == "10":
        df = connector(True).where(where)
        pushed = spark.sparkContext._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted")
        out["pushed_plan"] = pushed

spark.conf.set("spark.sql.files.maxPartitionBytes", str(1 << 20))   # packed by bytes: an object per task
out["tasks"] = {"slots": spark.sparkContext.defaultParallelism, "offload": connector(True).rdd.getNumPartitions(),
                "auto": auto().rdd.getNumPartitions(), "no-offload": connector(False).rdd.getNumPartitions()}
# mode auto plans a query by what the last one of its shape (a shape of its own here) found: one
# task per slot where none of its tasks found the storage side short of CPU, else packed by bytes
shape_of_its_own = auto(compression="none").where(F.col("total_amount") < F.lit(cfg["thresholds"]["10"]))
out["auto_layouts"] = [answered(shape_of_its_own)[1] for _ in range(3)]
spark.conf.unset("spark.sql.files.maxPartitionBytes")

# mode auto with every object in one task, repeated so its cost model is measured: objects kept
# back at the end of the task's list are read whole and scanned while the others' replies are awaited
one_percent = F.col("total_amount") < F.lit(cfg["thresholds"]["1"])
out["one_task"] = [answered(auto(objects_per_partition="1000").where(one_percent))[:2] for _ in range(8)]
out["one_task_half"] = answered(auto(objects_per_partition="1000", pushback="half").where(one_percent))

proj = connector(True, columns="total_amount,VendorID").where(F.col("total_amount") < F.lit(cfg["thresholds"]["10"]))
out["projection"] = {"columns": proj.columns, "agg": agg(proj),
                     "schema": [f.name for f in proj.schema.fields]}


def scan_line(df):
    plan = spark.sparkContext._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "simple")
    return next(ln for ln in plan.splitlines() if "BatchScan sae-ceph[" in ln)


def scan_columns(df):
    """Column names the sae-ceph scan hands Spark in df's executed plan."""
    inner = scan_line(df).split("[", 1)[1].split("]", 1)[0]
    return [c.split("#")[0] for c in inner.split(", ") if c]


def osd_columns(df):
    """Columns the scan asks the OSDs for ("*" = every column)."""
    tail = scan_line(df).split("OsdColumns: ", 1)[1]
    return "*" if tail.startswith("*") else tail[1:].split("]", 1)[0].split(", ")


def sums(df):
    row = df.agg(F.count(F.lit(1)), F.sum("VendorID"), F.sum("trip_distance")).first()
    return list(row)


# Pruning: no columns option, the query decides; pushed filters' columns stay in the OSD.
t10 = cfg["thresholds"]["10"]
picked = connector(True).where(F.col("total_amount") < F.lit(t10)).select("VendorID", "trip_distance")
counted = connector(True).where(F.col("total_amount") < F.lit(t10))
rows_only = connector(True, operators="false")   # the OSDs filter and project; Spark aggregates
out["pruning"] = {
    "select": {"scan": scan_columns(picked), "osd": osd_columns(picked), "columns": picked.columns,
               "sums": sums(picked),
               "vanilla": sums(vanilla().where(F.col("total_amount") < F.lit(t10)).select("VendorID", "trip_distance"))},
    "count": {"scan": scan_columns(rows_only.groupBy().count()), "osd": osd_columns(rows_only.groupBy().count()),
              "filtered_scan": scan_columns(rows_only.where(F.col("total_amount") < F.lit(t10)).groupBy().count()),
              "n": connector(False).count(), "filtered_n": counted.count(),
              "no_offload_osd": osd_columns(connector(False).where(F.col("total_amount") < F.lit(t10)).select("VendorID"))},
    "agg": {"scan": scan_columns(rows_only.where(F.col("total_amount") < F.lit(t10)).agg(F.sum("total_amount"))),
            "agg": agg(counted)},
    "star": {"scan": scan_columns(connector(True)), "schema": connector(True).columns},
}
out["schema"] = {"offload": connector(True).schema.simpleString(), "no-offload": connector(False).schema.simpleString(),
                 "vanilla": vanilla().schema.simpleString()}

# Queries a user writes: every reader must give vanilla's answer.
t1 = cfg["thresholds"]["1"]


def self_join(d):
    a = d.where(F.col("total_amount") < t1).select("PULocationID", "total_amount")
    b = d.where(F.col("trip_distance") > 29).select("PULocationID", "trip_distance")
    j = a.join(b, "PULocationID")
    return list(j.agg(F.count(F.lit(1)), F.sum(F.col("total_amount") + F.col("trip_distance"))).first())


def union(d):
    u = d.where(F.col("total_amount") < t1).select(F.col("VendorID").alias("v")).union(
        d.where(F.col("trip_distance") > 29).select(F.col("PULocationID").alias("v")))
    return list(u.agg(F.count(F.lit(1)), F.sum("v")).first())


def group_by(d):
    g = d.where(F.col("total_amount") < t10).groupBy("payment_type").agg(F.count(F.lit(1)), F.sum("total_amount"))
    return sorted([list(r) for r in g.collect()])


def ordered_limit(d):
    rows = (d.where(F.col("total_amount") < t10)
            .orderBy(F.col("total_amount").desc(), "tpep_pickup_datetime", "tpep_dropoff_datetime", "trip_distance",
                     "PULocationID", "DOLocationID").limit(5).collect())
    return [[str(v) for v in r] for r in rows]


def strings(d):
    flag = F.col("store_and_fwd_flag")
    return [d.where(flag == "Y").count(), d.where(flag.startswith("N")).count(), d.where(flag.contains("Y")).count(),
            d.where(flag.isin("Y", "Z")).count(), d.where(flag != "N").count(), d.where(flag > "M").count()]


def timestamps(d):
    pick, drop = F.col("tpep_pickup_datetime"), F.col("tpep_dropoff_datetime")
    early = d.where(pick < F.lit("2024-01-05 00:00:00").cast("timestamp_ntz"))
    row = early.agg(F.count(F.lit(1)), F.min(drop), F.max(drop), F.sum(F.hour(pick))).first()
    return [str(v) for v in row]


def nulls(d):
    fee = F.col("Airport_fee")
    return [d.where(fee.isNull()).count(), d.where(fee.isNotNull()).count(),
            d.where(fee.isNull() | (F.col("total_amount") < t1)).count(),
            d.where(F.col("VendorID").eqNullSafe(2)).count(), d.where(F.col("PULocationID").isin(132, 138)).count()]


queries = {"self_join": self_join, "union": union, "group_by": group_by, "ordered_limit": ordered_limit,
           "strings": strings, "timestamps": timestamps, "nulls": nulls}
out["queries"] = {name: {"offload": q(connector(True)), "no-offload": q(connector(False)), "vanilla": q(vanilla())}
                  for name, q in queries.items()}

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

# The connector's per-query sums (custom metrics, read from the plan that collect() ran: first()
# runs another plan) beside the count, and what Spark's own UI
# (its REST API of the SQL tab) shows for the last scan.
metrics = {}
for name, off in (("offload", True), ("no-offload", False)):
    q = connector(off, operators="false").where(F.col("total_amount") < F.lit(t10)).agg(F.count(F.lit(1)).alias("n"))
    metrics[name] = {"rows": q.collect()[0]["n"], "scan": json.loads(spark._jvm.sae.connector.ScanMetrics.json(q._jdf))}
metrics["vanilla"] = json.loads(spark._jvm.sae.connector.ScanMetrics.json(vanilla().groupBy().count()._jdf))
sc = spark.sparkContext
for _ in range(60):   # the UI's listener aggregates an execution's metrics after it ended, asynchronously
    with urllib.request.urlopen(f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/sql?details=true&length=1000") as r:
        last = max(json.load(r), key=lambda e: e["id"] if "sae-ceph" in json.dumps(e) else -1)
    metrics["ui"] = {m["name"]: m["value"] for node in last["nodes"] if node["nodeName"].startswith("BatchScan")
                     for m in node["metrics"]}
    if last["status"] == "COMPLETED" and "N/A" not in metrics["ui"].values():
        break
    time.sleep(0.5)
out["metrics"] = metrics

# Every row passes and every column is asked for: whole objects (Spark's Parquet reader) must give
# exactly the rows Arrow IPC replies and vanilla give, every column hashed.
def whole_rows(d):
    q = d.where(F.col("total_amount") < F.lit(cfg["thresholds"]["100"]))
    agg = q.agg(F.count(F.lit(1)).alias("n"), F.sum(F.hash(*[F.col(c) for c in q.columns]).cast("long")).alias("h"))
    row = agg.collect()[0]
    return {"rows": [row["n"], row["h"]], "scan": json.loads(spark._jvm.sae.connector.ScanMetrics.json(agg._jdf))}


out["whole"] = {"offload": whole_rows(connector(True)), "ipc": whole_rows(connector(True, whole_objects="false")),
                "no-offload": whole_rows(connector(False)), "auto-local": whole_rows(auto(pushback="always")),
                "vanilla": whole_rows(vanilla())}

# sae's query shapes (sae.planning.queries), each statement over the views trips and zones of
# one reader; the offload reader with and without its aggregates in the OSDs.
def shape(name, sql, make):
    make(cfg["path"]).createOrReplaceTempView("trips")
    make(cfg["zones"]["path"]).createOrReplaceTempView("zones")
    df = spark.sql(sql)
    rows = [[v if isinstance(v, (int, float, str)) or v is None else str(v) for v in r] for r in df.collect()]
    plan = spark.sparkContext._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "simple")
    return {"rows": rows, "scan": json.loads(spark._jvm.sae.connector.ScanMetrics.json(df._jdf)),
            "scans": [ln.strip() for ln in plan.splitlines() if "BatchScan sae-ceph[" in ln]}


def sae_reader(**extra):
    return lambda path: spark.read.format("sae-ceph").options(**dict(cfg["options"], **extra)).load(path)


shape_readers = {"offload": sae_reader(mode="offload"), "offload-rows": sae_reader(mode="offload", operators="false"),
                 "auto": sae_reader(mode="auto"), "auto-local": sae_reader(mode="auto", pushback="always"),
                 "no-offload": sae_reader(mode="no-offload"),
                 "vanilla": lambda path: spark.read.parquet(cfg["vanilla"] if path == cfg["path"] else cfg["zones"]["vanilla"])}
out["shapes"] = {name: {reader: shape(name, sql, make) for reader, make in shape_readers.items()}
                 for name, sql in cfg["shapes"].items()}

# Edge cases over the protocol's sample table: one small object, so with broadcasts off (a table
# Spark may broadcast keeps its filters in Spark too, which stops aggregate pushdown).
def edge(sql, make):
    make(cfg["edge"]["path"]).createOrReplaceTempView("edge")
    try:
        df = spark.sql(sql)
        rows = [[v if isinstance(v, (int, float, str)) or v is None else str(v) for v in r] for r in df.collect()]
    except Exception as e:   # the overflow: every reader must fail (Py4J's text holds the JVM's cause)
        return {"error": " ".join(str(e).split())[:5000]}
    plan = spark.sparkContext._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "simple")
    return {"rows": rows, "scans": [ln.strip() for ln in plan.splitlines() if "BatchScan sae-ceph[" in ln]}


def csv_reader(**extra):
    """The edge table stored as CSV, through the connector with its schema given."""
    csv = cfg["edge"]["csv"]
    return lambda path: spark.read.format("sae-ceph").options(**dict(cfg["options"], **extra)).schema(
        csv["schema"]).load(csv["path"])


edge_readers = {"offload": sae_reader(mode="offload"), "offload-index": sae_reader(mode="offload-index"),
                "auto": sae_reader(mode="auto"),
                "auto-local": sae_reader(mode="auto", pushback="always"), "no-offload": sae_reader(mode="no-offload"),
                "vanilla": lambda path: spark.read.parquet(cfg["edge"]["vanilla"]),
                "csv-offload": csv_reader(mode="offload"), "csv-no-offload": csv_reader(mode="no-offload"),
                "csv-auto-local": csv_reader(mode="auto", pushback="always"),
                "csv-vanilla": lambda path: spark.read.schema(cfg["edge"]["csv"]["schema"]).option(
                    "header", "true").csv(cfg["edge"]["csv"]["vanilla"])}
spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
out["edge"] = {name: {reader: edge(sql, make) for reader, make in edge_readers.items()}
               for name, sql in cfg["edge"]["queries"].items()}
spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def refusal(make):
    """The one-line error a load refuses with (the missing schema at load(), what a given schema
    does not fit when the query's scan is built), or None."""
    try:
        make().count()
        return None
    except Exception as e:
        return " ".join(str(e).split())[:2000]


csv_path, csv_schema = cfg["edge"]["csv"]["path"], cfg["edge"]["csv"]["schema"]
read = lambda **o: spark.read.format("sae-ceph").options(**dict(cfg["options"], **o))   # noqa: E731
without_library = {k: v for k, v in cfg["options"].items() if k != "scan_library"}
out["option_refusals"] = {
    "auto_without_library": refusal(lambda: spark.read.format("sae-ceph").options(**without_library).option(
        "mode", "auto").load(cfg["path"])),
    "pushback_outside_auto": refusal(lambda: read(pushback="always").load(cfg["path"])),
    "pushback_unknown": refusal(lambda: read(mode="auto", pushback="sometimes").load(cfg["path"])),
    "library_missing": refusal(lambda: read(mode="auto", pushback="always", scan_library="/nonexistent/libsae_scan.so")
                               .load(cfg["path"]).where(F.col("total_amount") < 0).collect()),
}
out["csv_refusals"] = {
    "no_schema": refusal(lambda: read().load(csv_path)),
    "columns": refusal(lambda: read(columns="id").schema(csv_schema).load(csv_path)),
    "map_type": refusal(lambda: read().schema("id BIGINT, m MAP<STRING, INT>").load(csv_path)),
}

opts = ", ".join(f"{k} '{v}'" for k, v in dict(cfg["options"], path=cfg["path"]).items())
spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW t_using USING `sae-ceph` OPTIONS ({opts})")
out["sql_using"] = list(spark.sql(f"SELECT count(*), sum(total_amount) FROM t_using WHERE total_amount < {t1}").first())
print("sae-result " + json.dumps(out), flush=True)
spark.stop()
