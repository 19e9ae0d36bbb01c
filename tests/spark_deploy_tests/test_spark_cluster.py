"""The shared Spark cluster (1 master + 2 workers on the session's local cluster): idempotent
stages, Python and Java applications with checked answers, exit statuses, metrics endpoints."""
from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from metareserve import Cluster
from metareserve.errors import RemoteError, UsageError
from fixtures.spark import SPARK_ROLES
from spark_deploy import SubmitError, class_sharing

APPS = Path(__file__).parent / "apps"
ROWS, BOUND = 1000, 300


def _value(result, key: str) -> str:
    lines = [ln.split(" ", 1)[1] for ln in result.stdout.splitlines() if ln.startswith(key + " ")]
    assert lines, f"{key} missing from the driver output:\n{result.stdout[-2000:]}"
    return lines[-1]


@pytest.fixture(scope="module")
def parquet_dir(spark_cluster, cluster):
    """A Parquet directory (4 files, x = 0..999) at the same path on every Spark node."""
    path = f"{spark_cluster.reservation.state_root}/spark-testdata/xs"
    code = ("import os, sys, pyarrow as pa, pyarrow.parquet as pq\n"
            "d = sys.argv[1]\n"
            "if not os.path.exists(d):\n"
            "    tmp = d + '.tmp%d' % os.getpid(); os.makedirs(tmp)\n"
            "    for i in range(4):\n"
            f"        pq.write_table(pa.table({{'x': list(range(i * {ROWS // 4}, (i + 1) * {ROWS // 4}))}}),"
            " tmp + '/part-%d.parquet' % i)\n"
            "    os.rename(tmp, d)\n")
    for node in spark_cluster.nodes:   # one after the other: local hosts share the disk
        cluster.run([spark_cluster.python(node), "-c", code, path], nodes=[node], stage="test data")
    return path


ODD = "odd dir $(touch {mark}) 'q' \"dq\""
"""A source directory name a shell would run or split: compile_jar must pass it as one argument."""


@pytest.fixture(scope="module")
def count_jar(spark_cluster, tmp_path_factory):
    """Count.java compiled by SparkCluster.compile_jar on the driver node, from a directory
    whose name holds spaces, quotes and ``$(...)``; fetched here."""
    local = tmp_path_factory.mktemp("jar")
    mark = local / "shell-ran"
    src = local / "src" / ODD.format(mark=mark)
    src.mkdir(parents=True)
    (src / "Count.java").write_text((APPS / "Count.java").read_text())
    jar = spark_cluster.compile_jar(local / "src", local / "count.jar", stage="test compile")
    assert not mark.exists(), "a source path reached a shell"
    return jar


def test_a_source_that_does_not_compile_is_named_with_its_first_error(spark_cluster, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "Broken.java").write_text("class Broken {\n  int f() { return undefinedName; }\n}\n")
    with pytest.raises(RemoteError) as e:
        spark_cluster.compile_jar(src, tmp_path / "broken.jar", stage="test compile")
    line = str(e.value)
    assert line.startswith("[node1 test compile] 'javac' exited 1: "), line
    assert "Broken.java:2: error: cannot find symbol" in line and "return undefinedName;" in line, line
    assert "JDK" not in line and "\n" not in line, line
    assert not (tmp_path / "broken.jar").exists()


def test_workers_alive_and_second_runs_change_nothing(spark_cluster):
    st = spark_cluster.status()
    assert st.running and st.alive_workers == 2
    assert [w.node for w in st.workers] == ["node2", "node3"] and st.master.node == "node1"
    for report in (spark_cluster.install(), spark_cluster.start()):
        assert set(report.nodes) == {"node1", "node2", "node3"}
        assert not report.changed, report.nodes
    assert spark_cluster.start().details["alive_workers"] == 2


def test_a_worker_whose_launcher_outlasts_spark_daemon_sh_check_starts(spark_cluster, tmp_path):
    """spark-daemon.sh prints "failed to launch" when its pid is not a java process ~7 s after it
    started it (SPARK-15203), as on a loaded node; the daemon goes on starting. Here node3's worker
    launcher waits 9 s first (``BASH_ENV`` from the node's spark-env.sh runs in spark-class's bash,
    once): the start completes and every worker registers."""
    slow = tmp_path / "slow-launcher.sh"
    slow.write_text('rm -f "$BASH_ENV"\nsleep 9\n')
    env = Path(spark_cluster.paths("node3").conf) / "spark-env.sh"
    spark_cluster.stop()
    try:
        env.write_text(f"BASH_ENV={slow}\n")
        report = spark_cluster.start()
    finally:
        env.unlink(missing_ok=True)
    assert not slow.exists(), "the worker's launcher never ran the slow start"
    assert report.details["alive_workers"] == 2 and "spark-worker started" in report.nodes["node3"].message
    assert spark_cluster.status().alive_workers == 2


def test_compiled_jar_holds_the_class_and_no_shell_ran(count_jar):
    listing = subprocess.run(["jar", "tf", str(count_jar)], capture_output=True, text=True, check=True).stdout
    assert "Count.class" in listing.split()
    assert not (count_jar.parent / "shell-ran").exists()


def test_java_parquet_count_client_and_cluster_mode(spark_cluster, parquet_dir, count_jar, tmp_path):
    client = spark_cluster.submit(count_jar, args=[parquet_dir, BOUND], spark_args=["--class", "Count"],
                                  log_dir=tmp_path, stream=False)
    assert _value(client, "COUNT") == str(BOUND)
    assert client.event_log is not None
    cluster = spark_cluster.submit(count_jar, args=[parquet_dir, BOUND // 2], spark_args=["--class", "Count"],
                                   deploy_mode="cluster", log_dir=tmp_path, stream=False)
    assert cluster.exit_code == 0
    stdout = cluster.driver_log.parent / "stdout"          # the driver ran on a worker
    assert f"COUNT {BOUND // 2}" in stdout.read_text()


def test_failing_application_exit_status_reaches_caller(spark_cluster, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="sae")
    with pytest.raises(SubmitError) as err:
        spark_cluster.submit(APPS / "fail.py", args=["exit", 3], log_dir=tmp_path, stream=True)
    assert "[node1 spark-submit] exiting with 3 on purpose" in caplog.text      # streamed, host-prefixed
    assert err.value.exit_code == 3 and err.value.result.exit_code == 3
    assert str(err.value).startswith("[node1 spark-submit] fail.py exited 3")
    caplog.set_level(logging.CRITICAL, logger="sae")   # on_line gets every line whatever logging says
    lines = []
    r = spark_cluster.submit(APPS / "fail.py", args=["exit", 4], log_dir=tmp_path, stream=False, check=False,
                             on_line=lines.append)
    assert r.exit_code == 4 and r.driver_log.is_file()
    assert any("exiting with 4 on purpose" in ln for ln in lines) and "exiting with 4" not in caplog.text


LONG_LINE_APP = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("long line").getOrCreate()
n = spark.range(1000).count()
for i in range(8):
    print("long-line " + json.dumps({"n": n, "i": i, "pad": "x" * 400_000}), flush=True)
spark.stop()   # Spark logs while the application's lines are still on their way
"""


def test_a_long_application_line_arrives_whole_beside_sparks_log(spark_cluster, tmp_path):
    app = tmp_path / "long_line.py"
    app.write_text(LONG_LINE_APP)
    lines = []
    r = spark_cluster.submit(app, log_dir=tmp_path, on_line=lines.append)
    assert r.exit_code == 0
    got = [ln for ln in lines if ln.startswith("long-line ")]
    assert [json.loads(ln[len("long-line "):]) for ln in got] == [{"n": 1000, "i": i, "pad": "x" * 400_000}
                                                                  for i in range(8)]
    assert any("SparkContext" in ln for ln in lines)   # Spark's log came through the same callback


def test_bad_submit_option_and_python_cluster_mode(spark_cluster, tmp_path):
    with pytest.raises(SubmitError, match=r"^\[node1 spark-submit\] spark-submit rejected its options: "
                                          r"Unrecognized option: --bogus"):
        spark_cluster.submit(APPS / "pi.py", spark_args=["--bogus", "1"], log_dir=tmp_path, stream=False)
    with pytest.raises(UsageError, match="cannot run in cluster deploy mode"):
        spark_cluster.submit(APPS / "pi.py", deploy_mode="cluster")
    with pytest.raises(UsageError, match="nothere.py: --py-files entry not found on the controller"):
        spark_cluster.submit(APPS / "pi.py", py_files=[APPS / "nothere.py"])


def test_driver_and_executors_map_the_class_archive_an_earlier_driver_dumped(spark_cluster, cluster, tmp_path):
    """The first application of a Spark home and class path dumps its driver's classes at exit;
    the next maps them in its driver and in every executor (the maps of their JVMs say so)."""
    home = spark_cluster.spark_home(spark_cluster.driver_node)
    folder = class_sharing.archive_dir(home)

    def run():
        r = spark_cluster.submit(APPS / "archive_maps.py", log_dir=tmp_path, stream=False)
        return json.loads(_value(r, "DRIVER")), json.loads(_value(r, "EXECUTORS"))
    driver, executors = run()
    if not any(p.startswith(folder) for p in driver):   # this was the dumping run
        driver, executors = run()
    ours = [p for p in driver if p.startswith(folder + "/")]
    assert len(ours) == 1 and ours[0].endswith(".jsa"), driver
    assert len(executors) == 8 and all(ours[0] in maps for maps in executors), executors
    listing = cluster.run(["ls", "-A", folder], nodes=[spark_cluster.driver_node], stage="test")
    files = listing[spark_cluster.driver_node]["stdout"].split()   # one archive per class path (other tests' too)
    assert ours[0].rsplit("/", 1)[1] in files and all(f.endswith(".jsa") for f in files), files   # no dump left over


def test_python_pi_while_every_metrics_endpoint_serves_prometheus_text(spark_cluster, local_cluster, tmp_path):
    marker = f"{spark_cluster.paths(spark_cluster.driver_node).root}/metrics-test-{time.time_ns()}"
    done = {}
    app = threading.Thread(target=lambda: done.update(r=spark_cluster.submit(
        APPS / "pi.py", args=[200000, marker], py_files=[APPS / "pihelper.py"], log_dir=tmp_path,
        stream=False)))
    app.start()
    targets = spark_cluster.metrics_targets()
    urls = {f"http://{t}{spec['metrics_path']}": job for job, spec in targets.items() for t in spec["targets"]}
    assert {u.split(":", 2)[2] for u in urls} >= {"8080/metrics/master/prometheus/", "8081/metrics/prometheus/",
                                                  "4040/metrics/executors/prometheus/"}
    try:
        families = _scrape_until_complete(urls, app)
    finally:
        with Cluster(local_cluster) as other:       # the shared connection is busy with the submit
            other.run(["touch", marker], nodes=[spark_cluster.driver_node], stage="test")
        app.join()
    r = done["r"]
    assert r.exit_code == 0
    assert math.isclose(float(_value(r, "PI_ESTIMATE")), math.pi, abs_tol=0.05)
    assert _value(r, "EXECUTOR_PYARROW") == "26.0.1"          # executors run the node venv
    assert r.driver_log.is_file() and "PI_ESTIMATE" in r.driver_log.read_text()
    assert r.event_log is not None and r.event_log.exists() and r.app_id.startswith("app-")
    assert set(families) == set(urls), f"no Prometheus text from {set(urls) - set(families)}"
    driver = next(u for u, job in urls.items() if job == "spark-driver")
    assert any(n.startswith("metrics_sae_driver_") for n in families[driver])   # fixed namespace
    assert any("executor" in n for n in families[next(u for u, j in urls.items() if j == "spark-executors")])


def _scrape_until_complete(urls: dict, app: threading.Thread) -> dict:
    """url → metric family names, polling until every URL served parseable Prometheus text."""
    families: dict[str, list[str]] = {}
    deadline = time.monotonic() + 900
    while app.is_alive() and time.monotonic() < deadline and len(families) < len(urls):
        for url in set(urls) - set(families):
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    names = [f.name for f in text_string_to_metric_families(resp.read().decode())]
            except (OSError, ValueError):   # not up yet, or "Spark is starting up" instead of metrics
                continue
            if names and (urls[url] != "spark-executors" or any("executor" in n for n in names)):
                families[url] = names
        time.sleep(1)
    return families


def test_cli_status_and_start_on_the_running_cluster(spark_cluster, local_cluster):
    exe = Path(sys.executable).parent / "spark-deploy"
    roles = [f"--role={role}={','.join(nodes)}" for role, nodes in SPARK_ROLES.items()]
    st = subprocess.run([str(exe), "status", "-r", str(local_cluster.path), *roles], capture_output=True, text=True)
    assert st.returncode == 0, st.stderr
    assert "spark-master running" in st.stdout and "2 of 2 workers ALIVE" in st.stdout
    start = subprocess.run([str(exe), "start", "-r", str(local_cluster.path), *roles], capture_output=True, text=True)
    assert start.returncode == 0, start.stderr
    assert "spark start: no changes on 3 nodes; 2 workers ALIVE" in start.stdout
