"""The indexed cache's cases, run in one Spark application in local mode: ``python scenario.py
WORK_DIR OUT.pickle`` writes ``{case: outcome}`` (an outcome is a dict of what the case saw, or
``{"error": traceback}``) and exits once its JVM has.

Each case puts what the index answered beside what Spark's own filter or join answered over the
same rows. Data: the taxi generator's trips (data_deploy) with two key columns added: ``trip_id``
(the row's number, unique; null every 997th row) and ``zone`` (the pickup zone's name; null for
the unknown zones 264 and 265).
"""
from __future__ import annotations

import datetime
import pickle
import random
import sys
import time
import traceback
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sae.indexed as ix
from sae.indexed.build import compile_jar
from data_deploy import zones_table
from data_deploy.taxi import iter_batches
from metareserve.errors import UsageError

ROWS = 100_000
PARTITIONS = 8
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def write_trips(out: Path) -> None:
    zones = zones_table()
    names = dict(zip(zones["LocationID"].to_pylist(), zones["Zone"].to_pylist()))
    start = 0
    for i, batch in enumerate(iter_batches(ROWS, seed=7)):
        n = batch.num_rows
        ids = pa.array([None if r % 997 == 996 else r for r in range(start, start + n)], pa.int64())
        zone = pa.array([None if p in (264, 265) else names[p] for p in batch["PULocationID"].to_pylist()], pa.string())
        pq.write_table(pa.Table.from_batches([batch]).append_column("trip_id", ids).append_column("zone", zone),
                       out / f"trips-{i:03d}.parquet")
        start += n


def rows(df) -> list[tuple]:
    """The rows as tuples, in a fixed order (a multiset compares equal)."""
    return sorted((tuple(r) for r in df.collect()), key=repr)


def fingerprint(df) -> tuple[int, int]:
    """(rows, sum of each row's xxhash64): equal for equal multisets, computed in Spark."""
    hashes = F.xxhash64(*[F.col(f"`{c}`") for c in df.columns]).cast("decimal(38,0)")
    r = df.agg(F.count(F.lit(1)), F.sum(hashes)).first()
    return r[0], int(r[1] or 0)


def positional(df):
    """``df`` with its columns renamed c0, c1, ... (a join's output repeats names)."""
    return df.toDF(*[f"c{i}" for i in range(len(df.columns))])


def tasks_of(spark, group: str, action) -> int:
    """The number of tasks the jobs of ``action()`` ran (stages skipped for cached data ran none)."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    sc._jsc.sc().listenerBus().waitUntilEmpty()   # the tracker learns of jobs from the listener bus
    tracker = sc.statusTracker()
    return sum(tracker.getStageInfo(s).numCompletedTasks for j in tracker.getJobIdsForGroup(group)
               for s in tracker.getJobInfo(j).stageIds)


class Scenario:
    def __init__(self, spark, data: Path):
        self.spark = spark
        self.df = spark.read.parquet(str(data)).cache()   # Spark's answers come from memory too
        self.by_id = ix.create_index(self.df, "trip_id", PARTITIONS)
        self.by_zone = ix.create_index(self.df, "zone", PARTITIONS)
        self.by_pickup_zone = ix.create_index(self.df, "PULocationID", PARTITIONS)
        self.ids = [r for r in range(ROWS) if r % 997 != 996]   # as write_trips numbers the rows
        self.rng = random.Random(11)

    def versus_filter(self, frame, keys, column) -> dict:
        wanted = [k for k in keys if k is not None and not (isinstance(k, int) and not -2**63 <= k < 2**63)]
        return {"index": rows(frame.get_rows(keys)), "spark": rows(self.df.filter(F.col(column).isin(wanted)))}

    # --- building ---

    @case
    def build(self) -> dict:
        m = self.by_id.memory()
        stats = self.df.agg(F.count(F.lit(1)), F.count("trip_id"), F.countDistinct("trip_id")).first()
        return {"memory": m, "rows": stats[0], "null_keys": stats[0] - stats[1], "distinct": stats[2],
                "schema": self.by_id.schema, "source_schema": self.df.schema, "partitions": self.by_id.partitions,
                "zone_memory": self.by_zone.memory(), "pickup_zone_memory": self.by_pickup_zone.memory()}

    @case
    def default_partitions(self) -> dict:
        frame = ix.create_index(self.df.limit(1000), "trip_id")
        out = {"partitions": frame.partitions, "default": self.spark.sparkContext.defaultParallelism}
        frame.unpersist()
        return out

    @case
    def empty(self) -> dict:
        frame = ix.create_index(self.df.where("false"), "trip_id", 4)
        grown = frame.append_rows(self.df.where("trip_id < 10"))
        return {"rows": frame.memory().total.rows, "lookup": rows(frame.get_rows([1, 2])),
                "grown": rows(grown.get_rows([1, 2, 500])), "spark": rows(self.df.where("trip_id in (1, 2)")),
                "schema": frame.get_rows([1]).schema, "source_schema": self.df.schema}

    # --- lookups ---

    @case
    def lookup_one(self) -> dict:
        key = self.ids[12345]
        out = self.versus_filter(self.by_id, [key], "trip_id")
        out["scalar"] = rows(self.by_id.get_rows(key))
        out["tasks"] = tasks_of(self.spark, "lookup-one", lambda: self.by_id.get_rows(key))
        out["partitions"] = self.by_id.partitions_of(key)
        out["schema"] = self.by_id.get_rows(key).schema
        return out

    @case
    def lookup_three(self) -> dict:
        keys = self.ids[:3]
        return {"tasks": tasks_of(self.spark, "lookup-three", lambda: self.by_id.get_rows(keys)),
                "partitions": self.by_id.partitions_of(keys)}

    @case
    def lookup_hundred(self) -> dict:
        keys = self.rng.sample(self.ids, 95) + [996, 1993, -1, 10**9, 2**63 - 1, 2**70, None]   # null rows, absent
        keys += keys[:5]                                                                            # twice
        return self.versus_filter(self.by_id, keys, "trip_id")

    @case
    def lookup_ten_thousand(self) -> dict:
        keys = self.rng.sample(self.ids, 10_000)
        # isin: a Py4J call per key; a local table of the keys is broadcast to the semi-join
        wanted = self.spark.createDataFrame(pa.table({"trip_id": pa.array(keys, pa.int64())}))
        return {"index": rows(self.by_id.get_rows(keys)),
                "spark": rows(self.df.join(wanted, "trip_id", "left_semi").select(self.df.columns))}

    @case
    def lookup_duplicate_keys(self) -> dict:
        return self.versus_filter(self.by_pickup_zone, [1, 7, 200, 999], "PULocationID")

    @case
    def lookup_strings(self) -> dict:
        return self.versus_filter(self.by_zone, ["Newark Airport", "Zone 007", "zone 007", "", "nope", None], "zone")

    @case
    def lookup_timestamps(self) -> dict:
        df = self.df.where("trip_id < 20000")
        times = [r[0] for r in df.select("tpep_pickup_datetime").limit(5).collect()]
        frame = ix.create_index(df, "tpep_pickup_datetime", PARTITIONS)
        keys = times + [datetime.datetime(1999, 1, 1)]
        out = {"index": rows(frame.get_rows(keys)), "spark": rows(df.filter(F.col("tpep_pickup_datetime").isin(keys))),
               "type": frame.schema["tpep_pickup_datetime"].dataType}
        frame.unpersist()
        return out

    @case
    def lookup_nothing(self) -> dict:
        return {"none": rows(self.by_id.get_rows([])), "null": rows(self.by_id.get_rows(None)),
                "tasks": tasks_of(self.spark, "lookup-nothing", lambda: self.by_id.get_rows([None, 10**12]))}

    # --- joins ---

    def probe_ids(self):
        """1 % of the rows' ids as int (the key is long), a null, an absent id and an id twice."""
        sample = self.df.sample(fraction=0.01, seed=5).select(F.col("trip_id").cast("int").alias("tid"),
                                                              F.col("fare_amount").alias("probe_fare"))
        extra = self.spark.createDataFrame([(None, 1.0), (2_000_000_000, 2.0), (42, 3.0), (42, 4.0)], sample.schema)
        return sample.unionByName(extra)

    @case
    def join_ids(self) -> dict:
        probe = self.probe_ids()
        joined = self.by_id.join(probe, "tid")
        return {"index": rows(joined), "spark": rows(self.df.join(probe, self.df.trip_id == probe.tid)),
                "columns": joined.columns, "spark_columns": self.df.join(probe, self.df.trip_id == probe.tid).columns}

    @case
    def join_strings(self) -> dict:
        zones = self.spark.createDataFrame(zones_table().to_pandas()).where("LocationID % 40 = 0")
        return {"index": fingerprint(positional(self.by_zone.join(zones, "Zone"))),
                "spark": fingerprint(positional(self.df.join(zones, self.df.zone == zones.Zone)))}

    @case
    def join_every_row(self) -> dict:
        zones = self.spark.createDataFrame(zones_table().to_pandas())
        return {"index": fingerprint(positional(self.by_pickup_zone.join(zones, "LocationID"))),
                "spark": fingerprint(positional(self.df.join(zones, self.df.PULocationID == zones.LocationID)))}

    @case
    def join_empty(self) -> dict:
        probe = self.probe_ids().where("false")
        joined = self.by_id.join(probe, "tid")
        return {"rows": rows(joined), "columns": joined.columns}

    # --- versions ---

    def appended(self, first: int, n: int, fare: float):
        """``n`` rows: new ids from ``first``, ids 0..9 again with another fare, two null ids;
        columns in another order than the index's."""
        base = self.df.where(f"trip_id < {n}").withColumn("fare_amount", F.lit(fare))
        fresh = base.withColumn("trip_id", F.col("trip_id") + first)
        again = base.where("trip_id < 10")
        nulls = base.where("trip_id < 2").withColumn("trip_id", F.lit(None).cast("long"))
        out = fresh.unionByName(again).unionByName(nulls)
        return out.select(*reversed(out.columns))

    @case
    def append(self) -> dict:
        v1 = self.by_id
        before = rows(v1.get_rows(list(range(12))))
        more = self.appended(ROWS * 10, 300, 1.5)
        v2 = v1.append_rows(more)
        union = self.df.unionByName(more)
        keys = list(range(12)) + [ROWS * 10 + k for k in (0, 5, 299, 300)]
        new_id = self.spark.createDataFrame([(ROWS * 10 + 7, 9.0)], "tid int, probe_fare double")
        probe = self.probe_ids().unionByName(new_id)
        return {"v2": rows(v2.get_rows(keys)), "spark_v2": rows(union.filter(F.col("trip_id").isin(keys))),
                "v1_before": before, "v1_after": rows(v1.get_rows(list(range(12)))),
                "v1_new_keys": rows(v1.get_rows(keys[12:])),
                "join_v2": rows(v2.join(probe, "tid")),
                "spark_join_v2": rows(union.join(probe, union.trip_id == probe.tid)),
                "v1_memory": v1.memory().total, "v2_memory": v2.memory(), "versions": (v1.version, v2.version),
                "appended_rows": more.count(), "appended_nulls": more.where("trip_id is null").count()}

    @case
    def append_branches(self) -> dict:
        v1 = self.by_id
        more_a, more_b = self.appended(ROWS * 20, 50, 2.5), self.appended(ROWS * 30, 50, 3.5)
        a, b = v1.append_rows(more_a), v1.append_rows(more_b)
        keys = [3, ROWS * 20 + 1, ROWS * 30 + 1]
        return {"a": rows(a.get_rows(keys)), "b": rows(b.get_rows(keys)),
                "spark_a": rows(self.df.unionByName(more_a).filter(F.col("trip_id").isin(keys))),
                "spark_b": rows(self.df.unionByName(more_b).filter(F.col("trip_id").isin(keys)))}

    @case
    def append_many(self) -> dict:
        def more(i):
            # 200 rows, some in every partition
            return self.df.where(f"trip_id % 500 = {i}").withColumn("zone", F.concat("zone", F.lit(f"/{i % 3}")))
        frame, maps = self.by_zone, []
        for i in range(9):   # 1 + 8 maps is more than MAX_MAPS: the 8th append merges them
            frame = frame.append_rows(more(i))
            maps.append(frame.memory().total.maps)
        union = self.df.unionByName(self.df.where("trip_id % 500 < 9").withColumn(
            "zone", F.concat("zone", F.lit("/"), (F.col("trip_id") % 500 % 3).cast("string"))))
        keys = ["Newark Airport", "Newark Airport/0", "JFK Airport/2", "Zone 007/1", "nope", None]
        return {"maps": maps, "index": rows(frame.get_rows(keys)),
                "spark": rows(union.filter(F.col("zone").isin([k for k in keys if k]))),
                "scan": fingerprint(frame.df), "spark_scan": fingerprint(union)}

    # --- recovery ---

    @case
    def recovery(self) -> dict:
        faults = self.spark._jvm.indexedtests.Faults
        v1 = self.by_id
        v2 = v1.append_rows(self.appended(ROWS * 40, 100, 4.5))
        key = self.ids[777]
        (p,) = v2.partitions_of(key)
        blocks = [(f._j.rdd().id(), p) for f in (v1, v2)]
        cached_before = [faults.cached(*b) for b in blocks]
        for b in blocks:
            faults.drop(*b)
        dropped = [faults.cached(*b) for b in blocks]
        lost = shuffles(v2._j.rdd().rdd())
        for s in lost:   # as an executor's loss does: its shuffle files go too
            faults.loseShuffle(s)
        keys = [key, ROWS * 40 + 3]
        tasks = tasks_of(self.spark, "recovery", lambda: v2.get_rows(keys))
        after = {"v2": rows(v2.get_rows(keys)), "v1": rows(v1.get_rows(keys)), "tasks": tasks}
        union = self.df.unionByName(self.appended(ROWS * 40, 100, 4.5))
        return {**after, "cached_before": cached_before, "dropped": dropped, "shuffles": len(lost),
                "cached_after": [faults.cached(*b) for b in blocks],
                "spark_v2": rows(union.filter(F.col("trip_id").isin(keys))),
                "spark_v1": rows(self.df.filter(F.col("trip_id").isin(keys)))}

    # --- the index as a DataFrame ---

    @case
    def planner(self) -> dict:
        frame, df = self.by_id, self.df
        key, keys = self.ids[4242], self.ids[100:103]
        eq = frame.df.filter(F.col("trip_id") == key)
        frame.df.createOrReplaceTempView("indexed_trips")
        sql = self.spark.sql(f"SELECT trip_id, fare_amount FROM indexed_trips WHERE trip_id IN ({keys[0]}, {keys[1]})")
        either = frame.df.filter((F.col("trip_id") == keys[0]) | F.col("trip_id").isin(keys[1:]))
        other = frame.df.filter(F.col("fare_amount") > 150)
        return {
            "eq": rows(eq), "spark_eq": rows(df.filter(F.col("trip_id") == key)),
            "eq_plan": eq._jdf.queryExecution().executedPlan().toString(),
            "eq_tasks": tasks_of(self.spark, "planner-eq", lambda: eq.collect()),
            "sql": rows(sql),
            "spark_sql": rows(df.where(F.col("trip_id").isin(keys[:2])).select("trip_id", "fare_amount")),
            "either": rows(either), "spark_either": rows(df.filter(F.col("trip_id").isin(keys))),
            "other": rows(other), "spark_other": rows(df.filter(F.col("fare_amount") > 150)),
            "count": frame.df.count(), "spark_count": df.count(),
            "zone_null": rows(self.by_zone.df.filter(F.col("zone").isNull()).select("trip_id")),
            "spark_zone_null": rows(df.filter(F.col("zone").isNull()).select("trip_id")),
        }

    # --- bad input ---

    @case
    def errors(self) -> dict:
        def message(fn):
            try:
                fn()
            except UsageError as e:
                return str(e)
            return None
        df = self.df
        return {
            "double_key": message(lambda: ix.create_index(df, "fare_amount")),
            "no_column": message(lambda: ix.create_index(df, "nope")),
            "partitions": message(lambda: ix.create_index(df, "trip_id", 0)),
            "key_type": message(lambda: self.by_id.get_rows(["12"])),
            "probe_type": message(lambda: self.by_id.join(df.select("zone"), "zone")),
            "probe_column": message(lambda: self.by_id.join(df, "nope")),
            "append_type": message(lambda: self.by_id.append_rows(
                df.withColumn("trip_id", F.col("trip_id").cast("string")))),
            "append_missing": message(lambda: self.by_id.append_rows(df.drop("zone"))),
        }


def shuffles(rdd) -> list[int]:
    """The shuffle ids in the lineage of a JVM RDD."""
    out, todo = [], [rdd]
    while todo:
        deps = todo.pop().dependencies()
        for i in range(deps.size()):
            d = deps.apply(i)
            if d.getClass().getSimpleName() == "ShuffleDependency":
                out.append(d.shuffleId())
            todo.append(d.rdd())
    return sorted(set(out))


def main(work: Path, out: Path) -> None:
    data = work / "trips"
    data.mkdir(parents=True, exist_ok=True)
    write_trips(data)
    faults = compile_jar([Path(__file__).with_name("Faults.java")], "test-faults")
    spark = (SparkSession.builder.master("local[2]").appName("sae indexed tests")
             .config("spark.jars", f"{ix.jar()},{faults}").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").config("spark.driver.memory", "2g")
             .config("spark.sql.codegen.wholeStage", "false")   # fewer classes to compile: ~10 % less CPU
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")   # C1 only, as keyed_app.py
             .config("spark.local.dir", str(work / "spark")).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    outcomes = {}
    try:
        scenario = Scenario(spark, data)
        for name, fn in CASES.items():
            start = time.perf_counter()
            try:
                outcomes[name] = fn(scenario)
            except Exception:
                outcomes[name] = {"error": traceback.format_exc()}
            outcomes[name]["seconds"] = time.perf_counter() - start
    except Exception:
        outcomes = {name: {"error": traceback.format_exc()} for name in CASES}
    finally:
        out.write_bytes(pickle.dumps(outcomes))
        spark.stop()
        gateway = SparkContext._gateway
        gateway.shutdown()
        gateway.proc.stdin.close()   # the JVM exits when its stdin closes
        gateway.proc.wait(60)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
