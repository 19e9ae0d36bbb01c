"""Deployments of their own next to the shared one: a tarball-based cluster through its whole
life (install → start → stop → uninstall leaves nothing, every second run a no-op), and the
operational errors: port already in use, unreachable worker."""
from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

import pyspark
from metareserve import Layout, node_agent
from metareserve.errors import OperationalError, RemoteError
from spark_deploy import SparkCluster, SparkOptions
from spark_deploy.software import tarball_home


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    """An uncompressed Spark distribution tarball made from the controller's pyspark package."""
    name = f"spark-saetest-{os.getpid()}"
    out = tmp_path_factory.mktemp("tarball") / f"{name}.tar"
    home = Path(pyspark.__file__).parent
    subprocess.run(["tar", "-cf", str(out), "--transform", f"s,^\\.,{name},", "-C", str(home), "."], check=True)
    return out


def _unchanged(report):
    assert report.nodes and not report.changed, report.nodes


def test_tarball_cluster_lifecycle_leaves_nothing(local_cluster, cluster, tarball):
    layout = Layout({"spark-master": ["node3"], "spark-worker": ["node3"], "driver": ["node3"]})
    options = SparkOptions(spark_source=str(tarball), master_port=7177, master_ui_port=8180, worker_port=7178,
                           worker_ui_port=8181, python_packages=["packaging"],
                           prefix=f"{local_cluster.state_root}/{{node}}/spark-tarball")
    spark = SparkCluster(local_cluster, layout, options, cluster=cluster)
    assert spark.spark_home("node3") == tarball_home(str(tarball))
    installed = spark.install()
    assert installed.nodes["node3"].changed and "installed Spark" in installed.nodes["node3"].message
    _unchanged(spark.install())
    started = spark.start()
    assert started.details["alive_workers"] == 1 and started.changed
    _unchanged(spark.start())
    assert spark.status().running
    assert spark.stop().changed
    _unchanged(spark.stop())
    st = spark.status()
    assert not st.master.alive and st.alive_workers is None
    software = [spark.paths("node3").root, tarball_home(str(tarball)), spark.python("node3").rsplit("/bin/", 1)[0]]
    removed = spark.uninstall(purge=True)
    assert removed.changed
    left = cluster.run(["ls", "-d", *software], nodes=["node3"], stage="test", check=False)["node3"]
    assert left["stdout"] == "", f"left behind: {left['stdout']}"
    for port in (7177, 8180, 7178, 8181):
        assert not cluster.call(node_agent, "port_open", spark.address("node3"), port,
                                nodes=["node3"], stage="test")["node3"]
    _unchanged(spark.uninstall(purge=True))


def test_port_in_use_is_named(spark_cluster, local_cluster, cluster):
    other = SparkCluster(local_cluster, spark_cluster.layout,
                         dataclasses.replace(spark_cluster.options, prefix=f"{local_cluster.state_root}/{{node}}/clash"),
                         cluster=cluster)
    try:
        with pytest.raises(RemoteError, match=r"^\[node1 spark-master start\] port 7077, 8080 already in use "
                                              r"by another process on 10\.77\.\d+\.11"):
            other.start()
    finally:
        other.uninstall()
    assert spark_cluster.status().running          # the shared cluster was not touched


def test_unreachable_worker_is_named(spark_cluster, local_cluster):
    res = dataclasses.replace(local_cluster, nodes=[dataclasses.replace(n, port=2) if n.name == "node3" else n
                                                    for n in local_cluster.nodes])
    with SparkCluster(res, spark_cluster.layout, spark_cluster.options) as broken:
        with pytest.raises(OperationalError, match=r"\[node3 spark [a-z ]+\] cannot reach root@[\d.]+:2 over SSH"):
            broken.start()
