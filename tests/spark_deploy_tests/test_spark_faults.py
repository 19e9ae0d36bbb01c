"""Fault: a node lost in the middle of ``spark install`` (its sshd and every session it serves
killed, on a 2-host local cluster of this test's own, so the session's connections are spared):
one error naming the host and the stage; once the host is back, the same install completes."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fixtures.processes import kill_all, tree
import metareserve
from metareserve import Cluster, Layout, runtime
from metareserve.errors import OperationalError
from spark_deploy import SparkCluster, SparkOptions


@pytest.fixture
def own_cluster(own_local_cluster):
    with own_local_cluster("lost", nodes=2) as (_, res):
        yield res


def test_node_lost_during_install_is_named_and_a_rerun_completes(own_cluster, figure):
    res = own_cluster
    layout = Layout({"spark-master": ["node1"], "driver": ["node1"], "spark-worker": ["node2"]})
    # a requirement set of its own: a fresh node venv is built (pip installs pyspark: seconds)
    options = SparkOptions(python_packages=["packaging"], worker_cores=1, worker_memory="1g")
    venv = None
    with Cluster(res) as cluster:
        spark = SparkCluster(res, layout, options, cluster=cluster)
        venv = Path(spark.python("node2")).parents[1]
        sshd = int(Path(res.node_dir("node2", "sshd"), "sshd.pid").read_text())
        lost = threading.Event()

        def lose_node2():
            deadline = time.monotonic() + 600
            while not venv.exists() and time.monotonic() < deadline:   # the venv build has begun
                time.sleep(0.05)
            kill_all(tree(sshd))
            lost.set()

        killer = threading.Thread(target=lose_node2, daemon=True)
        killer.start()
        try:
            with pytest.raises(OperationalError) as e:
                spark.install()
        finally:
            killer.join()
        assert lost.is_set()
        assert "[node2 spark install" in str(e.value), str(e.value)
        assert len(str(e.value).splitlines()) == 1
    figure(f"node lost during spark install: {e.value}")
    try:
        # the host comes back (reserving the same name restores its sshd); the same install completes
        start = time.monotonic()
        metareserve.reserve(provider="local", name=res.name, nodes=2, out=res.path)
        with Cluster(res) as cluster:
            spark = SparkCluster(res, layout, options, cluster=cluster)
            report = spark.install()
            assert set(report.nodes) == {"node1", "node2"}
            r = cluster.run([spark.python("node2"), "-c", "import pyspark, packaging; print(pyspark.__version__)"],
                            nodes=["node2"], stage="test")
            assert r["node2"]["stdout"].strip()
            figure(f"host back and install completed in {time.monotonic() - start:.1f}s")
            assert not spark.install().changed
    finally:
        with Cluster(res) as cluster:
            SparkCluster(res, layout, options, cluster=cluster).uninstall(purge=True)
    assert runtime.SOFTWARE_ROOT in str(venv) and not venv.exists()
