"""Run one configuration of sae's Spark application (sae/app/run_points.py) in Spark's local mode:
``python keyed_app.py CONFIG.json``, CONFIG as the controller writes one (its points' ``out``
file receives the events), plus ``"jar"`` (the indexed cache's) and ``"vanilla"`` (the path of
the dataset's files). After the points it writes ``<out>.plans.json``: whether a fresh read of
the files after the points was answered from a cache (it must not be: the cache reader's copy is
its own). Exits, JVM included, when done."""
import json
import sys

from pyspark.sql import SparkSession

from sae.app import run_points

QUICK = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The JVM compiling with C1 only (sae's ``spark.jit=quick``): a short application's JVM spends
half its CPU compiling otherwise; and with the serial collector, for a small heap (in Spark's
local-cluster mode, three JVMs, it saved 8-13 of 66-71 CPU-s; in one JVM it saves little)."""


def main(path: str) -> None:
    cfg = json.loads(open(path).read())
    spark = (SparkSession.builder.master("local[2]").appName("sae keyed app")
             .config("spark.jars", cfg["jar"]).config("spark.driver.memory", "2g")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.driver.extraJavaOptions", QUICK)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        run_points.run_job(spark, cfg, set())
        plan = spark.read.parquet(cfg["vanilla"])._jdf.queryExecution().withCachedData().toString()
        with open(cfg["out"] + ".plans.json", "w") as f:
            json.dump({"vanilla_from_cache": "InMemoryRelation" in plan}, f)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
