"""Pure parts: options, rendering, decisions, submit command lines, CLI error families."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import metareserve
from metareserve import Layout
from metareserve.errors import UsageError
from spark_deploy import SparkCluster, SparkOptions, remote
from spark_deploy.cli import main
from spark_deploy.config import Daemon, NodePaths, metrics_properties, spark_defaults
from spark_deploy.decide import daemon_action, failure_line, install_message, rejected_options, software_problem
from spark_deploy.software import tarball_home, tarball_name
from spark_deploy.submit import SubmitResult, _failure_message, build_argv, split_submit_args


@pytest.mark.parametrize("kwargs, field", [
    ({"master_port": 0}, "master_port"), ({"worker_ui_port": 70000}, "worker_ui_port"),
    ({"worker_port": 7077}, "ports must differ"), ({"worker_cores": 0}, "worker_cores"),
    ({"worker_memory": "2 GB"}, "worker_memory"), ({"metrics_namespace": "a-b"}, "metrics_namespace"),
    ({"conf": {"executor.memory": "1g"}}, "Spark properties"), ({"env": {"1X": "y"}}, "env keys"),
    ({"pyarrow": "latest"}, "pyarrow 'latest' is not a pyarrow release"), ({"pyarrow": 26}, "pyarrow 26 "),
    ({"python_packages": ["PyArrow>=20"]}, "python_packages names pyarrow, which the pyarrow option sets"),
    ({"jit": "fast"}, "jit must be one of full, quick, not 'fast'"),
])
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(UsageError, match=field):
        SparkOptions(**kwargs)


def test_options_file_round_trip_and_unknown_key(tmp_path):
    good = tmp_path / "spark.yaml"
    good.write_text(yaml.safe_dump({"worker_cores": 2, "conf": {"spark.sql.shuffle.partitions": 4}}))
    opts = SparkOptions.load(good)
    assert opts.worker_cores == 2 and opts.requirements[0] == "pyspark==4.3.0"
    bad = tmp_path / "bad.yaml"
    bad.write_text("worker_cors: 2\n")
    with pytest.raises(UsageError, match=rf"{bad}: unknown Spark option\(s\) worker_cors"):
        SparkOptions.load(bad)
    assert SparkOptions(spark_source="/x/spark-4.3.0-bin-hadoop3.tgz").requirements[0].startswith("pyarrow")
    assert SparkOptions(version="3.5.3", pyarrow="25.0.1", python_packages=["scipy"]).requirements == [
        "pyspark==3.5.3", "pyarrow==25.0.1", "pandas<3", "scipy"]


def test_which_spark_ships_arrow_compression():
    """spark-sql's Maven poms: arrow-compression from 4.1.0 on, not in 4.0.x or 3.x."""
    from spark_deploy import ships_arrow_compression
    assert [ships_arrow_compression(v) for v in ("3.5.3", "4.0.2", "4.1.0", "4.2.0.dev1", "latest")] == [
        False, False, True, True, None]


def test_rendered_config_has_metrics_and_event_log():
    paths = NodePaths("/s/node1/spark")
    text = spark_defaults(node="node1", python="/v/bin/python", paths=paths, master_url="spark://a:7077",
                          options=SparkOptions(conf={"spark.ui.port": "4050"}, env={"CEPH_CONF": "/c"}),
                          secret="s3cr3t")
    lines = dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert lines["spark.authenticate"] == "true" and lines["spark.authenticate.secret"] == "s3cr3t"
    assert lines["spark.metrics.namespace"] == "sae"
    assert lines["spark.ui.prometheus.enabled"] == "true"
    assert lines["spark.eventLog.dir"] == "file:///s/node1/spark/events"
    assert lines["spark.executorEnv.CEPH_CONF"] == "/c" and lines["spark.ui.port"] == "4050"
    assert "master.sink.prometheusServlet.path=/metrics/master/prometheus" in metrics_properties()


def test_quick_jit_goes_first_in_the_applications_default_java_options_and_merged_conf_keeps_both():
    """jit=quick: C1 only for drivers and executors, first in the default Java options Spark puts
    before an application's own (the site's and application's follow); merged_conf joins Java
    options and class paths."""
    from spark_deploy import merged_conf
    from spark_deploy.options import QUICK_JIT, jit_conf
    quick = SparkOptions(jit="quick", conf={"spark.driver.defaultJavaOptions": "-Dsite=1"})
    assert jit_conf(quick, {"spark.executor.defaultJavaOptions": "-Dapp=2", "spark.ui.port": "4050"}) == {
        "spark.driver.defaultJavaOptions": f"{QUICK_JIT} -Dsite=1",
        "spark.executor.defaultJavaOptions": f"{QUICK_JIT} -Dapp=2", "spark.ui.port": "4050"}
    assert jit_conf(SparkOptions(), {"spark.ui.port": "4050"}) == {"spark.ui.port": "4050"}
    assert merged_conf({"spark.executor.extraJavaOptions": "-Da=1", "spark.driver.memory": "1g"},
                       {"spark.executor.extraJavaOptions": "-Db=2", "spark.driver.memory": "2g",
                        "spark.executor.extraClassPath": "/j.jar"}) == {
        "spark.executor.extraJavaOptions": "-Da=1 -Db=2", "spark.driver.memory": "2g",
        "spark.executor.extraClassPath": "/j.jar"}


def test_daemon_command_lines():
    opts = SparkOptions(worker_cores=2, worker_memory="3g")
    w = Daemon("spark-worker", "node2", "10.0.0.2", "r-node2")
    args = w.args(opts, NodePaths("/s"), "spark://m:7077")
    assert args[-1] == "spark://m:7077" and args[args.index("--cores") + 1] == "2"
    assert w.pidfile(NodePaths("/s")) == "/s/pids/spark-r-node2-org.apache.spark.deploy.worker.Worker-1.pid"


@pytest.mark.parametrize("facts, action", [
    (dict(alive=True, pid=5, config_changed=False, busy_ports=[]), "none"),
    (dict(alive=True, pid=5, config_changed=True, busy_ports=[]), "restart"),
    (dict(alive=False, pid=None, config_changed=False, busy_ports=[7077]), "blocked"),
    (dict(alive=False, pid=9, config_changed=True, busy_ports=[]), "start"),
])
def test_daemon_action(facts, action):
    assert daemon_action(**facts)[0] == action


def test_install_message():
    assert install_message(java_installed=[], spark_before=True, python_before=True, spark_home="/h")[0] is False
    changed, msg = install_message(java_installed=["openjdk-17-jdk-headless"], spark_before=False,
                                   python_before=True, spark_home="/h")
    assert changed and "openjdk-17-jdk-headless" in msg and "/h" in msg


def test_missing_java_is_detected_on_the_node(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = metareserve.call_local(remote, "software", str(tmp_path))
    assert facts["java"] is None and facts["spark"] is False
    assert "java is missing" in software_problem(facts, str(tmp_path))
    assert software_problem({"java": "/usr/bin/java", "spark": True}, "/h") is None


def test_failure_lines():
    out = ["INFO a", "Traceback (most recent call last):", "ValueError: boom on purpose", "INFO shutdown"]
    assert failure_line(out) == "ValueError: boom on purpose"
    assert rejected_options(["Error: Unrecognized option: --bogus", "Usage: spark-submit"]) == \
        "Unrecognized option: --bogus"
    assert rejected_options(out) is None


def test_split_submit_args():
    p = split_submit_args(["--class", "Count", "--conf", "spark.x=1", "--deploy-mode=cluster", "--jars", "a.jar,b.jar",
                           "--verbose", "app.jar", "--conf", "not-ours"])
    assert p["app"] == "app.jar" and p["args"] == ["--conf", "not-ours"]
    assert p["spark_args"] == ["--class", "Count", "--verbose"] and p["conf"] == {"spark.x": "1"}
    assert p["deploy_mode"] == "cluster" and p["jars"] == ["a.jar", "b.jar"]
    for bad, msg in ((["--class"], "needs a value"), (["--master", "local", "a.py"], "--master"),
                     (["--name", "x"], "no application")):
        with pytest.raises(UsageError, match=msg):
            split_submit_args(bad)


def test_build_argv():
    argv = build_argv(spark_home="/h", master_url="spark://m:7077", deploy_mode="client", app="/r/a.py",
                      args=[10], py_files=["/r/m.py"], conf={"spark.x": "1"}, spark_args=["--name", "n"])
    assert argv[:5] == ["/h/bin/spark-submit", "--master", "spark://m:7077", "--deploy-mode", "client"]
    assert argv[-3:] == ["n", "/r/a.py", "10"] and "--py-files" in argv and "spark.x=1" in argv


def test_tarball_names():
    assert tarball_name("https://x/y/spark-4.3.0-bin-hadoop3.tgz") == "spark-4.3.0-bin-hadoop3"
    assert tarball_home("/a/spark-x.tar") == "/opt/sae/spark/spark-x"
    with pytest.raises(UsageError, match="expected a .tgz"):
        tarball_name("/a/spark.zip")


def _reservation(tmp_path):
    res = metareserve.Reservation("u", "ssh", [metareserve.Node("node1", "h1"), metareserve.Node("node2", "h2")])
    return res.save(tmp_path / "res.yaml"), res


def test_layout_errors(tmp_path):
    _, res = _reservation(tmp_path)
    with pytest.raises(UsageError, match="unknown role 'spark-boss'"):
        Layout.parse(["spark-boss=node1"])
    with pytest.raises(UsageError, match="exactly one"):
        SparkCluster(res, Layout({"spark-master": ["node1", "node2"], "spark-worker": ["node2"]}))
    with pytest.raises(UsageError, match="no spark-worker"):
        SparkCluster(res, Layout({"spark-master": ["node1"]}))


def test_cli_usage_errors_exit_2_with_one_line(tmp_path):
    path, _ = _reservation(tmp_path)
    runner = CliRunner()
    cases = [
        (["status", "-r", str(path), "--role", "spark-boss=node1"], "unknown role 'spark-boss'"),
        (["start", "-r", str(tmp_path / "missing.yaml")], "missing.yaml"),
        (["start", "-r", str(path), "--worker-memory", "lots"], "worker_memory"),
        (["submit", "-r", str(path), "--deploy-mode", "cluster", str(tmp_path / "a.py")], "cluster deploy mode"),
        (["submit", "-r", str(path), str(tmp_path / "nothere.jar")], "not found on the controller"),
    ]
    for argv, text in cases:
        r = runner.invoke(main, argv)
        assert r.exit_code == 2, (argv, r.output)
        assert text in r.output and r.output.strip().count("\n") == 0, r.output


def test_cli_entry_point_runs():
    import subprocess
    import sys
    exe = os.path.join(os.path.dirname(sys.executable), "spark-deploy")
    r = subprocess.run([exe, "submit", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "spark-submit" in r.stdout
    assert "$SAE_HOME/spark-submits" in r.stdout and "spark-logs" not in r.stdout   # never the cwd


def test_tarball_fetch_downloads_once_and_names_bad_urls(tmp_path, monkeypatch):
    import functools
    import http.server
    import threading
    from metareserve.errors import OperationalError
    from spark_deploy.software import fetch
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    served = tmp_path / "www"
    served.mkdir()
    (served / "spark-9.9.9-bin-test.tgz").write_bytes(b"not really a tarball")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/spark-9.9.9-bin-test.tgz"
        got = fetch(url, stage="t")
        assert got.read_bytes() == b"not really a tarball" and got.parent == tmp_path / "home" / "spark"
        (served / "spark-9.9.9-bin-test.tgz").unlink()
        assert fetch(url, stage="t") == got                      # cached: no second download
        with pytest.raises(OperationalError, match=r"^\[controller t\] cannot download .*missing\.tgz"):
            fetch(url.replace("spark-9.9.9-bin-test", "missing"), stage="t")
    finally:
        server.shutdown()
    with pytest.raises(UsageError, match="file not found on the controller"):
        fetch(str(tmp_path / "nothere.tgz"), stage="t")


def test_killed_application_is_named_by_its_signal():
    result = SubmitResult(exit_code=-9, stdout='sae-rep {"event": "rep"}', driver_log=Path("logs/driver.log"),
                          event_log=None, node="node1", deploy_mode="client", seconds=3.0)
    assert _failure_message(None, "/x/app.py", result) == \
        "[node1 spark-submit] app.py was killed by SIGKILL; driver log: logs/driver.log"


def test_maven_jar_flags_add_to_the_options_file_and_a_bad_one_is_one_line(tmp_path):
    from spark_deploy.cli import build_options
    from spark_deploy.maven import S3A
    path = tmp_path / "spark.yaml"
    path.write_text(yaml.safe_dump({"maven_jars": [S3A[0]]}))
    opts = build_options(options_file=str(path), maven_jars=(S3A[1], S3A[0]))
    assert opts.maven_jars == [S3A[0], S3A[1]]
    res = metareserve.Reservation("u", "ssh", [metareserve.Node("node1", "h1"), metareserve.Node("node2", "h2")])
    r = CliRunner().invoke(main, ["install", "-r", str(res.save(tmp_path / "res.yaml")), "--maven-jar", "hadoop-aws"])
    assert r.exit_code == 2 and "maven_jars: 'hadoop-aws' is not a Maven jar" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
