"""Spark app for tests/connector/test_write.py: writes the taxi dataset (and slices of it) through
sae-ceph, with and without faults, reads every output back through each reader and prints one line
``sae-result <json>``.

argv[1]: {"src": the dataset for vanilla Spark (file:// over the mount), "mount": the CephFS mount
          point, "root": a CephFS directory to write under, "options": read options,
          "write_options": write options, "handshake": a directory on the disk the test shares,
          "faults": the fault-injected jobs in order (default one of each: fail, straggle, kill),
          "only_faults": run those alone (bench/write_faults.py)}
Before and after the one-object write it prints ``sae-ops <step>`` and waits for the file
``<handshake>/<step>`` (the test counts the storage operations in between). ``faults`` in the
result: each kind's first job (under ``<root>/<kind>``); ``fault_jobs``: every job in order (a
kind's later jobs under ``<root>/<kind>-<n>``).
"""
import json
import os
import sys
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from manifest import committed_files, leftovers   # sae/connector/manifest.py, shipped with --py-files

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("sae connector writes").getOrCreate()
spark.udf.registerJavaFunction("fault", "WriteFaults", LongType())
src = spark.read.parquet(cfg["src"])
cols = src.columns
key = next(f.name for f in src.schema.fields if isinstance(f.dataType, LongType))   # the faults' column
row_hash = F.hash(*[F.col(c) for c in cols])


def checksum(df):
    """[rows, sum of the rows' hashes over every column]: equal for the same rows in any order."""
    r = df.agg(F.count(F.lit(1)), F.sum(row_hash.cast("long"))).collect()[0]
    return [r[0], r[1] or 0]


def reader(mode):
    return lambda path: spark.read.format("sae-ceph").options(**dict(cfg["options"], mode=mode)).load(path)


def vanilla(path):
    return spark.read.parquet(*["file://" + f for f in committed_files(cfg["mount"] + path)])


READERS = {"offload": reader("offload"), "auto": reader("auto"), "no-offload": reader("no-offload"),
           "vanilla": vanilla}


def write(df, path, mode="overwrite", **extra):
    t = time.monotonic()
    df.write.format("sae-ceph").options(**dict(cfg["write_options"], **extra)).mode(mode).save(path)
    return time.monotonic() - t


def outcome(path, readers=READERS, seconds=None):
    """What readers and the directory show of ``path``."""
    where = cfg["mount"] + path
    return {"checksums": {name: checksum(read(path)) for name, read in readers.items()},
            "files": sorted(os.listdir(where)), "committed": [os.path.basename(f) for f in committed_files(where)],
            "sizes": {os.path.basename(f): os.path.getsize(f) for f in committed_files(where)},
            "leftovers": [os.path.basename(f) for f in leftovers(where)], "seconds": seconds}


def handshake(step):
    print(f"sae-ops {step}", flush=True)
    while not os.path.exists(os.path.join(cfg["handshake"], step)):
        time.sleep(0.2)


root, size = cfg["root"], {"object_size": str(4 << 20)}
out = {"input": checksum(src), "columns": cols}
some = {"offload": READERS["offload"], "vanilla": vanilla}


def fault_job(fault, path):
    """A copy of the dataset in two tasks with ``fault`` in the first attempt of partition 0, late
    in its rows (after its first file is written), and what readers and the directory show of it.
    A straggler's job overwrites an earlier output, read while the job runs (``in_flight``)."""
    df = src.repartition(2).withColumn(key, F.expr(f"fault({key}, '{fault}', {int(0.9 * out['input'][0] / 2)}L)"))
    watch = None
    try:
        if fault == "straggle":
            write(src.limit(100), path, **size)
            watch = InFlight(path)
        return dict(outcome(path, some, write(df, path, **size)), fault=fault, path=path,
                    **({"in_flight": watch.result()} if watch else {}))
    except Exception as e:   # noqa: BLE001 (reported to the test)
        return {"fault": fault, "path": path, "error": str(e)[-2000:]}
    finally:
        if watch:
            watch.stop()


class InFlight(threading.Thread):
    """Polls ``path`` while a job overwrites it; once the job's own files are there, reads what
    the readers' two listings commit (the connector's, in Java, and manifest.py's): both must
    still be the earlier output, whole."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.where, self.path, self.done = cfg["mount"] + path, path, threading.Event()
        self.before = sorted(os.path.basename(f) for f in committed_files(self.where))
        self.seen = None
        self.start()

    def run(self):
        while not self.done.wait(0.05):
            new = [n for n in os.listdir(self.where) if n.startswith("part-") and n not in self.before]
            if new:
                java = json.loads(spark._jvm.sae.connector.SaeCephProvider.files(dict(cfg["options"], path=self.path)))
                self.seen = {"new_files": len(new), "before": self.before,
                             "python": sorted(os.path.basename(f) for f in committed_files(self.where)),
                             "java": sorted(os.path.basename(p) for p, _ in java)}
                return

    def stop(self):
        self.done.set()
        self.join()

    def result(self):
        self.stop()
        return self.seen


def fault_jobs(faults):
    jobs, seen = [], {}
    for fault in faults:
        seen[fault] = seen.get(fault, 0) + 1
        jobs.append(fault_job(fault, f"{root}/{fault}" + (f"-{seen[fault]}" if seen[fault] > 1 else "")))
    return jobs


faults = cfg.get("faults", ["fail", "straggle", "kill"])
if cfg.get("only_faults"):
    out["fault_jobs"] = fault_jobs(faults)
    print("sae-result " + json.dumps(out), flush=True)
    spark.stop()
    sys.exit(0)

# the dataset copied: two tasks, files of one 4 MiB object each
out["copy"] = outcome(f"{root}/copy", seconds=write(src.repartition(2), f"{root}/copy", **size))

# a job that writes one object, its storage operations counted around it (its rows in the driver:
# reading them from the mount would count too)
one = spark.createDataFrame(src.where(F.abs(row_hash) % 500 == 0).collect(), src.schema).coalesce(1)
out["one_input"] = checksum(one)
handshake("before")
seconds = write(one, f"{root}/one", **size)
handshake("after")
out["one"] = outcome(f"{root}/one", seconds=seconds)

# append and overwrite: A, then A + B, then C alone
slices = {k: src.where(F.abs(row_hash) % 50 == i) for i, k in enumerate("ABC")}
out["slices"] = {k: checksum(df) for k, df in slices.items()}
modes = f"{root}/modes"
write(slices["A"], modes, "overwrite")
out["modes"] = {"A": outcome(modes, some)}
write(slices["B"], modes, "append")
out["modes"]["A+B"] = outcome(modes, some)
write(slices["C"], modes, "overwrite")
out["modes"]["C"] = outcome(modes, some)

out["fault_jobs"] = fault_jobs(faults)
out["faults"] = {}
for job in out["fault_jobs"]:
    out["faults"].setdefault(job["fault"], job)

# a bad option value and a type Parquet cannot store: one line each
refusals = {}
for name, make in (("object_size", lambda: write(src.limit(1), f"{root}/bad", object_size="5000000")),
                   ("array", lambda: write(spark.sql("SELECT array(1, 2) AS a"), f"{root}/bad")),
                   ("missing", lambda: reader("offload")(f"{root}/nowhere").schema)):
    try:
        make()
        refusals[name] = None
    except Exception as e:   # noqa: BLE001
        refusals[name] = str(e)
out["refusals"] = refusals

# what a run removes after its last repetition: the modes directory, manifests and all, then nothing
delete = spark._jvm.sae.connector.SaeCephProvider.delete
out["delete"] = [delete(dict(cfg["write_options"], path=modes)), os.path.exists(cfg["mount"] + modes),
                 delete(dict(cfg["write_options"], path=modes))]
print("sae-result " + json.dumps(out), flush=True)
spark.stop()
