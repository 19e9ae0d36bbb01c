"""Spark and Ceph dashboard panels against the real Prometheus scraping the real daemons.

They use the shared ``spark_cluster`` / ``ceph_cluster`` session fixtures and are skipped when
those fixtures do not exist (yet).
"""
from __future__ import annotations

import json
import threading
import time

import pytest

from monitor_deploy.dashboards import panel_queries
from test_metrics import grafana_to_promql


def stack(request, fixture):
    try:
        return request.getfixturevalue(fixture)
    except pytest.FixtureLookupError:
        pytest.skip(f"no {fixture} fixture (tests/fixtures) in this checkout")


def assert_panels_return_data(mon, dashboard, jobs, tmp_path, timeout=180.0):
    mon.dashboards(tmp_path)
    queries = panel_queries(json.loads((tmp_path / "dashboards" / f"{dashboard}.json").read_text()))
    deadline = time.monotonic() + timeout
    while True:
        health = {t["labels"]["job"]: t["health"] for t in mon.targets() if t["labels"]["job"] in jobs}
        empty = [title for title, expr in queries if not mon.query(grafana_to_promql(expr))]
        if not empty and all(health.get(j) == "up" for j in jobs):
            return
        assert time.monotonic() < deadline, f"targets {health}; panels without data: {empty}"
        time.sleep(2)


def test_ceph_panels_return_data(monitoring, request, tmp_path):
    ceph = stack(request, "ceph_cluster")
    pool = ceph.data_pool
    ceph.cluster.run(f"for i in 1 2 3 4 5; do rados -p {pool} put sae-monitor-$i /etc/hostname; "
                     f"rados -p {pool} get sae-monitor-$i /dev/null; done",
                     nodes=["node1"], stage="test ceph io", env={"CEPH_CONF": ceph.client_conf("node1")})
    assert_panels_return_data(monitoring, "sae-ceph", {"ceph-mgr"}, tmp_path)


SPARK_APP = """
import os, sys, time
from pyspark.sql import SparkSession
sc = SparkSession.builder.appName("sae-monitor-panels").getOrCreate().sparkContext
deadline = time.time() + 600
while not os.path.exists(sys.argv[1]) and time.time() < deadline:
    sc.parallelize(range(4), 4).map(lambda x: (time.sleep(2), x)[1]).collect()
"""


def test_spark_panels_return_data(monitoring, request, tmp_path):
    """Executor panels need a running application: one runs until the test is done with it."""
    spark = stack(request, "spark_cluster")
    app, stop = tmp_path / "panels_app.py", tmp_path / "stop"
    app.write_text(SPARK_APP)
    runner = threading.Thread(target=spark.submit, args=(str(app),), kwargs={"args": [str(stop)], "stream": False,
                                                                         "log_dir": tmp_path / "logs"})
    runner.start()
    try:
        assert_panels_return_data(monitoring, "sae-spark", {"spark-master", "spark-worker", "spark-executors"},
                                  tmp_path / "dash", timeout=300)
    finally:
        stop.touch()
        runner.join()
