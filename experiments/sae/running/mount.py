"""The CephFS mount on a stack's Spark nodes, made by the build stage for the readers that read
through it (:mod:`sae.planning.readers`) and the writers that write into it
(:mod:`sae.planning.writers`): one mount per node serves both."""
from __future__ import annotations

from metareserve import StageReport

from ..planning import readers, writers
from .context import Stack


def mount_cephfs(stack: Stack, points) -> StageReport | None:
    """CephFS on the Spark nodes for the stack's ``points`` that read or write through it: one
    mount per node serves both, so it is the least-privilege writer's (``fs-write``) where a point
    writes into it, else read-only (``fs-read``). None when no point needs it."""
    write = any(p.spec.workload.writer and writers.get(p.spec.workload.writer).writes_into_mount for p in points)
    if not write and not any(readers.get(p.spec.workload.reader).reads.needs_mount for p in points):
        return None
    spark, ceph = stack.spark, stack.ceph
    nodes = list(dict.fromkeys([spark.driver_node, *spark.worker_nodes]))
    stack.mount = ceph.mountpoint
    return ceph.mount(nodes, user=ceph.users.fs_write if write else ceph.users.fs_read)
