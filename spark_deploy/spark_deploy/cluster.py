"""A Spark standalone cluster on a layout's nodes: install, start, status, stop, uninstall."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
import time
from pathlib import Path

from metareserve import Layout, Reservation, Service, StageReport, node_agent, runtime
from metareserve.errors import RemoteError, UsageError
from metareserve.layout import METRICS_PORTS
from metareserve.log import node_log

from . import maven, remote, software
from .config import Daemon, NodePaths, metrics_properties, spark_defaults, spark_env
from .decide import daemon_action, install_message, software_problem
from .options import SparkOptions
from .submit import SubmitResult, submit

START_TIMEOUT = 300.0
TRUSTSTORE_PASSWORD = "changeit"
"""The JDK's own store password: a trust store holds public certificates only, nothing secret."""
STOP_TIMEOUT = 30.0


@dataclasses.dataclass
class DaemonStatus:
    """One daemon's state: role, node, pid, whether it runs, and its address."""

    role: str
    node: str
    address: str
    pid: int | None
    alive: bool


@dataclasses.dataclass
class SparkStatus:
    """What ``status()`` found: daemons, workers ALIVE at the master (None if the master is down)."""

    master_url: str
    master: DaemonStatus
    workers: list[DaemonStatus]
    alive_workers: int | None
    active_apps: int | None = None

    @property
    def running(self) -> bool:
        """Master and every worker run and every worker is ALIVE at the master."""
        return (self.master.alive and all(w.alive for w in self.workers)
                and self.alive_workers == len(self.workers))


_VERSIONS = """import json, os, platform, subprocess
out = {"python": platform.python_version()}
for name in ("pyspark", "pyarrow"):
    try:
        out["spark" if name == "pyspark" else name] = __import__(name).__version__
    except Exception as e:
        out[name] = "unavailable: %s" % e
java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
try:
    r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    out["java"] = (r.stderr or r.stdout).strip().splitlines()[0]
except Exception as e:
    out["java"] = "unavailable: %s" % e
print(json.dumps(out))
"""
"""Run by the node venv's python: the versions :meth:`SparkCluster.versions` reports."""


class SparkCluster(Service):
    """Spark standalone on ``layout``'s spark-master, spark-worker and driver nodes.

    Stages run over SSH through a metareserve ``Cluster`` (``cluster``, or one opened lazily and
    closed by :meth:`close`). Every stage reads facts first and reports per node.
    """

    def __init__(self, reservation: Reservation, layout: Layout | None = None,
                 options: SparkOptions | None = None, *, cluster=None):
        super().__init__(reservation, layout, cluster=cluster)
        self.layout.validate(reservation, require=("spark-master", "spark-worker"))
        self.options = (options or SparkOptions()).validate()
        masters = self.layout.names("spark-master")
        if len(masters) != 1:
            raise UsageError(f"layout names {len(masters)} spark-master nodes ({', '.join(masters)}); "
                             f"a standalone cluster has exactly one")
        self.master_node = masters[0]
        self.worker_nodes = self.layout.names("spark-worker")
        self.driver_node = (self.layout.names("driver") or masters)[0]
        self.nodes = self.layout.all_names("spark-master", "spark-worker", "driver")
        self._pyver: dict[str, str] = {}

    def on_own_connections(self) -> "SparkCluster":
        """This cluster over connections of its own (opened on first use, closed by
        :meth:`close`), for an application that outlives the connections it was started beside."""
        return SparkCluster(self.reservation, self.layout, self.options)

    # -- plumbing -------------------------------------------------------------------------
    def address(self, node: str) -> str:
        return self.reservation.node(node).cluster_address

    def paths(self, node: str) -> NodePaths:
        """Per-node state directories (conf, work, logs, pids, events, submits)."""
        if self.options.prefix:
            return NodePaths(self.options.prefix.replace("{node}", node).rstrip("/"))
        return NodePaths(self.reservation.node_dir(node, "spark"))

    def _python_version(self, node: str) -> str:
        if node not in self._pyver:
            todo = [n for n in self.nodes if n not in self._pyver] or [node]
            r = self.cluster.run(["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 nodes=todo, stage="spark facts")
            self._pyver.update({n: v["stdout"].strip() for n, v in r.items()})
        return self._pyver[node]

    def _venv(self, node: str) -> str:
        eid = runtime.env_id(self.options.requirements, self._python_version(node))
        return f"{runtime.SOFTWARE_ROOT}/py/{eid}"

    def python(self, node: str) -> str:
        """The node venv's python (PYSPARK_PYTHON): pyspark, pyarrow, pandas and Debian's rados."""
        return f"{self._venv(node)}/bin/python"

    def spark_home(self, node: str) -> str:
        """SPARK_HOME on ``node``: the venv's pyspark package, or the unpacked tarball."""
        if self.options.spark_source:
            return software.tarball_home(self.options.spark_source)
        return f"{self._venv(node)}/lib/python{self._python_version(node)}/site-packages/pyspark"

    def versions(self) -> dict[str, dict]:
        """``{node: {"spark", "java", "pyarrow", "python"}}`` on every Spark node (the node venv's
        pyspark and pyarrow, ``java -version``'s first line), for a run's provenance; a failing
        node reads ``"unavailable: ..."``, never raises."""
        def one(node):
            r = self.cluster.run([self.python(node), "-c", _VERSIONS], nodes=[node], stage="spark versions",
                                 env=self.env(node), check=False, timeout=120)[node]
            if isinstance(r, BaseException) or r.get("rc") != 0:
                r = {"stderr": str(r)} if isinstance(r, BaseException) else r
                return {"spark": f"unavailable: {(r.get('stderr') or r.get('error') or '').strip()[-200:]}"}
            return json.loads(r["stdout"].strip().splitlines()[-1])
        results = self.cluster.each(lambda n: one(n.name), nodes=self.nodes, stage="spark versions", check=False)
        return {n: {"spark": f"unavailable: {r}"} if isinstance(r, BaseException) else r for n, r in results.items()}

    @property
    def master_url(self) -> str:
        """``spark://<master address>:<master_port>``."""
        return f"spark://{self.address(self.master_node)}:{self.options.master_port}"

    @property
    def master_ui_url(self) -> str:
        """``http://<master address>:<master_ui_port>`` (``/json/`` lists workers and apps)."""
        return f"http://{self.address(self.master_node)}:{self.options.master_ui_port}"

    def env(self, node: str, ident: str | None = None) -> dict[str, str]:
        """Environment for spark-daemon.sh / spark-submit on ``node``."""
        return spark_env(spark_home=self.spark_home(node), python=self.python(node), paths=self.paths(node),
                         address=self.address(node), ident=ident or f"{self.reservation.name}-{node}",
                         options=self.options)

    def daemons(self) -> list[Daemon]:
        """The master first, then one worker per spark-worker node."""
        ident = lambda n: f"{self.reservation.name}-{n}"  # noqa: E731
        return [Daemon("spark-master", self.master_node, self.address(self.master_node), ident(self.master_node))] + \
               [Daemon("spark-worker", n, self.address(n), ident(n)) for n in self.worker_nodes]

    def metrics_targets(self) -> dict:
        """Prometheus scrape targets: job → {"metrics_path", "targets" ["host:port"], "nodes"}.

        Driver and executor endpoints answer only while an application runs.
        """
        m, ui = self.master_node, self.options.master_ui_port
        driver_port = int(self.options.conf.get("spark.ui.port", METRICS_PORTS["driver"]))
        job = lambda path, pairs: {"metrics_path": path, "targets": [f"{self.address(n)}:{p}" for n, p in pairs],  # noqa: E731
                                   "nodes": [n for n, _ in pairs]}
        return {
            "spark-master": job("/metrics/master/prometheus/", [(m, ui)]),
            "spark-applications": job("/metrics/applications/prometheus/", [(m, ui)]),
            "spark-worker": job("/metrics/prometheus/", [(n, self.options.worker_ui_port) for n in self.worker_nodes]),
            "spark-driver": job("/metrics/prometheus/", [(self.driver_node, driver_port)]),
            "spark-executors": job("/metrics/executors/prometheus/", [(self.driver_node, driver_port)]),
        }

    # -- install ----------------------------------------------------------------------------
    def install(self) -> StageReport:
        """Java 17 and Spark on every node of the layout (in parallel); a second run only checks."""
        stage = "spark install"
        report = StageReport(stage)
        before = self._software(stage)
        # the Python env first: it needs no apt lock, so it proceeds while another deployer's
        # packages install (Ceph's took the lock for 15 s of a fresh install)
        runtime.ensure_python_env(self.cluster, self.options.requirements, nodes=self.nodes,
                                  stage=f"{stage} python")
        java = self.cluster.apt_install([*software.JAVA_PACKAGES, *self.options.system_packages],
                                        nodes=self.nodes, stage=f"{stage} java")
        if self.options.spark_source:
            software.install_tarball(self, [n for n in self.nodes if not before[n]["spark"]], stage=stage)
        self._mkdirs(stage)
        jars = maven.install(self, self.nodes, stage=f"{stage} jars")
        after = self._software(stage)
        for n in self.nodes:
            if not after[n]["spark"]:
                raise RemoteError(n, stage, f"Spark is still missing at {self.spark_home(n)} after install")
            changed, message = install_message(java_installed=java[n]["installed"],
                                               spark_before=before[n]["spark"],
                                               python_before=before[n]["python"],
                                               spark_home=self.spark_home(n))
            if jars[n]:
                changed, message = True, f"{message}; {len(jars[n])} Maven jars placed under {maven.ROOT}"
            report.add(n, changed, message)
        return report

    def _software(self, stage: str) -> dict:
        """Per node: Spark, node venv python and Java present (read now, never cached)."""
        return self.cluster.call(remote, "software", nodes=self.nodes, stage=f"{stage} facts",
                                 per_node=lambda n: {"spark_home": self.spark_home(n.name),
                                                     "python": self.python(n.name)})

    def _mkdirs(self, stage: str) -> None:
        """Create the state directories and mark the root as spark-deploy's (uninstall removes
        only a marked root)."""
        self.cluster.call(remote, "make_state_dirs", nodes=self.nodes, stage=stage,
                          per_node=lambda n: {"root": self.paths(n.name).root,
                                              "dirs": self.paths(n.name).all()})

    # -- start ------------------------------------------------------------------------------
    def start(self) -> StageReport:
        """Master, then workers (in parallel); wait until every worker is ALIVE at the master.

        ``details``: ``alive_workers``, ``seconds``.
        """
        stage = "spark start"
        t0 = time.monotonic()
        report = StageReport(stage)
        self._require_software(stage)
        self._mkdirs(stage)
        changed = self._write_config(stage)
        master, workers = self.daemons()[0], self.daemons()[1:]
        outcomes = {n: [] for n in self.nodes}
        outcomes[master.node].append(self._ensure(master, changed[master.node]))
        done = self.cluster.each(lambda node: self._ensure(workers[self.worker_nodes.index(node.name)],
                                                           changed[node.name]),
                                 nodes=self.worker_nodes, stage="spark-worker start")
        for n, outcome in done.items():
            outcomes[n].append(outcome)
        for n, parts in outcomes.items():
            parts = parts or [(changed[n], "driver configuration " + ("written" if changed[n] else "current"))]
            report.add(n, any(c for c, _ in parts), "; ".join(m for _, m in parts))
        alive = self._wait_workers(workers)
        report.details.update(alive_workers=alive, seconds=round(time.monotonic() - t0, 3))
        node_log(master.node, stage, f"{alive} of {len(workers)} workers ALIVE at {self.master_ui_url}")
        return report

    def _require_software(self, stage: str) -> None:
        facts = self._software(stage)
        for n in self.nodes:
            problem = software_problem(facts[n], self.spark_home(n))
            if problem:
                raise RemoteError(n, stage, problem)

    def _write_config(self, stage: str) -> dict[str, bool]:
        secret = self.auth_secret(stage)

        def defaults(node):
            return spark_defaults(node=node.name, python=self.python(node.name), paths=self.paths(node.name),
                                  master_url=self.master_url, options=self.options, secret=secret)
        a = self.cluster.call(node_agent, "write_file", nodes=self.nodes, stage=f"{stage} config", mode=0o600,
                              per_node=lambda n: {"path": f"{self.paths(n.name).conf}/spark-defaults.conf",
                                                  "text": defaults(n)})
        b = self.cluster.call(node_agent, "write_file", nodes=self.nodes, stage=f"{stage} config",
                              per_node=lambda n: {"path": f"{self.paths(n.name).conf}/metrics.properties",
                                                  "text": metrics_properties()})
        return {n: a[n] or b[n] for n in self.nodes}

    def auth_secret(self, stage: str) -> str:
        """The deployment's RPC secret (``spark.authenticate``): made once on the master node,
        mode 600, and never logged."""
        master = self.master_node
        return self.cluster.call(node_agent, "secret_file", f"{self.paths(master).root}/auth-secret",
                                 nodes=[master], stage=f"{stage} secret")[master]

    def _ensure(self, d: Daemon, config_changed: bool) -> tuple[bool, str]:
        """Start (or restart after a config change) one daemon; (changed, message)."""
        stage = f"{d.role} start"
        paths = self.paths(d.node)
        st = self._call(node_agent, "daemon_status", d.node, stage, d.pidfile(paths))
        busy = [] if st["alive"] else [p for p in d.ports(self.options)
                                       if self._call(node_agent, "port_open", d.node, stage, d.address, p)]
        action, reason = daemon_action(alive=st["alive"], pid=st["pid"], config_changed=config_changed,
                                       busy_ports=busy)
        if action == "none":
            return False, f"{d.role} {reason}"
        if action == "blocked":
            raise RemoteError(d.node, stage, f"{reason} on {d.address}",
                              hint="stop whatever listens there or choose other ports in SparkOptions")
        if action == "restart":
            self._call(node_agent, "stop_daemon", d.node, stage, d.pidfile(paths), STOP_TIMEOUT)
        argv = [f"{self.spark_home(d.node)}/sbin/spark-daemon.sh", "start", d.cls, "1",
                *d.args(self.options, paths, self.master_url)]
        out = self.cluster.run(f"{shlex.join(argv)}; cat {shlex.quote(d.pidfile(paths))}", nodes=[d.node],
                               stage=stage, env=self.env(d.node, d.ident), timeout=300)[d.node]["stdout"]
        port = d.ports(self.options)[0]
        # spark-daemon.sh says "failed to launch" when its pid is not yet a java process ~7 s on
        # (SPARK-15203): a loaded node's launcher can take longer, so only a dead pid is a failure;
        # a live one is checked below (the master's port) or by the workers' registration
        if "failed to launch" in out and not self._call(node_agent, "daemon_status", d.node, stage,
                                                        d.pidfile(paths))["alive"]:
            raise RemoteError(d.node, stage, f"{d.role} exited right after launch: {self._log_tail(d)}",
                              hint=f"see the logs in {paths.logs}")
        if d.role == "spark-master":     # workers are checked by their registration at the master
            try:
                self._call(node_agent, "wait_port", d.node, stage, d.address, port, START_TIMEOUT)
            except RemoteError:
                raise RemoteError(d.node, stage, f"{d.role} did not listen on {d.address}:{port}: "
                                  f"{self._log_tail(d)}", hint=f"see the logs in {paths.logs}") from None
        verb = f"restarted: {reason}" if action == "restart" else "started"
        return True, f"{d.role} {verb} (pid {out.split()[-1]}, {d.address}:{port})"

    def _call(self, module, fn: str, node: str, stage: str, *args):
        return self.cluster.call(module, fn, *args, nodes=[node], stage=stage,
                                 timeout=START_TIMEOUT + 60)[node]

    def _log_tail(self, d: Daemon) -> str:
        pattern = shlex.quote(f"{self.paths(d.node).logs}/spark-{d.ident}-{d.cls}-1-") + "*.out"
        r = self.cluster.run(f"tail -n 40 {pattern}",
                             nodes=[d.node], stage=f"{d.role} start", check=False)[d.node]
        lines = [ln for ln in r["stdout"].splitlines() if "ERROR" in ln or "Exception" in ln]
        return (lines or r["stdout"].splitlines() or ["no log"])[-1].strip()

    def _wait_workers(self, workers: list[Daemon]) -> int:
        want = {f"{w.address}:{self.options.worker_port}": w for w in workers}
        r = self._call(remote, "wait_workers", self.master_node, "spark start",
                       f"{self.master_ui_url}/json/", sorted(want), START_TIMEOUT)
        if not r["master_up"]:
            raise RemoteError(self.master_node, "spark-master start",
                              f"the master's {self.master_ui_url}/json/ does not answer",
                              hint=f"see the logs in {self.paths(self.master_node).logs}")
        if r["missing"]:
            w = want[r["missing"][0]]
            raise RemoteError(w.node, "spark-worker start",
                              f"{len(r['missing'])} of {len(workers)} workers not ALIVE at the master after "
                              f"{r['seconds']:.0f}s ({', '.join(want[m].node for m in r['missing'])}): {self._log_tail(w)}",
                              hint=f"see the logs in {self.paths(w.node).logs}")
        return len(r["alive"])

    # -- status, stop, uninstall ---------------------------------------------------------------
    def status(self) -> SparkStatus:
        """Daemon pids per node and the workers ALIVE at the master (read only)."""
        states = {}
        for d in self.daemons():
            st = self._call(node_agent, "daemon_status", d.node, "spark status", d.pidfile(self.paths(d.node)))
            states[(d.role, d.node)] = DaemonStatus(d.role, d.node, d.address, st["pid"], st["alive"])
        master = states[("spark-master", self.master_node)]
        summary = self._call(remote, "master_state", self.master_node, "spark status",
                             f"{self.master_ui_url}/json/") if master.alive else None
        return SparkStatus(self.master_url, master,
                           [states[("spark-worker", n)] for n in self.worker_nodes],
                           len(summary["alive"]) if summary else None,
                           summary["active_apps"] if summary else None)

    def stop(self) -> StageReport:
        """Workers (in parallel), then the master; says per node what it stopped or found."""
        report = StageReport("spark stop")
        master, workers = self.daemons()[0], self.daemons()[1:]
        done = self.cluster.each(lambda node: self._stop(workers[self.worker_nodes.index(node.name)]),
                                 nodes=self.worker_nodes, stage="spark-worker stop")
        m = self._stop(master)
        for n in self.nodes:
            parts = ([done[n]] if n in done else []) + ([m] if n == master.node else [])
            if not parts:
                report.add(n, False, "no Spark daemon on this node (driver only)")
                continue
            changed = any(c for c, _ in parts)
            report.add(n, changed, "; ".join(msg for _, msg in parts))
        return report

    def _stop(self, d: Daemon) -> tuple[bool, str]:
        r = self._call(node_agent, "stop_daemon", d.node, f"{d.role} stop", d.pidfile(self.paths(d.node)),
                       STOP_TIMEOUT)
        if not r["stopped"]:
            return False, f"{d.role} not running"
        still = self._call(remote, "wait_closed", d.node, f"{d.role} stop", d.address, d.ports(self.options),
                           STOP_TIMEOUT)
        if still:
            raise RemoteError(d.node, f"{d.role} stop", f"pid {r['pid']} is gone but port "
                              f"{', '.join(map(str, still))} on {d.address} still answers",
                              hint="find the process with 'ss -ltnp' on the node and stop it")
        return True, f"{d.role} stopped (pid {r['pid']}{', killed' if r['killed'] else ''})"

    def uninstall(self, *, purge: bool = False) -> StageReport:
        """Stop the daemons and remove every node's Spark state directory.

        With ``purge``, also remove the shared software this deployment used (the node venv or
        the unpacked tarball under /opt/sae), which other deployments with the same options share.
        Java (a distribution package) stays.
        """
        stage = "spark uninstall"
        report = StageReport(stage)
        stopped = self.stop()
        targets = {n: [[self.paths(n).root, remote.STATE_MARKER]] for n in self.nodes}
        if purge:
            for n in self.nodes:
                targets[n] += [[p, None] for p in software.software_paths(self, n)]
        found = self.cluster.call(remote, "remove", nodes=self.nodes, stage=stage,
                                  per_node=lambda n: {"paths": targets[n.name]})
        for n in self.nodes:
            did = ([stopped.nodes[n].message] if stopped.nodes[n].changed else []) + \
                  [f"removed {p}" for p in found[n]]
            report.add(n, bool(did), "; ".join(did) if did else f"nothing left under {self.paths(n).root}")
        return report

    def classpath_conf(self, coordinates) -> dict[str, str]:
        """The driver's and executors' ``extraClassPath`` holding the jars ``coordinates`` name
        (each one of ``options.maven_jars``, at the same path on every node): an application's
        conf, merged with its own by :func:`merged_conf`. UsageError for a jar not deployed."""
        jars = maven.parse_all(list(coordinates), "classpath_conf")
        deployed = {str(j) for j in maven.parse_all(self.options.maven_jars)}
        absent = [str(j) for j in jars if str(j) not in deployed]
        if absent:
            raise UsageError(f"jar {absent[0]} is not among SparkOptions.maven_jars: add it there and run "
                             f"'spark-deploy install'")
        path = ":".join(j.node_path for j in jars)
        return {"spark.driver.extraClassPath": path, "spark.executor.extraClassPath": path}

    def trust_conf(self, certificate: str) -> dict[str, str]:
        """The driver's and executors' Java options making their JVMs trust ``certificate`` (a PEM,
        e.g. a self-signed server's) besides the JDK's CAs: a trust store made once per certificate
        on every node (``/opt/sae/truststores/<sha256>.p12``). Merge it with :func:`merged_conf`."""
        digest = hashlib.sha256(certificate.encode()).hexdigest()[:32]
        path = f"{runtime.SOFTWARE_ROOT}/truststores/{digest}.p12"
        self.cluster.call(remote, "truststore", certificate, path, TRUSTSTORE_PASSWORD, nodes=self.nodes,
                          stage="spark truststore")
        options = f"-Djavax.net.ssl.trustStore={path} -Djavax.net.ssl.trustStorePassword={TRUSTSTORE_PASSWORD}"
        return {"spark.driver.extraJavaOptions": options, "spark.executor.extraJavaOptions": options}

    def compile_jar(self, sources, out, *, classpath=(), stage: str = "spark compile"):
        """Compile the Java sources under ``sources`` against this deployment's Spark jars on
        the driver node and fetch the jar to ``out`` (see :func:`spark_deploy.jar.compile_jar`)."""
        from .jar import compile_jar
        return compile_jar(self, Path(sources), Path(out), classpath=classpath, stage=stage)

    def submit(self, app, *, args=(), py_files=(), jars=(), files=(), conf=None, deploy_mode="client",
               env=None, spark_args=(), log_dir=None, stream=True, check=True, on_line=None) -> SubmitResult:
        """Run ``app`` with spark-submit on the driver node; see :func:`spark_deploy.submit.submit`."""
        return submit(self, app, args=args, py_files=py_files, jars=jars, files=files, conf=conf,
                      deploy_mode=deploy_mode, env=env, spark_args=spark_args, log_dir=log_dir,
                      stream=stream, check=check, on_line=on_line)

