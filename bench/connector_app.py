"""Spark app of bench/connector_bench.py: for every (selectivity, query, table, repetition, reader)
runs ``count + sum(hash(columns)) WHERE total_amount < t``, or one of sae's query shapes (its
statement at that selectivity), on a fresh DataFrame with sae's own query (``run_points.query``,
shipped with ``--py-files``), pausing between queries so the
controller's counter samples separate them. Prints ``bench-query <json>`` lines, with the
connector's per-query sums (``scan``: the object class's phases and counts) for the sae-ceph
readers.

argv[1]: {"sources": {reader: {table: read source}}, "empty": [tables without files], "register",
          "thresholds": {"1": t, ...}, "reps", "warmup", "pause", "queries": {name: {"columns": [columns] | []} | {"sql": {sel: statement}, "zones": {reader: path} | null,
          "float_digits", "answer_rows"}}}
(a read source: ``sae.planning.readers.ReadSource.app_config()``). ``warmup`` rounds of every reader's
queries on the full table run first (printed with rep -1). A query's columns ``[]`` means every
column; the connector prunes its scan to the ones used. An ``empty`` table is read with the
``full`` table's schema; the others infer their own.
"""
import json
import sys
import time

from pyspark.sql import SparkSession

from run_points import query, register

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("sae connector bench").getOrCreate()
register(spark, cfg["register"], set())
sources = cfg["sources"]
full = next(iter(sources.values()))["full"]
schema = spark.read.format(full["format"]).options(**full["options"]).load(full["path"]).schema


def run(sel, name, table, rep, reader):
    spec = cfg["queries"][name]
    if "sql" in spec and table != "full":
        return   # the query shapes run on the full table only
    time.sleep(cfg["pause"])
    q = dict(sources[reader][table], column="total_amount", threshold=cfg["thresholds"][sel],
             columns=spec.get("columns", []))
    if "sql" in spec:
        q.update(sql=spec["sql"][sel], zones=(spec["zones"] or {}).get(reader), float_digits=spec["float_digits"],
                 answer_rows=spec["answer_rows"])
    r = query(spark, q, schema if table in cfg["empty"] else None)
    print("bench-query " + json.dumps({"reader": reader, "sel": sel, "query": name, "table": table, "rep": rep,
                                       "start": r["start"], "end": r["end"], "rows": r["rows"],
                                       "checksum": r["checksum"], "scan": r.get("scan", {}),
                                       **({"answer": r["answer"]} if "answer" in r else {})}), flush=True)


# Warm-up: every reader's queries on the full table, once each (rep -1), so the measured ones
# find the JVMs' code compiled (the first minutes of an application are mostly JIT compilation).
for _ in range(cfg.get("warmup", 1)):
    for sel in cfg["thresholds"]:
        for name in cfg["queries"]:
            for reader in sources:
                run(sel, name, "full", -1, reader)
for sel in cfg["thresholds"]:
    for name in cfg["queries"]:
        for table in next(iter(sources.values())):
            for rep in range(cfg["reps"]):
                for reader in sources:
                    run(sel, name, table, rep, reader)
spark.stop()
