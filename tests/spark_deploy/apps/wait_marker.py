"""Runs one job, then keeps the driver (and its metrics endpoints) up until a marker file appears."""
import os
import sys
import time

from pyspark.sql import SparkSession

if __name__ == "__main__":
    marker, limit = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 600
    spark = SparkSession.builder.appName("sae-wait").getOrCreate()
    print("ROWS %d" % spark.range(1000).count())
    print("WAITING", flush=True)
    start = time.time()
    while not os.path.exists(marker) and time.time() - start < limit:
        time.sleep(0.5)
    spark.stop()
