"""What sae's Spark application (run_points.py) keeps between queries: the readers' copies of a
dataset in the executors' memory, the key queries' keys and probe tables, each series' appended
rows, and the executor a series loses. Runs beside run_points.py on the driver host, without
sae: pyspark, and for the indexed reader the jar of ``sae.indexed`` (its JVM classes, called
through Py4J); shipped with ``--py-files``.

Per application and dataset (``cfg["dataset"]``: every reader of it reads the same rows, so the
first reader to need one of these makes it for all; docs/results.md, "Keys, probes and appends"):

* ``keys`` (n): the n distinct non-null values of the key with the smallest xxhash64, ties by
  value; the view ``keys`` (column ``key``), the condition ``key IN (<the n values>)`` a lookup
  runs (:meth:`Memory.lookup`: values a scan can push, where a semi-join with the view gives it
  none) and, for the index, the same values packed;
* ``probe`` (p %): the distinct non-null key values whose ``pmod(xxhash64(key), 10**6)`` is below
  p % of 10**6 (about p % of the keys), with that number as the column ``bucket``;
* a kept copy (``cfg["keep"]``): ``cache``, the reader's DataFrame (:func:`tagged`) cached and
  counted; ``index``, the indexed cache of it on the key, in the session's default parallelism
  of partitions. Either is built before the reader's first query of the dataset, its time apart.

Per point with ``append_rows`` b and ``append_every`` e: batch j (1, 2, ...) is b rows made from
their numbers i, (j-1)·b to j·b-1 (``spark.range``): the key the data's first key plus
(i·7919 mod the key range in seconds) seconds, every other column from i by its type
(:func:`batch_column`). Before repetition r the batches 1 to r // e are appended: the indexed
reader appends a version (its parent version dropped unless it is the kept one), every other
reader caches the batch (tagged with its point) and reads the union of its rows and its batches.
"""
import dataclasses
import datetime
import json
import os
import signal
import struct
import time

from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

HASH_RANGE = 10**6
"""A probe of p % keeps the keys whose ``pmod(xxhash64(key), HASH_RANGE)`` is below p % of it."""
STRIDE = 7919
"""Batch row i's key is the data's first key plus ``i * STRIDE mod span`` seconds (a prime: spread)."""
REPLACEMENT_WAIT = 180.0
"""Seconds a lost executor's replacement is waited for (the cluster manager starts a new JVM)."""
_PACKED = ("tinyint", "smallint", "int", "bigint", "date", "timestamp", "timestamp_ntz")
"""Key types whose internal values (days, microseconds) the index takes packed as longs."""
_EPOCH = datetime.datetime(1970, 1, 1)


def key_literal(kind, value):
    """Spark SQL for the key value whose internal form (``DataType.toInternal``: days since the
    epoch, microseconds, or the number) is ``value``, of type ``kind`` (one of :data:`_PACKED`):
    exact, whatever the session's time zone, and folded to a literal before a scan is planned."""
    if kind == "date":
        return f"date_from_unix_date({value})"
    if kind == "timestamp":
        return f"timestamp_micros({value})"
    if kind == "timestamp_ntz":
        return f"TIMESTAMP_NTZ '{_EPOCH + datetime.timedelta(microseconds=value):%Y-%m-%d %H:%M:%S.%f}'"
    return f"CAST({value} AS {kind})"


def tagged(df, tag):
    """``df`` under a filter that keeps every row and names ``tag``. Spark answers any part of a
    query whose plan is a cached plan from the cache, so a copy of the vanilla read cached as it is
    would answer the vanilla reader's own reads of the same files; tagged, it answers only the
    queries made from it."""
    return df.where(F.lit(tag).isNotNull())


def checksummed(df, columns=()):
    """``df`` aggregated to one row: ``rows`` and ``checksum``, the sum of Spark's hash of each
    row's ``columns`` (every column when empty): equal for equal rows in any order."""
    cols = [F.col(f"`{c}`") for c in columns or df.columns]
    return df.agg(F.count(F.lit(1)).alias("rows"), F.sum(F.hash(*cols).cast("long")).alias("checksum"))


def batch_column(field, key, at):
    """The expression of batch rows' ``field`` from their number ``id``: ``at`` (the key's
    expression) for the key and every time column, small numbers for numeric ones, ``0``/``1`` for
    strings."""
    t = field.dataType.simpleString()
    if field.name == key or t in ("timestamp", "timestamp_ntz"):
        return f"CAST({at} AS {t})"
    if t in ("tinyint", "smallint", "int", "bigint"):
        return f"CAST(pmod(id, 7) AS {t})"
    if t in ("float", "double"):
        return f"CAST(pmod(id, 10007) / 100 AS {t})"
    if t == "string":
        return "CAST(pmod(id, 2) AS STRING)"
    raise ValueError(f"appends: column {field.name} is {t}, of which sae makes no rows")


def executors(spark):
    """The ids of the application's executors (the driver's not among them)."""
    ids = spark.sparkContext._jsc.sc().getExecutorIds()
    return {ids.apply(i) for i in range(ids.size())}


def _executor_killer():
    """A function for one task: SIGKILL the JVM of the task's executor (the nearest ancestor
    process running Spark's executor backend), on the task's first attempt only (Spark runs the
    lost task again on another executor, where it does nothing). Made here, so that Spark's
    pickler ships it by value: an executor need not import this module under the name the driver
    did (``keyed`` beside run_points.py, ``sae.app.keyed`` in sae's own tests)."""
    def kill(_):
        if TaskContext.get().attemptNumber() > 0:
            return
        pid = os.getppid()
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"CoarseGrainedExecutorBackend" in f.read():
                    os.kill(pid, signal.SIGKILL)
                    return
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        raise RuntimeError("no Spark executor process above this task's")
    return kill


def lose_executor(spark, wait=REPLACEMENT_WAIT):
    """Kill one of the application's executors (its cached blocks and shuffle files go with it)
    and wait until the driver has seen it go and as many executors are up again (the cluster
    manager replaces an executor that died), at most ``wait`` seconds; what the repetition
    records."""
    before = executors(spark)
    spark.sparkContext.parallelize([0], 1).foreach(_executor_killer())
    deadline = time.time() + wait
    while time.time() < deadline:
        now = executors(spark)
        if not before <= now and len(now) >= len(before):
            break
        time.sleep(0.5)
    return {"executor_lost": True}


@dataclasses.dataclass
class Kept:
    """A reader's copy of a dataset in memory: the cached DataFrame (``df``, its ``rows`` and the
    ``rdd`` holding its column batches) or the indexed cache (``frame``: the JVM IndexedFrame), and
    the seconds its build took."""

    build_s: float
    df: object = None
    rows: int = 0
    rdd: int | None = None
    frame: object = None


@dataclasses.dataclass
class Keys:
    """A lookup's keys: the cached view's rows (``df``), the condition ``key IN (...)`` with them
    as values (``listed``) and, for the index, their internal values packed as little-endian longs."""

    df: object
    listed: object
    packed: bytearray


@dataclasses.dataclass
class Series:
    """A point's appends so far: the batches appended, the indexed reader's newest version, the
    other readers' cached batches and the RDDs holding them."""

    batches: int = 0
    frame: object = None
    cached: list = dataclasses.field(default_factory=list)
    rdds: list = dataclasses.field(default_factory=list)


class Memory:
    """What one application keeps (the module docstring), made as the points' queries need it."""

    def __init__(self, spark):
        self.spark = spark
        self.kept, self.keys, self.probes, self.domains, self.series = {}, {}, {}, {}, {}
        self.lost = set()   # the comparisons that lost an executor

    # --- before a query ---

    def prepare(self, cfg, fresh, rep):
        """Make what point ``cfg``'s next query reads before its clock starts (``fresh()``: a
        fresh DataFrame of the point's read; ``rep``: its repetition, None for a pre-warm query,
        which reads what repetition 0 reads): the kept copy, the key views, the appends and the
        executor lost before ``rep`` (then the key views' lost blocks are made again here, and
        each reader's lost copy by its next query). Returns what the repetition records besides
        its timings."""
        out = {}
        if cfg.get("keep"):
            self._kept(cfg, fresh)
        if "keys" in cfg:
            self._keys(cfg, fresh)
        if "probe" in cfg:
            self._probe(cfg, fresh)
        if rep is not None and cfg.get("lose_executor") == rep and cfg["comparison"] not in self.lost:
            self.lost.add(cfg["comparison"])
            out.update(lose_executor(self.spark))
            for df in [*(k.df for k in self.keys.values()), *self.probes.values()]:
                df.count()   # the queries' own inputs made whole again; each reader's copy is its next query's
        if cfg.get("append_rows"):
            out.update(self._append(cfg, fresh, (rep or 0) // cfg["append_every"]))
        if cfg.get("lose_executor") is not None:
            out["executors"] = len(executors(self.spark))
        out.update(self._memory(cfg))
        return out

    def _key_values(self, cfg, fresh):
        """The distinct non-null keys of a fresh read (never of a reader's copy: made again after
        a lost executor, they must not restore a copy outside its reader's query)."""
        return fresh().select(F.col(f"`{cfg['key']}`").alias("key")).where("key IS NOT NULL").distinct()

    def _kept(self, cfg, fresh):
        where = (cfg["dataset"], cfg["keep"])
        if where in self.kept:
            return
        start = time.time()
        if cfg["keep"] == "cache":
            df = tagged(fresh(), f"sae cache of {cfg['dataset']}").cache()
            rows = df.count()
            self.kept[where] = Kept(time.time() - start, df=df, rows=rows, rdd=cached_rdd(self.spark, df))
        else:
            frame = self.spark._jvm.sae.indexed.IndexedFrame.create(fresh()._jdf, cfg["key"])
            self.kept[where] = Kept(frame.buildNanos() / 1e9, frame=frame)

    def _keys(self, cfg, fresh):
        where = (cfg["dataset"], cfg["keys"])
        if where in self.keys:
            return
        df = self._key_values(cfg, fresh).orderBy(F.xxhash64("key"), "key").limit(cfg["keys"]).cache()
        values = df.collect()
        kind = df.schema["key"].dataType
        if kind.simpleString() not in _PACKED:
            raise ValueError(f"key {cfg['key']} is {kind.simpleString()}; the key queries take {', '.join(_PACKED)}")
        internal = [kind.toInternal(r[0]) for r in values]
        listed = F.expr(f"`{cfg['key']}` IN ({', '.join(key_literal(kind.simpleString(), v) for v in internal)})")
        self.keys[where] = Keys(df, listed, bytearray(struct.pack(f"<{len(internal)}q", *internal)))

    def _probe(self, cfg, fresh):
        where = (cfg["dataset"], cfg["probe"])
        if where in self.probes:
            return
        below = round(cfg["probe"] * HASH_RANGE / 100)
        df = (self._key_values(cfg, fresh).select("key", F.pmod(F.xxhash64("key"), F.lit(HASH_RANGE)).alias("bucket"))
              .where(F.col("bucket") < below).coalesce(self.spark.sparkContext.defaultParallelism).cache())
        df.count()
        self.probes[where] = df

    def _batch(self, cfg, fresh, j):
        """Batch ``j`` of point ``cfg``'s appends (the module docstring)."""
        if cfg["dataset"] not in self.domains:
            first, last = self._key_values(cfg, fresh).agg(F.min("key"), F.max("key")).first()
            self.domains[cfg["dataset"]] = (first, int((last - first).total_seconds()) + 1)
        first, span = self.domains[cfg["dataset"]]
        at = f"TIMESTAMP_NTZ '{first.isoformat(sep=' ')}' + INTERVAL '1' SECOND * pmod(id * {STRIDE}, {span})"
        n = cfg["append_rows"]
        columns = [F.expr(batch_column(f, cfg["key"], at)).alias(f.name) for f in fresh().schema.fields]
        return self.spark.range((j - 1) * n, j * n, 1, self.spark.sparkContext.defaultParallelism).select(*columns)

    def _append(self, cfg, fresh, due):
        """Append point ``cfg``'s batches up to ``due``; the rows appended in all and the seconds of
        the append made now (none: not recorded)."""
        s = self.series.setdefault(cfg["point"], Series())
        out = {}
        while s.batches < due:
            batch = self._batch(cfg, fresh, s.batches + 1)
            if cfg.get("keep") == "index":
                parent = s.frame
                s.frame = (parent or self.kept[(cfg["dataset"], "index")].frame).appendRows(batch._jdf)
                if parent is not None:   # the newest version holds what it shares with its parent
                    parent.unpersist()
                out["append_s"] = s.frame.buildNanos() / 1e9
            else:
                start = time.time()
                cached = tagged(batch, f"sae batch {s.batches + 1} of {cfg['point']}").cache()
                cached.count()
                out["append_s"] = time.time() - start
                s.cached.append(cached)
                s.rdds.append(cached_rdd(self.spark, cached))
            s.batches += 1
        return {"appended_rows": s.batches * cfg["append_rows"], **out}

    def _memory(self, cfg):
        """What the point's reader holds in the executors' memory (docs/results.md)."""
        keep, s = cfg.get("keep"), self.series.get(cfg["point"], Series())
        appended = s.batches * cfg.get("append_rows", 0)
        if keep == "index":
            kept = self.kept[(cfg["dataset"], "index")]
            frame = s.frame or kept.frame
            m = frame.memory()
            return {"index_bytes": m.indexBytes(), "cached_bytes": m.chunkBytes(), "cached_rows": m.rows(),
                    "index_build_s": kept.build_s,
                    "index_partitions": json.dumps([[p.rows(), p.indexBytes()] for p in frame.partitionStats()])}
        if keep == "cache":
            kept = self.kept[(cfg["dataset"], "cache")]
            rdds, rows, built = [kept.rdd, *s.rdds], kept.rows + appended, {"index_build_s": kept.build_s}
        elif s.rdds:   # the appended batches another reader caches
            rdds, rows, built = s.rdds, appended, {}
        else:
            return {}
        held = stored_bytes(self.spark)
        return {"cached_bytes": sum(held.get(r, 0) for r in rdds), "cached_rows": rows, **built}

    # --- the query ---

    def trips(self, cfg, fresh):
        """What the point's query reads as ``trips``: a fresh read (``fresh()``), or the kept
        cache of it, with the point's appended batches."""
        df = self.kept[(cfg["dataset"], "cache")].df if cfg.get("keep") == "cache" else fresh()
        for batch in self.series.get(cfg["point"], Series()).cached:
            df = df.unionByName(batch)
        return df

    def views(self, cfg):
        """Register the point's key views (``keys``, ``probe``)."""
        if "keys" in cfg:
            self.keys[(cfg["dataset"], cfg["keys"])].df.createOrReplaceTempView("keys")
        if "probe" in cfg:
            self.probes[(cfg["dataset"], cfg["probe"])].createOrReplaceTempView("probe")

    def lookup(self, df, cfg):
        """``df``'s rows whose key is one of the point's keys: the lookup's statement with its
        keys as values (parsed once per key set, before any clock starts), so that a reader's scan
        can push them, as Spark makes no runtime filter of the semi-join with the view."""
        return df.where(self.keys[(cfg["dataset"], cfg["keys"])].listed)

    def indexed(self, cfg):
        """The point's answer through the index (its newest version): the rows of the keys
        (``lookup``: the lookup's job runs here) or the join with the probe (``join``)."""
        frame = self.series.get(cfg["point"], Series()).frame or self.kept[(cfg["dataset"], "index")].frame
        if cfg["index"] == "lookup":
            return DataFrame(frame.getRowsPacked(self.keys[(cfg["dataset"], cfg["keys"])].packed), self.spark)
        return DataFrame(frame.join(self.probes[(cfg["dataset"], cfg["probe"])]._jdf, "key"), self.spark)

    # --- after a point ---

    def release(self, point):
        """Drop what point ``point``'s appends hold (the kept copies stay for later points)."""
        s = self.series.pop(point, None)
        if s is None:
            return
        if s.frame is not None:
            s.frame.unpersist()
        for batch in s.cached:
            batch.unpersist()


def cached_rdd(spark, df):
    """The id of the RDD holding cached ``df``'s column batches."""
    data = spark._jsparkSession.sharedState().cacheManager().lookupCachedData(df._jdf).get()
    return data.cachedRepresentation().cacheBuilder().cachedColumnBuffers().id()


def stored_bytes(spark):
    """RDD id → bytes of its blocks in the executors' memory, as Spark's block manager counts them."""
    return {i.id(): i.memSize() for i in spark.sparkContext._jsc.sc().getRDDStorageInfo()}
