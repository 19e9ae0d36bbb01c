"""Submitting applications from the driver node: ship files, run spark-submit, fetch logs."""
from __future__ import annotations

import dataclasses
import os
import re
import secrets
import signal
import shutil
import tempfile
import time
from pathlib import Path

from metareserve.errors import OperationalError, UsageError
from metareserve.log import node_log
from metareserve import node_agent

from . import class_sharing, remote
from .decide import failure_line, rejected_options
from .options import jit_conf

STAGE = "spark-submit"
_DRIVER_ID = re.compile(r"\b(driver-\d{14}-\d{4,})\b")
_DRIVER_FAILED = re.compile(r"State of driver \S+ is (FAILED|ERROR|KILLED)")


@dataclasses.dataclass
class SubmitResult:
    """Outcome of one spark-submit: exit code, output and the fetched logs."""

    exit_code: int
    stdout: str
    driver_log: Path | None
    event_log: Path | None
    node: str
    deploy_mode: str
    seconds: float
    app_id: str | None = None


class SubmitError(OperationalError):
    """An application (or spark-submit itself) failed; ``exit_code`` is the application's."""

    def __init__(self, message: str, result: SubmitResult):
        self.result = result
        self.exit_code = result.exit_code if 0 < result.exit_code < 256 else 1
        super().__init__(message)


def default_log_dir() -> Path:
    """Where submit logs go when no ``log_dir`` is given: ``$SAE_HOME/spark-submits``."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "spark-submits"


def is_remote_uri(path: str) -> bool:
    """True for URIs Spark resolves itself (hdfs://, http://, local:, ...), never shipped."""
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", path)) and not path.startswith("file:")


def local_file(path, what: str) -> Path:
    p = Path(str(path).removeprefix("file://")).expanduser()
    if not p.is_file():
        raise UsageError(f"{p}: {what} not found on the controller")
    return p


def build_argv(*, spark_home: str, master_url: str, deploy_mode: str, app: str, args=(),
               py_files=(), jars=(), files=(), conf=None, spark_args=()) -> list[str]:
    """The spark-submit command line (pure)."""
    argv = [f"{spark_home}/bin/spark-submit", "--master", master_url, "--deploy-mode", deploy_mode]
    for flag, items in (("--py-files", py_files), ("--jars", jars), ("--files", files)):
        if items:
            argv += [flag, ",".join(items)]
    for key, value in (conf or {}).items():
        argv += ["--conf", f"{key}={value}"]
    return argv + list(spark_args) + [app] + [str(a) for a in args]


def _driver_secret_args(spark, path: str, nodes: list[str], conf: dict) -> str:
    """The cluster-mode driver's extra Java options, reading the RPC secret from ``path``.

    A standalone worker strips ``-Dspark.authenticate.secret`` from the driver it launches, and
    the driver refuses to start without it (SPARK-25078); a JVM argument file (mode 600, on every
    worker, removed after the submit) carries it instead, so it is never on a command line.
    """
    secret = spark.auth_secret(STAGE)
    spark.cluster.call(node_agent, "write_file", path, f"-Dspark.authenticate.secret={secret}\n",
                       mode=0o600, nodes=nodes, stage=STAGE)
    user = spark.options.setting(conf, class_sharing.DRIVER_OPTIONS)
    return f"@{path} {user}".strip()


_FLAGS = {"--verbose", "-v", "--supervise", "--help", "-h", "--version"}
_LISTS = {"--py-files": "py_files", "--jars": "jars", "--files": "files"}


def split_submit_args(argv: list[str]) -> dict:
    """Split a spark-submit style command line into :func:`submit` keyword arguments (pure).

    Options up to the first non-option are spark-submit's (those taking a value consume the next
    word unless written ``--opt=value``); the next word is the application, the rest its arguments.
    """
    out: dict = {"spark_args": [], "conf": {}, "py_files": [], "jars": [], "files": []}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        name, eq, value = word.partition("=")
        if word in _FLAGS:
            out["spark_args"].append(word)
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError(f"spark-submit option {word} needs a value")
            value, i = argv[i + 1], i + 1
        i += 1
        if name == "--master":
            raise UsageError("--master is set by spark-deploy (the deployment's master); drop it")
        if name == "--deploy-mode":
            out["deploy_mode"] = value
        elif name in _LISTS:
            out[_LISTS[name]] += [v for v in value.split(",") if v]
        elif name in ("--conf", "-c"):
            key, sep, val = value.partition("=")
            if not sep:
                raise UsageError(f"--conf {value!r}: expected KEY=VALUE")
            out["conf"][key] = val
        else:
            out["spark_args"] += [name, value]
    if i >= len(argv):
        raise UsageError("no application given: pass a .jar or .py after the spark-submit options")
    out["app"], out["args"] = argv[i], argv[i + 1:]
    return out


def submit(spark, app, *, args=(), py_files=(), jars=(), files=(), conf=None, deploy_mode="client",
           env=None, spark_args=(), log_dir=None, stream=True, check=True, on_line=None) -> SubmitResult:
    """Run ``app`` (a .jar, or a .py with ``py_files``) with spark-submit on the driver node.

    Local files are shipped to the driver node (and, in cluster mode, to the workers); every
    spark-submit option can be forwarded through ``spark_args``/``conf``. Output lines go, as
    they arrive, to ``on_line(line)`` when given (called in a worker thread; independent of any
    logging configuration), else, with ``stream``, to the log with a ``[node spark-submit]``
    prefix. The driver log and event log are fetched to ``log_dir`` (default
    :func:`default_log_dir`).

    Raises:
        UsageError: missing files, unknown deploy mode, a Python app in cluster mode.
        SubmitError: the application or spark-submit failed (``check``); carries ``result``.
    """
    if deploy_mode not in ("client", "cluster"):
        raise UsageError(f"deploy mode {deploy_mode!r} is not client or cluster")
    app = str(app)
    if app.endswith(".py") and deploy_mode == "cluster":
        raise UsageError(f"{app}: Python applications cannot run in cluster deploy mode on a Spark "
                         f"standalone cluster; use deploy mode client")
    shipped = {}
    for item, what in [(app, "application"), *((p, "--py-files entry") for p in py_files),
                       *((j, "--jars entry") for j in jars), *((f, "--files entry") for f in files)]:
        if not is_remote_uri(str(item)):
            shipped[str(item)] = local_file(item, what)
    node = spark.driver_node
    sid = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
    rdir = f"{spark.paths(node).submits}/{sid}"
    targets = list(dict.fromkeys([node] + (spark.worker_nodes if deploy_mode == "cluster" else [])))
    spark.cluster.run(["mkdir", "-p", f"{rdir}/events", f"{rdir}/files"], nodes=targets, stage=STAGE)
    for path in shipped.values():
        spark.cluster.put(str(path), f"{rdir}/files/{path.name}", nodes=targets, stage=STAGE)

    def where(item):
        return f"{rdir}/files/{shipped[str(item)].name}" if str(item) in shipped else str(item)

    conf = jit_conf(spark.options, conf or {})
    own_events = "spark.eventLog.dir" not in conf and "spark.eventLog.dir" not in spark.options.conf
    if own_events:
        conf["spark.eventLog.dir"] = f"file://{rdir}/events"
    if deploy_mode == "cluster":
        conf[class_sharing.DRIVER_OPTIONS] = _driver_secret_args(spark, f"{rdir}/driver-auth.args", targets, conf)
        sharing = None
    else:
        sharing = class_sharing.prepare(spark, conf, sid, stage=STAGE)
        conf.update(sharing.conf if sharing else {})
    argv = build_argv(spark_home=spark.spark_home(node), master_url=spark.master_url, deploy_mode=deploy_mode,
                      app=where(app), args=args, py_files=[where(p) for p in py_files],
                      jars=[where(j) for j in jars], files=[where(f) for f in files], conf=conf,
                      spark_args=spark_args)
    run_env = dict(spark.env(node), **{k: str(v) for k, v in (env or {}).items()})
    sink = on_line or (lambda line: node_log(node, STAGE, line))
    r = {"rc": None}
    try:
        r = spark.cluster.connection(spark.reservation.node(node)).call(
            remote, "spark_submit", (argv, run_env, f"{rdir}/driver.log", rdir, stream or on_line is not None),
            stage=STAGE, timeout=None, on_log=sink)
    finally:
        class_sharing.finish(spark, sharing, r["rc"] == 0, stage=STAGE)
        if deploy_mode == "cluster":
            spark.cluster.run(["rm", "-f", f"{rdir}/driver-auth.args"], nodes=targets, stage=STAGE, check=False)
    local = Path(log_dir or default_log_dir()) / sid
    if r["rc"] == 0 and deploy_mode == "cluster" and any(_DRIVER_FAILED.search(ln) for ln in r["output"]):
        r["rc"] = 1   # spark-submit exits 0 even when the cluster-mode driver failed
    result = SubmitResult(exit_code=r["rc"], stdout="\n".join(r["output"]), driver_log=None, event_log=None,
                          node=node, deploy_mode=deploy_mode, seconds=r["seconds"])
    _fetch_logs(spark, result, rdir, local, own_events)
    if check and result.exit_code != 0:
        raise SubmitError(_failure_message(spark, app, result), result)
    return result


def _fetch_logs(spark, result: SubmitResult, rdir: str, local: Path, own_events: bool) -> None:
    """Copy driver log and event log of a finished submit into ``local``."""
    local.mkdir(parents=True, exist_ok=True)
    where = result.node
    if result.deploy_mode == "cluster":
        match = _DRIVER_ID.search(result.stdout)
        if match:
            hits = spark.cluster.call(remote, "find", nodes=spark.worker_nodes, stage=STAGE,
                                      per_node=lambda n: {"root": spark.paths(n.name).work,
                                                          "name": match.group(1)})
            for n, paths in hits.items():
                if paths:
                    where = n
                    for name in ("stdout", "stderr"):
                        _get(spark, n, f"{paths[0]}/{name}", local / "driver")
    _get(spark, result.node, f"{rdir}/driver.log", local)
    result.driver_log = local / "driver.log"
    if result.deploy_mode == "cluster" and (local / "driver" / "stderr").exists():
        result.driver_log = local / "driver" / "stderr"
    if own_events:
        _get(spark, where, f"{rdir}/events/", local / "events")
        logs = sorted((local / "events").glob("*"))
        if logs:
            result.event_log = logs[0]
            result.app_id = logs[0].name.removeprefix("eventlog_v2_").split(".")[0]


def _get(spark, node: str, src: str, dest: Path) -> None:
    with tempfile.TemporaryDirectory(dir=dest.parent if dest.parent.exists() else None) as tmp:
        spark.cluster.get(src, tmp, nodes=[node], stage=STAGE)
        got = Path(tmp) / node
        dest.mkdir(parents=True, exist_ok=True)
        for item in got.iterdir():
            shutil.move(str(item), str(dest / item.name))


def _failure_message(spark, app: str, result: SubmitResult) -> str:
    lines = result.stdout.splitlines()
    where = f"[{result.node} {STAGE}]"
    bad = rejected_options(lines)
    if bad:
        return f"{where} spark-submit rejected its options: {bad}; see 'spark-submit --help'"
    if result.exit_code < 0:
        try:
            how = signal.Signals(-result.exit_code).name
        except ValueError:
            how = f"signal {-result.exit_code}"
        return f"{where} {Path(app).name} was killed by {how}; driver log: {result.driver_log}"
    return (f"{where} {Path(app).name} exited {result.exit_code}: {failure_line(lines)}; "
            f"driver log: {result.driver_log}")
