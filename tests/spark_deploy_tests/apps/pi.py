"""Estimate pi on the cluster and report the executors' pyarrow (proves PYSPARK_PYTHON).

The sampling function lives in pihelper.py, which executors get only through --py-files.

Usage: pi.py SAMPLES [MARKER]: with MARKER, keep the driver (and its metrics endpoints) up
until that file exists (at most 15 minutes).
"""
import os
import sys
import time
from operator import add

from pyspark.sql import SparkSession

from pihelper import inside   # shipped with --py-files


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    spark = SparkSession.builder.appName("sae-pi").getOrCreate()
    sc = spark.sparkContext
    count = sc.parallelize(range(n), 4).map(inside).reduce(add)
    versions = sc.parallelize(range(2), 2).map(lambda _: __import__("pyarrow").__version__).collect()
    print("PI_ESTIMATE %.6f" % (4.0 * count / n))
    print("EXECUTOR_PYARROW %s" % ",".join(sorted(set(versions))), flush=True)
    start = time.time()
    while len(sys.argv) > 2 and not os.path.exists(sys.argv[2]) and time.time() - start < 900:
        time.sleep(0.5)
    spark.stop()
