"""What the writers of a stack's write jobs need (:mod:`sae.planning.writers`), made by the build
stage once per stack: each writer's :class:`Writes`, the target the application writes through
(:class:`~sae.planning.writers.WriteTarget`) with the jars and the Spark settings its start
needs. Each writer entry names its function here (``Writer.target``); each is built from the
deployers' own APIs: the connector's write options (sae-ceph), a writable CephFS mount
(rados_deploy, Spark's FileOutputCommitter), the gateway's S3 user and Hadoop's S3A jars
(rados_deploy and spark_deploy).
"""
from __future__ import annotations

import dataclasses
import importlib

from metareserve import StageReport

from ..planning import writers
from ..planning.writers import WriteTarget
from .context import Stack, StageContext, merge_report

OUTPUT = "/sae-writes"
"""The CephFS directory the CephFS writers write under (``<run>/<point>/r<repetition>``)."""


@dataclasses.dataclass(frozen=True)
class Writes:
    """A writer's part of the application: its ``target``, the ``jars`` and Spark ``conf`` the
    application starts with, and what building it did (``report``)."""

    target: WriteTarget
    jars: tuple[str, ...] = ()
    conf: dict = dataclasses.field(default_factory=dict)
    report: StageReport | None = None


def build(ctx: StageContext, stack: Stack) -> StageReport:
    """Each writer a point of the stack writes through, made once per stack into ``stack.writes``."""
    report = StageReport("writers")
    points = [p for p in ctx.plan.points if p.stack_key == ctx.point.stack_key]
    for name in dict.fromkeys(p.spec.workload.writer for p in points if p.spec.workload.writer):
        if name not in stack.writes:
            module, _, function = writers.get(name).target.partition(":")
            stack.writes[name] = getattr(importlib.import_module(module), function)(stack)
        if stack.writes[name].report is not None:
            merge_report(report, stack.writes[name].report, name)
    return report


def submit_parts(stack: Stack, names) -> tuple[list[str], dict]:
    """(jars, Spark conf) an application writing through writers ``names`` starts with."""
    jars, conf = [], {}
    for name in names:
        w = stack.writes[name]
        jars += [j for j in w.jars if j not in jars]
        conf.update(w.conf)
    return jars, conf


def sae_ceph(stack: Stack) -> Writes:
    """The connector's write (its least-privilege writer), read back through offload."""
    b = stack.build
    target = WriteTarget(format=b.format, uri=OUTPUT, options=dict(b.write_options), read_format=b.format,
                         read_uri=OUTPUT, read_options={**b.options, "mode": "offload"})
    return Writes(target)


def _cephfs(stack: Stack, algorithm: int) -> Writes:
    """Spark's Parquet writer over the writable CephFS mount, FileOutputCommitter ``algorithm``."""
    nodes = list(dict.fromkeys([stack.spark.driver_node, *stack.spark.worker_nodes]))
    mounted = stack.ceph.mount_writable(nodes)
    root = f"file://{stack.ceph.writable_mountpoint}{OUTPUT}"
    target = WriteTarget(format="parquet", uri=root, options={}, read_format="parquet", read_uri=root,
                         read_options={}, hadoop={"mapreduce.fileoutputcommitter.algorithm.version": str(algorithm)})
    return Writes(target, report=mounted)


def cephfs_v1(stack: Stack) -> Writes:
    return _cephfs(stack, 1)


def cephfs_v2(stack: Stack) -> Writes:
    return _cephfs(stack, 2)
