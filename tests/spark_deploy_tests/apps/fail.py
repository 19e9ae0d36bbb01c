"""Fails on purpose: 'exit N' exits with N before any Spark work, 'raise' fails inside a job."""
import sys

from pyspark.sql import SparkSession


def boom(x):
    raise ValueError("boom on purpose")


if __name__ == "__main__":
    if sys.argv[1] == "exit":
        print("exiting with %s on purpose" % sys.argv[2])
        sys.exit(int(sys.argv[2]))
    spark = SparkSession.builder.appName("sae-fail").getOrCreate()
    spark.sparkContext.parallelize(range(4), 2).map(boom).collect()
