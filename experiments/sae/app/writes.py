"""The write jobs of run_points.py (shipped beside it): a point with ``"write"`` runs one of
Stocator's workloads through a writer instead of a query.

``"write"`` holds the writer's output (sae.planning.writers.Output.app_config: format, options,
uri, SQL settings, and how its output is read back), ``"job"``
(``one-object``, ``teragen``, ``copy``, ``query``, ``read-only``), ``"rows"`` and ``"tasks"``
(teragen's; tasks None: the default parallelism), ``"run_id"`` and, for ``query``, its
statement over the view ``trips``. Each repetition writes
under ``<uri>/<run_id>/<point>/r<repetition>``; ``read-only`` reads what the point's first
repetition copied (written before its clock starts, under ``.../input``).

A repetition is timed over the job alone; then the application says ``written`` (the controller
snapshots the storage side's counters, so the job's operations are counted apart from what
follows), pauses, and reads the output back through the writer's own interface: ``rows`` and
``checksum`` of what was committed, beside ``input_rows`` and ``input_checksum`` of what was
written (computed once per point, before its first repetition's clock), and ``output_bytes``,
the committed files' bytes as the read back lists them. After the point's last repetition what
it wrote is removed (:meth:`Writes.finish`), before that repetition is reported.
"""
import json
import sys
import time

from pyspark.sql import functions as F

try:
    from . import keyed   # imported as sae.app.writes
except ImportError:
    import keyed          # submitted: shipped beside it (--py-files)

_applied = set()   # the SQL settings the previous job made, undone before the next


def configure(spark, target):
    """Apply the target's SQL settings (a committer's protocol), undoing those of the previous
    writer that this one does not set (points of several writers share the application)."""
    global _applied
    for key in _applied - set(target["sql"]):
        spark.conf.unset(key)
    for key, value in target["sql"].items():
        spark.conf.set(key, value)
    _applied = set(target["sql"])


def generated(spark, rows, tasks=None):
    """Teragen's rows: a 10-byte key, a row number and a 90-byte payload, made from the row number
    (the same rows at every repetition), in ``tasks`` tasks (None: the default parallelism)."""
    ids = spark.range(0, rows, 1, tasks or max(1, spark.sparkContext.defaultParallelism))
    return ids.select(F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 10).alias("key"),
                      F.col("id").alias("row"),
                      F.concat(*[F.sha2(F.concat(F.col("id").cast("string"), F.lit(str(i))), 256)
                                 for i in range(3)]).substr(1, 90).alias("payload"))


def source(spark, cfg, fresh, row=None):
    """The DataFrame the job writes (None for read-only, which writes nothing); one-object writes
    ``row`` (a trip and its schema, which the driver took before the clock: the job reads nothing)."""
    job = cfg["job"]
    if job == "one-object":
        return spark.createDataFrame(*row).coalesce(1)
    if job == "teragen":
        return generated(spark, cfg["rows"], cfg.get("tasks"))
    if job == "copy":
        return fresh()
    if job == "query":
        fresh().createOrReplaceTempView("trips")
        return spark.sql(cfg["sql"])
    return None


def write(df, target, uri):
    df.write.format(target["format"]).options(**target["options"]).mode("overwrite").save(uri)


def read(spark, target, uri):
    """The committed output under ``uri`` through the writer's own read path."""
    return spark.read.format(target["read_format"]).options(**target["read_options"]).load(uri)


def output_bytes(spark, target, uri):
    """(bytes, files) of the committed output the read back reads: the connector's own listing (what
    the manifests name) for sae-ceph, Spark's listing of the read for the file sources."""
    if target["read_format"] == "sae-ceph":
        files = json.loads(spark._jvm.sae.connector.SaeCephProvider.files({**target["read_options"], "path": uri}))
        return sum(size for _, size in files), len(files)
    files = read(spark, target, uri).inputFiles()
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    total = 0
    for f in files:
        path = spark._jvm.org.apache.hadoop.fs.Path(f)
        total += path.getFileSystem(conf).getFileStatus(path).getLen()
    return total, len(files)


def delete(spark, target, uri):
    """Remove ``uri`` and what it holds through the writer's own interface (the connector's
    cephx writer for sae-ceph, Hadoop's file system for the others)."""
    if target["format"] == "sae-ceph":
        spark._jvm.sae.connector.SaeCephProvider.delete({**target["options"], "path": uri})
        return
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)


def summed(df):
    row = keyed.checksummed(df).collect()[0]
    return int(row["rows"]), int(row["checksum"] or 0)


class Writes:
    """What the application keeps of its write points: each point's input fingerprint (and,
    for read-only, the location of its input copy)."""

    def __init__(self, spark):
        self.spark = spark
        self.inputs = {}
        self.rows = {}   # point -> (the trip one-object writes, its schema)

    def root(self, cfg):
        return f"{cfg['write']['uri'].rstrip('/')}/{cfg['run_id']}/{cfg['point']}"

    def prepare(self, cfg, fresh):
        """Before the point's first clock: its writer's settings, and its input's rows and checksum
        (for read-only, the input copied through the writer first)."""
        target = cfg["write"]
        configure(self.spark, target)
        if cfg["point"] in self.inputs:
            return
        if cfg["job"] == "read-only":
            uri = f"{self.root(cfg)}/input"
            write(fresh(), target, uri)
            self.inputs[cfg["point"]] = summed(read(self.spark, target, uri))
            return
        if cfg["job"] == "one-object":
            one = fresh()
            self.rows[cfg["point"]] = ([one.limit(1).collect()[0]], one.schema)
        self.inputs[cfg["point"]] = summed(source(self.spark, cfg, fresh, self.rows.get(cfg["point"])))

    def finish(self, cfg):
        """What the point wrote removed, so a run's outputs never pile up in the store; an error
        is printed (the point's results stand, what it wrote stays)."""
        self.inputs.pop(cfg["point"], None)   # a later job of the point prepares its input again
        try:
            delete(self.spark, cfg["write"], self.root(cfg))
        except Exception as e:
            print(f"sae: the output of point {cfg['point']} was not removed: {type(e).__name__}: {e}",
                  file=sys.stderr, flush=True)

    def run(self, cfg, fresh, rep, emit_written, pause, last=False):
        """One repetition: the job, timed; ``emit_written(start, end)``; a pause; the read back;
        after the point's ``last``, :meth:`finish` (before the repetition is reported: the
        removal's requests fall between a job's end and the next job's count, in no job's)."""
        target = cfg["write"]
        t0 = time.time()
        if cfg["job"] == "read-only":
            uri = f"{self.root(cfg)}/input"
            rows, checksum = summed(read(self.spark, target, uri))
        else:
            uri = f"{self.root(cfg)}/r{rep}"
            write(source(self.spark, cfg, fresh, self.rows.get(cfg["point"])), target, uri)
        t1 = time.time()
        emit_written(t0, t1)
        time.sleep(pause)
        v0 = time.time()
        if cfg["job"] != "read-only":
            rows, checksum = summed(read(self.spark, target, uri))
        size, files = output_bytes(self.spark, target, uri)
        input_rows, input_checksum = self.inputs[cfg["point"]]
        result = {"start": t0, "end": t1, "init_s": 0.0, "compute_s": t1 - t0, "total_s": t1 - t0,
                  "rows": rows, "checksum": checksum, "input_rows": input_rows, "input_checksum": input_checksum,
                  "output_bytes": size, "output_files": files, "verify_start": v0, "verify_s": time.time() - v0}
        if last:
            self.finish(cfg)
        return result
