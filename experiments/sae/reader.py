"""How a workload reads its data (``workload.reader``): the connector (:mod:`sae.connector`) with
offloading (``offload``) or without (``no-offload``), with its compression and batch size, or
vanilla Spark Parquet over a ceph-fuse mount (``vanilla``).

``build`` runs once per stack (the ``build`` stage): it installs the Ceph object class, builds
what spark-submit needs for the connector and mounts CephFS where a vanilla point needs it. Each
reader is its own least-privilege cephx user (rados_deploy's ``ClientUsers``): the connector
``sae-scan`` (calls the object class on the data pool), the mount ``fs-read`` (read-only).
"""
from __future__ import annotations

from metareserve import StageReport

from .context import Stack, StageContext, dataset_path, merge_report


def system_packages() -> list[str]:
    """Debian packages the Spark nodes need for the connector (spark_deploy installs them)."""
    from .connector import SYSTEM_PACKAGES
    return list(SYSTEM_PACKAGES)


def build(ctx: StageContext, stack: Stack) -> StageReport:
    """Build the connector (object class included), mount CephFS where vanilla points need it."""
    from . import connector
    report = StageReport("build")
    spark, ceph = stack.spark, stack.ceph
    stack.build = connector.build(spark=spark, ceph=ceph)
    merge_report(report, stack.build.report, "connector")
    points = [p for p in ctx.plan.points if p.stack_key == ctx.point.stack_key]
    if any(p.spec.workload.reader == "vanilla" for p in points):
        nodes = list(dict.fromkeys([spark.driver_node, *spark.worker_nodes]))
        merge_report(report, ceph.mount(nodes, user=ceph.users.fs_read), "ceph-fuse mount")
        stack.mount = ceph.mountpoint
    return report


def app_config(ctx: StageContext, stack: Stack) -> dict:
    """Reader part of the Spark application's configuration for the current point."""
    w, point = ctx.point.spec.workload, ctx.point
    if w.reader == "vanilla":
        return {"format": "parquet", "options": {}, "register": [],
                "path": f"file://{stack.mount}{dataset_path(point)}"}
    b = stack.build
    return {"format": b.format, "options": {**b.options, **w.connector_options()}, "register": list(b.register),
            "path": dataset_path(point)}
