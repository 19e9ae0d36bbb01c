"""The stack a connector benchmark runs on: Ceph and a Spark of 1-core, 2 GiB workers with the
connector's system packages, installed and started on a reservation (shared by the benchmarks
that reserve one)."""
from __future__ import annotations

from rados_deploy import CephCluster, CephOptions
from sae import connector
from spark_deploy import SparkCluster, SparkOptions


def start(res, layout, cluster, ceph_options: CephOptions) -> tuple[CephCluster, SparkCluster]:
    """Ceph (``ceph_options``) and Spark on ``res`` by ``layout``, installed and started over ``cluster``."""
    ceph = CephCluster(res, layout, ceph_options, cluster=cluster)
    spark = SparkCluster(res, layout, SparkOptions(worker_cores=1, worker_memory="2g",
                                                   system_packages=list(connector.SYSTEM_PACKAGES)),
                         cluster=cluster)
    ceph.install(), ceph.start()
    spark.install(), spark.start()
    return ceph, spark
