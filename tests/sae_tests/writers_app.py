"""The test application of test_writers.py: one Spark application writing the same generated
dataframe through each writer in turn, reading each back.

Argument: JSON ``{"rows", "sync", "writers": [{"name", "output", "job_conf"}]}``. Around each
write job it prints ``SAE-WRITE begin|end <name>`` and waits for ``<sync>/<name>.<begin|end>``
(the controller counts Ceph's operations in between), then prints ``SAE-RESULT <json>``: the rows
and checksum read back and the input's, or the write's ``error``.
"""
import json
import os
import sys
import time

from pyspark.sql import SparkSession, functions as F

WAIT = 300


def wait_for(path):
    deadline = time.time() + WAIT
    while not os.path.exists(path):
        if time.time() > deadline:
            print(f"no {path} after {WAIT}s", file=sys.stderr)
            sys.exit(3)
        time.sleep(0.1)


def checksum(df):
    row = df.select(F.count("*").alias("rows"),
                    F.sum(F.xxhash64("id", "v", "s").cast("decimal(38,0)")).cast("string").alias("sum")).first()
    return row["rows"], row["sum"]


def main(arg):
    spec = json.loads(arg)
    spark = SparkSession.builder.appName("sae-writers").getOrCreate()
    df = spark.range(spec["rows"], numPartitions=2).select(
        "id", (F.col("id") * 7919 % 1000003).alias("v"), F.concat(F.lit("row-"), F.col("id")).alias("s"))
    expected = checksum(df)
    for w in spec["writers"]:
        session = {k: v for k, v in w["job_conf"].items() if k.startswith("spark.sql.")}
        options = {k.removeprefix("spark.hadoop."): v for k, v in w["job_conf"].items() if k not in session}
        for k, v in session.items():
            spark.conf.set(k, v)
        result = {"writer": w["name"], "error": None, "input_rows": expected[0], "input_checksum": expected[1]}
        for phase in ("begin", "end"):
            print(f"SAE-WRITE {phase} {w['name']}", flush=True)
            wait_for(os.path.join(spec["sync"], f"{w['name']}.{phase}"))
            if phase == "begin":
                try:
                    df.write.options(**options).parquet(w["output"])
                except Exception as e:   # the next writers still write; the test reports this one's error
                    java = getattr(e, "java_exception", None)
                    result["error"] = (str(java) if java is not None else str(e)).splitlines()[0][:600]
        for k in session:
            spark.conf.unset(k)
        if result["error"] is None:
            result["rows"], result["checksum"] = checksum(spark.read.parquet(w["output"]))
        print("SAE-RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
