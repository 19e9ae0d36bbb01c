"""A small PySpark application for class data sharing (spark_deploy.class_sharing.warm): its
driver, in local mode, runs what most applications run (a Parquet write and a filtered read,
an aggregate, a join, a sort and, where the node's Python has pyarrow, an Arrow exchange with a
Python worker), so that the archive it saves when it exits holds the classes the first real
application's JVMs would load. Writes only below a temporary directory it removes."""
import importlib.util
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main():
    spark = SparkSession.builder.appName("spark-deploy class archive").getOrCreate()
    with tempfile.TemporaryDirectory(prefix="spark-deploy-warm-") as tmp:
        (spark.range(10_000).select("id", (F.col("id") % 7).alias("k"), F.col("id").cast("string").alias("s"),
                                    F.timestamp_seconds("id").alias("t"), (F.col("id") / 3).alias("d"))
         .write.parquet(f"{tmp}/rows"))
        rows = spark.read.parquet(f"{tmp}/rows")
        rows.where("k < 3 AND d > 10").groupBy("k").agg(F.sum("d"), F.count("*"), F.max("t")).collect()
        rows.join(rows.select("k").distinct(), "k").orderBy(F.desc("d")).limit(5).collect()
        if importlib.util.find_spec("pyarrow"):
            rows.mapInArrow(lambda batches: batches, rows.schema).count()
    spark.stop()


if __name__ == "__main__":
    main()
