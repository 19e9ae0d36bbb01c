"""Class data sharing for an application's JVMs: the driver and executors map the classes an
earlier driver loaded from one archive instead of loading and verifying them again.

Measured on a 2-core machine (a client-mode application with two executors, start plus one
query): 38 CPU-s without an archive, 23 with one; a driver alone in local mode 16 and 9.5.

How (JDK's dynamic CDS archives, ``-XX:ArchiveClassesAtExit`` / ``-XX:SharedArchiveFile``):

* the first client-mode application of a Spark home, Java and class path dumps the classes it
  loaded when its driver exits (about 15 CPU-s once, ~160 MB on disk), under
  ``{SOFTWARE_ROOT}/spark/class-archives/<spark home>/<key>.jsa``; the key covers the Spark home,
  the class path and the ``java`` binary and ``jars/`` directory's stat, so a new JDK or Spark gets
  a new archive; a failed application's dump is dropped;
* later applications map it in the driver and, where the nodes have it (copied once to worker
  nodes that lack it), in every executor;
* an archive is valid only for JVMs whose class path starts the same way. The per-node
  configuration directory Spark puts early on every class path differs between nodes, so the
  Spark jars are put first (``extraClassPath``: the user's entries, then ``<home>/jars/*``);
  nothing in Spark's jars has a configuration file's name, so the order changes no setting.

``SparkOptions(class_sharing=False)`` leaves the JVMs as Spark starts them. A JVM that cannot
use an archive starts without it: silently when its class path does not match (``-Xlog:cds=info``
says why), with a warning when the archive is broken or from another JDK build.
"""
from __future__ import annotations

import dataclasses
import hashlib
import tempfile
from pathlib import Path

from metareserve import runtime
from metareserve.errors import SaeError
from metareserve.log import node_log

from . import remote

ARCHIVE_ROOT = f"{runtime.SOFTWARE_ROOT}/spark/class-archives"
DRIVER_CLASSPATH = "spark.driver.extraClassPath"
EXECUTOR_CLASSPATH = "spark.executor.extraClassPath"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
EXECUTOR_OPTIONS = "spark.executor.extraJavaOptions"


def joined(*parts, sep: str) -> str:
    """The non-empty ``parts`` joined with ``sep``: a list-valued Spark property (Java options,
    a class path) from a caller's and ours."""
    return sep.join(str(p) for p in parts if p)


@dataclasses.dataclass
class Sharing:
    """The class-sharing part of one application's configuration: ``conf`` to merge into its
    Spark properties; ``dump`` the file the driver writes at exit (None: it maps ``archive``)."""

    archive: str
    dump: str | None
    conf: dict


def archive_dir(spark_home: str) -> str:
    """Where the archives of ``spark_home`` live on a node (a purge of that Spark removes it)."""
    return f"{ARCHIVE_ROOT}/{hashlib.sha256(spark_home.encode()).hexdigest()[:16]}"


def prepare(spark, conf: dict, tag: str, *, stage: str) -> Sharing | None:
    """The class-sharing configuration of a client-mode application submitted with ``conf``
    (the user's class paths and Java options are kept, ours go first so theirs win); ``tag``
    makes the dump file unique. None when ``spark.options.class_sharing`` is off."""
    if not spark.options.class_sharing:
        return None
    driver = spark.driver_node

    def user(key: str) -> str:
        return spark.options.setting(conf, key)
    home = spark.spark_home(driver)
    classpath = joined(user(DRIVER_CLASSPATH), f"{home}/jars/*", sep=":")
    nodes = list(dict.fromkeys([driver, *spark.worker_nodes]))
    found = spark.cluster.call(remote, "class_archive", nodes=nodes, stage=stage,
                               per_node=lambda n: {"root": archive_dir(spark.spark_home(n.name)),
                                                   "spark_home": spark.spark_home(n.name), "classpath": classpath,
                                                   "java_home": spark.env(n.name).get("JAVA_HOME")})
    archive = found[driver]["path"]
    out = {DRIVER_CLASSPATH: classpath}
    if not found[driver]["exists"]:
        dump = f"{archive}.{tag}.tmp"
        node_log(driver, stage, "no class archive for this Spark and class path yet: the driver saves the classes "
                                "it loads when it exits (once; later applications start faster)")
        # -Xlog:cds=off: the dump warns once per class it skips (thousands of lines on stdout)
        out[DRIVER_OPTIONS] = joined(user(DRIVER_OPTIONS), f"-XX:ArchiveClassesAtExit={dump} -Xlog:cds=off", sep=" ")
        return Sharing(archive, dump, out)
    out[DRIVER_OPTIONS] = joined(f"-XX:SharedArchiveFile={archive}", user(DRIVER_OPTIONS), sep=" ")
    workers = [n for n in spark.worker_nodes if found[n]["path"] == archive]   # same Java, Spark and class path
    if user(EXECUTOR_CLASSPATH) == user(DRIVER_CLASSPATH) and workers == list(spark.worker_nodes):
        _copy(spark, archive, driver, [n for n in workers if not found[n]["exists"]], stage=stage)
        out[EXECUTOR_CLASSPATH] = classpath
        out[EXECUTOR_OPTIONS] = joined(f"-XX:SharedArchiveFile={archive}", user(EXECUTOR_OPTIONS), sep=" ")
    return Sharing(archive, None, out)


def _copy(spark, archive: str, source: str, nodes: list[str], *, stage: str) -> None:
    """Copy the driver node's archive to ``nodes`` (rsync writes a file whole or not at all)."""
    if not nodes:
        return
    with tempfile.TemporaryDirectory() as tmp:
        spark.cluster.get(archive, tmp, nodes=[source], stage=stage)
        spark.cluster.put(str(Path(tmp) / source / Path(archive).name), archive, nodes=nodes, stage=stage)


def finish(spark, sharing: Sharing | None, succeeded: bool, *, stage: str) -> None:
    """Keep the archive a driver dumped at exit if its application succeeded, else drop it (if
    even that fails, e.g. the node is gone, it is logged: the submit's own error matters more)."""
    if sharing and sharing.dump:
        node = spark.driver_node
        try:
            spark.cluster.call(remote, "keep_archive", sharing.dump, sharing.archive, succeeded,
                               nodes=[node], stage=stage)
        except SaeError as e:
            if succeeded:
                raise
            node_log(node, stage, f"could not drop the unfinished class archive {sharing.dump}: {e}")
