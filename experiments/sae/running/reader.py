"""What the readers of a stack's points need (:mod:`sae.planning.readers`): the connector
(:mod:`sae.connector`) for every reader, a CephFS mount for the readers that read through one,
the indexed cache's jar (:mod:`sae.indexed`) for the readers that keep an index, the OSD index
beside each object (rados_deploy.osd_index) for the readers whose OSDs probe one.

``build`` runs once per stack (the ``build`` stage): it installs the Ceph object class and builds
what spark-submit needs for the connector (and the index); the stage then mounts CephFS where a
point reads or writes through it (:mod:`sae.running.mount`). Each reader is its own
least-privilege cephx user (rados_deploy's ``ClientUsers``): the connector ``sae-scan`` (calls the
object class on the data pool), the mount ``fs-read`` (read-only; ``fs-write`` where a write job of
the stack writes into it).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from metareserve import StageReport

from ..planning import readers
from .context import Session, Stack, dataset_path, merge_report, zones_path


def system_packages() -> list[str]:
    """Debian packages the Spark nodes need for the connector (spark_deploy installs them)."""
    from ..connector import SYSTEM_PACKAGES
    return list(SYSTEM_PACKAGES)


def build(session: Session, stack: Stack, points: list) -> StageReport:
    """Build the connector (object class included) for the stack's ``points`` and, where a point's
    reader keeps an index, the indexed cache's jar."""
    from .. import connector
    report = StageReport("build")
    spark, ceph = stack.spark, stack.ceph
    stack.build = connector.build(spark=spark, ceph=ceph, scan_library=any(map(_scans_in_task, points)))
    stack.build_spark, stack.build_arrow = spark.options.version, ceph.options.class_arrow
    merge_report(report, stack.build.report, "connector")
    if any(readers.get(p.spec.workload.reader).reads.keep == "index" for p in points):
        merge_report(report, _with_index(stack), "indexed cache")
    probing = [p for p in points if _probes_osd_index(p)]
    for path in sorted({dataset_path(p) for p in probing}):
        merge_report(report, _osd_index(session, stack, path, [p for p in probing if dataset_path(p) == path]),
                     f"OSD index {path}")
    return report


def _scans_in_task(point) -> bool:
    """Whether the point's reader may scan objects in the Spark task (``Mode.pushback``: with the
    class's scan as a client library, which the build then makes)."""
    mode = readers.get(point.spec.workload.reader).reads.mode
    return bool(mode and mode.pushback)


def _probes_osd_index(point) -> bool:
    """Whether the point's reader has the OSDs probe each object's index of the key."""
    mode = readers.get(point.spec.workload.reader).reads.mode
    return bool(mode and mode.index)


def _osd_index(session: Session, stack: Stack, path: str, points: list) -> StageReport:
    """The OSD index of the key (:data:`sae.planning.queries.KEY`) beside each object of the
    dataset at CephFS ``path`` (rados_deploy.osd_index): built where missing or stale; what each
    object's index holds and took to build is written for ``points``, the points reading it
    (``RunDir.osd_index``)."""
    from ..planning.queries import KEY
    report = StageReport("OSD index")
    built = stack.ceph.index(path, KEY)
    report.add(stack.ceph.topology.mons[0], built.built > 0, built.line() if built.built else f"no changes: {built.line()}")
    record = {"column": built.column, "objects": [dataclasses.asdict(o) for o in built.per_object]}
    for p in points:
        session.run.write_json(session.run.osd_index(p.id), record)
    return report


def switch_class(stack: Stack) -> StageReport | None:
    """Install the object class built against the point's Arrow where the OSDs run another build
    (restarting the OSDs that had loaded it); None when the class is current (or the stack's build
    not made yet)."""
    if stack.build is None or stack.build_arrow == stack.ceph.options.class_arrow:
        return None
    installed = stack.ceph.install_class()
    stack.build = dataclasses.replace(stack.build, class_build=installed.details["key"])
    return installed


def rebuild(stack: Stack) -> StageReport | None:
    """What a start that switched versions builds again once the class is current
    (:func:`switch_class`): the connector against the point's Spark and its scan library against
    the point's Arrow; None when the stack's build is current (or not made yet)."""
    from .. import connector
    if stack.build is None:
        return None
    arrow, spark = stack.ceph.options.class_arrow, stack.spark.options.version
    if (stack.build_spark, stack.build_arrow) == (spark, arrow):
        return None
    indexed = any(Path(j).name.startswith(INDEXED_JAR) for j in stack.build.jars)
    build = connector.build(spark=stack.spark, ceph=stack.ceph, install_class=False,
                            scan_library="scan_library" in stack.build.options)
    stack.build = dataclasses.replace(build, class_build=stack.build.class_build)
    stack.build_spark, stack.build_arrow = spark, arrow
    if indexed:
        merge_report(build.report, _with_index(stack), "indexed cache")
    return build.report


INDEXED_JAR = "sae-indexed-"
"""How the indexed cache's jars are named (:func:`sae.indexed.build.cluster_jar`)."""


def _with_index(stack: Stack) -> StageReport:
    """Add the indexed cache's jar, compiled against the stack's Spark, to the stack's build
    (not for a Spark before the index's: no point of it reads through the index, the plan refuses
    them)."""
    from ..indexed.build import cluster_jar
    spark = stack.spark
    report = StageReport("indexed build")
    need = readers.INDEXED.reads.min_spark
    major = spark.options.version.split(".")[0]
    if major.isdigit() and int(major) < need:
        report.add(spark.driver_node, False, f"no changes: Spark {spark.options.version} is older than the index's {need}")
        return report
    jar, built = cluster_jar(spark, stage=report.stage)
    stack.build = dataclasses.replace(stack.build, jars=[*stack.build.jars, str(jar)])
    report.add(spark.driver_node, built, f"compiled {jar.name}" if built else f"no changes: {jar.name} up to date")
    return report


def app_config(point, stack: Stack) -> dict:
    """Reader part of the Spark application's configuration for ``point``."""
    w = point.spec.workload
    config = w.read_source(dataset_path(point), build=stack.build, mount=stack.mount,
                           fmt=point.spec.data.format).app_config()
    if w.question.joins_zones:
        config["zones"] = w.read_source(zones_path(point), build=stack.build, mount=stack.mount).path
    return config
