"""Benchmark: the indexed cache (sae.indexed) against Spark's own cache, in one local-mode
application, both measured in the same run.

Data: ``--rows`` taxi trips from data_deploy's generator, read from Parquet; the key is
``tpep_pickup_datetime`` (a timestamp to the second: about one trip per key, a few share one).
Reference: the same DataFrame ``.cache()``d and materialized (Spark's compressed columnar cache).
Measured, the median of ``--repeat`` runs after a warm-up:

- lookups of 1, 100 and 10,000 keys: ``get_rows(keys).collect()``, and ``frame.df.filter(isin)``
  (the relation's path), against ``cached.filter(isin(keys)).collect()`` (the ``isin`` Column
  built before the clock starts: PySpark builds one of 10,000 values a Py4J call each);
- inner joins with probe sides of 0.01 %, 0.1 %, 1 % and 10 % of the rows (the key and a column,
  cached first): ``frame.join(probe, "k")`` against ``cached.join(probe, key == k)`` (Spark picks
  its plan: a broadcast hash join for small probes), every row and column written to Spark's
  ``noop`` sink;
- the build (create_index) against ``.cache()`` + ``count()``, both from Parquet after a warm-up
  scan, memory of each, and appends of 0.1 % and 1 % new rows (rows/s) against indexing the
  union afresh.

Answers are checked equal (row counts and an order-free checksum) before anything is timed.
Usage: .venv/bin/python bench/indexed_bench.py [--rows 2000000] [--repeat 5] [--partitions 8]
"""
from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import data_deploy
import sae.indexed as ix

KEY = "tpep_pickup_datetime"
LOOKUPS = (1, 100, 10_000)
PROBES = (0.0001, 0.001, 0.01, 0.1)
APPENDS = (0.001, 0.01)


def timed(fn, repeat: int) -> float:
    """Median seconds of ``fn()`` over ``repeat`` runs after one warm-up."""
    fn()
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def fingerprint(df) -> tuple[int, int]:
    hashes = F.xxhash64(*[F.col(f"`{c}`") for c in df.columns]).cast("decimal(38,0)")
    r = df.agg(F.count(F.lit(1)), F.sum(hashes)).first()
    return r[0], int(r[1] or 0)


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="taxi trips to generate (default 2,000,000)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per measurement after a warm-up (default 5)")
    ap.add_argument("--partitions", type=int, default=8, help="index partitions (default 8)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sae-indexed-bench-") as tmp:
        data_deploy.generate(args.rows, out=Path(tmp) / "trips", rows_per_file=250_000)
        spark = (SparkSession.builder.master("local[2]").appName("sae indexed bench")
                 .config("spark.jars", str(ix.jar())).config("spark.driver.memory", "8g")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.local.dir", str(Path(tmp) / "spark")).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        try:
            run(spark, spark.read.parquet(str(Path(tmp) / "trips")), args)
        finally:
            spark.stop()


def run(spark, source, args) -> None:
    rows, repeat = args.rows, args.repeat
    noop(source)   # a warm-up scan: both builds below read Parquet with a warm JVM
    frame = ix.create_index(source, KEY, args.partitions)
    cached = source.cache()   # from here on, plans over `source` read Spark's cache
    t = time.perf_counter()
    cached.count()
    cache_s = time.perf_counter() - t
    m = frame.memory()
    cache_bytes = sum(i.memSize() for i in spark.sparkContext._jsc.sc().getRDDStorageInfo()
                      if not i.name().startswith("sae.indexed"))
    print(f"{rows:,} rows, {args.partitions} partitions, median of {repeat} after a warm-up\n")
    print(f"build: index {m.build_seconds:.2f} s, .cache()+count {cache_s:.2f} s "
          f"(index / cache {m.build_seconds / cache_s:.2f}x)")
    t = m.total
    print(f"memory: index rows {t.row_bytes / 1e6:.1f} MB + headers {t.header_bytes / 1e6:.1f} MB + key maps "
          f"{t.index_bytes / 1e6:.1f} MB (maps / rows {100 * m.index_share:.2f} %); Spark's columnar cache "
          f"{cache_bytes / 1e6:.1f} MB\n")

    sample = [r[0] for r in source.select(KEY).sample(fraction=min(1.0, 15_000 / rows), seed=1).collect()]
    rng = random.Random(2)
    print(f"{'lookup':<14}{'get_rows ms':>12}{'df.filter ms':>14}{'.cache() ms':>13}{'cache/get_rows':>16}"
          f"{'cache/filter':>14}")
    for n in LOOKUPS:
        keys = rng.sample(sample, min(n, len(sample)))
        # timestamp_ntz literals: a Python datetime is a timestamp literal, which casts the column
        # (no push-down, no pruning); the key's own type keeps the filter on the column
        condition = F.col(KEY).isin([F.lit(k).cast("timestamp_ntz") for k in keys])
        index_rows, filtered, spark_rows = frame.get_rows(keys), frame.df.filter(condition), cached.filter(condition)
        assert fingerprint(index_rows) == fingerprint(spark_rows) == fingerprint(filtered), n
        a = timed(lambda: frame.get_rows(keys).collect(), repeat)   # get_rows runs the lookup's job
        b, c = timed(filtered.collect, repeat), timed(spark_rows.collect, repeat)
        print(f"{n:>6,} keys   {a * 1e3:>12.1f}{b * 1e3:>14.1f}{c * 1e3:>13.1f}{c / a:>15.1f}x{c / b:>13.1f}x")

    print(f"\n{'join probe':<14}{'probe rows':>11}{'out rows':>10}{'index ms':>10}{'.cache() ms':>13}"
          f"{'cache/index':>13}")
    for fraction in PROBES:
        probe = source.sample(fraction=fraction, seed=3).select(F.col(KEY).alias("k"), F.col("fare_amount").alias("f"))
        probe = probe.cache()
        probe_rows = probe.count()
        indexed, joined = frame.join(probe, "k"), cached.join(probe, cached[KEY] == probe["k"])
        out = fingerprint(joined)
        assert fingerprint(indexed) == out, fraction
        a, b = timed(lambda: noop(indexed), repeat), timed(lambda: noop(joined), repeat)
        print(f"{100 * fraction:>8.2f} %     {probe_rows:>11,}{out[0]:>10,}{a * 1e3:>10.1f}{b * 1e3:>13.1f}"
              f"{b / a:>12.2f}x")
        probe.unpersist()

    print(f"\n{'append':<14}{'rows':>10}{'append s':>10}{'rows/s':>12}{'rebuild s':>11}{'rebuild/append':>16}")
    for fraction in APPENDS:
        more = source.sample(fraction=fraction, seed=4).withColumn(KEY, F.col(KEY) + F.expr("INTERVAL 400 DAYS"))
        more = more.cache()
        n = more.count()
        grown = frame.append_rows(more)
        rebuilt = ix.create_index(source.unionByName(more), KEY, args.partitions)
        assert fingerprint(grown.df) == fingerprint(rebuilt.df) == fingerprint(cached.unionByName(more)), fraction
        a, b = grown.memory().build_seconds, rebuilt.memory().build_seconds
        print(f"{100 * fraction:>8.2f} %     {n:>10,}{a:>10.2f}{n / a:>12,.0f}{b:>11.2f}{b / a:>15.1f}x")
        for f in (grown, rebuilt):
            f.unpersist()
        more.unpersist()


if __name__ == "__main__":
    main()
