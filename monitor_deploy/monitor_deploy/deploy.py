"""The monitoring service: Prometheus on the layout's ``prometheus`` node, node_exporter on
every node, and on the local cluster the cgroup exporter (:mod:`monitor_deploy.vhost`)."""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from metareserve import Cluster, Layout, Node, Reservation, Service, StageReport, node_agent
from metareserve.errors import OperationalError

from . import vhost
from .metrics import NODE_LABEL
from .options import MonitorOptions, parse_time, step_seconds
from .prom import PrometheusClient
from .targets import render_config, render_rules

PACKAGES = {"prometheus": "prometheus", "node_exporter": "prometheus-node-exporter"}
COMPONENT = "monitor"


class Monitoring(Service):
    """Prometheus + node_exporter over a reservation, laid out by ``layout``.

    Stages (``install``, ``start``, ``stop``, ``uninstall``) are idempotent and return a
    :class:`StageReport`; a second run reports "no changes" per node. ``cluster`` is reused if
    given, else opened on first use and closed by :meth:`close`.
    """

    def __init__(self, reservation: Reservation, layout: Layout | None = None,
                 options: MonitorOptions | None = None, *, cluster: Cluster | None = None):
        super().__init__(reservation, layout, cluster=cluster)
        self.layout.validate(reservation, require=("prometheus",))
        self.options = options or MonitorOptions()
        self.prometheus_node: Node = self.layout.one(reservation, "prometheus")
        self._client: PrometheusClient | None = None
        self._marker = None

    # -- plumbing -------------------------------------------------------------------------
    def node_dir(self, node: Node | str) -> str:
        """Per-node monitoring state (configs, pid files, logs, TSDB, textfile directory)."""
        return self.reservation.node_dir(node, COMPONENT)

    def _pidfile(self, node: Node | str, daemon: str) -> str:
        return f"{self.node_dir(node)}/{daemon}.pid"

    def pidfiles(self) -> list[str]:
        """The pid files of every process monitoring runs: each node's agents and, on the local
        cluster, the cgroup exporter (what measuring monitoring's own cost reads)."""
        files = [self._pidfile(n, d) for n in self.reservation.nodes for d in self._daemons(n)]
        return files + ([str(self._vhost_dir / "vhost.pid")] if self._vhost_dir is not None else [])

    def textfile_dir(self, node: Node | str) -> str:
        """node_exporter's textfile-collector directory on ``node``."""
        return f"{self.node_dir(node)}/textfile"

    @property
    def url(self) -> str:
        """Prometheus' base URL (on the prometheus node's cluster address)."""
        return f"http://{self.prometheus_node.cluster_address}:{self.options.prometheus_port}"

    @property
    def client(self) -> PrometheusClient:
        if self._client is None:
            self._client = PrometheusClient(self.url, node=self.prometheus_node, cluster=self.cluster)
        return self._client

    def _agent(self, node: Node, fn: str, *args, stage: str, **kwargs):
        return self.cluster.call(node_agent, fn, *args, nodes=[node], stage=stage, **kwargs)[node.name]

    def _daemons(self, node: Node) -> dict[str, list[str]]:
        """Daemon name → argv for ``node``."""
        d, o, addr = self.node_dir(node), self.options, node.cluster_address
        collectors = [] if o.node_collectors is None else \
            ["--collector.disable-defaults", *(f"--collector.{name}" for name in o.node_collectors)]
        out = {"node_exporter": ["prometheus-node-exporter", f"--web.listen-address={addr}:{o.node_exporter_port}",
                                 f"--collector.textfile.directory={self.textfile_dir(node)}", *collectors]}
        if node == self.prometheus_node:
            out["prometheus"] = ["prometheus", f"--config.file={d}/prometheus.yml", f"--storage.tsdb.path={d}/data",
                                 f"--web.listen-address={addr}:{o.prometheus_port}",
                                 f"--storage.tsdb.retention.time={o.retention}"]
        return out

    @property
    def _vhost_dir(self) -> Path | None:
        """Controller-side directory of the local cluster's cgroup exporter (None elsewhere)."""
        accounting = self.reservation.cpu_accounting
        return None if accounting is None else accounting.controller_dir / COMPONENT

    # -- stages ---------------------------------------------------------------------------
    def install(self) -> StageReport:
        """Install Prometheus (prometheus node) and node_exporter (every node) from the
        distribution's packages; runs on every node in parallel."""
        report = StageReport("monitor install")
        wanted = {n.name: [PACKAGES[d] for d in self._daemons(n)] for n in self.reservation.nodes}
        missing = self.cluster.call(node_agent, "missing_packages", stage=report.stage,
                                    per_node=lambda n: {"packages": wanted[n.name]})
        todo = [n for n in self.reservation.nodes if missing[n.name]]
        done = self.cluster.apt_install(nodes=todo, stage=report.stage,
                                        per_node=lambda n: wanted[n.name]) if todo else {}
        for n in self.reservation.nodes:
            installed = done.get(n.name, {}).get("installed")
            if installed:
                report.add(n.name, True, f"installed {' '.join(installed)}")
            else:
                report.add(n.name, False, f"{' '.join(wanted[n.name])} already installed")
        return report

    def start(self) -> StageReport:
        """Write configs, start (or reload) Prometheus and node_exporters, wait until they answer.

        Runs on every node in parallel; Prometheus is reloaded (SIGHUP) when only its
        configuration changed and restarted when its command line changed. On a local cluster the
        agents then leave their hosts' cgroups (:meth:`CpuAccounting.exempt`): they take no share
        of a host's cores or quota, and none of its CPU time.
        """
        report = StageReport("monitor start")
        self._require_installed(report.stage)
        res = self.cluster.each(lambda n: self._start_node(n, report.stage), stage=report.stage)
        vhost = self._start_vhost()
        accounting = self.reservation.cpu_accounting
        for n in self.reservation.nodes:
            actions, running, pids = res[n.name]
            moved = accounting.exempt(pids) if accounting is not None else 0
            if moved:
                actions.append(f"{moved} agent(s) moved out of the host's cgroup")
            if vhost and n == self.prometheus_node:
                actions.append(vhost)
            if actions:
                report.add(n.name, True, "; ".join(actions))
            else:
                report.add(n.name, False, "; ".join(running))
        self._wait_ready(report.stage)
        return report

    def _require_installed(self, stage: str) -> None:
        missing = self.cluster.call(node_agent, "missing_packages", stage=stage,
                                    per_node=lambda n: {"packages": [PACKAGES[d] for d in self._daemons(n)]})
        lacking = {n: m for n, m in missing.items() if m}
        if lacking:
            node, pkgs = sorted(lacking.items())[0]
            raise OperationalError(f"[{node} {stage}] {' '.join(pkgs)} not installed "
                                   f"({len(lacking)} node(s)); run 'monitor-deploy install' first")

    def _start_node(self, node: Node, stage: str) -> tuple[list[str], list[str], list[int]]:
        """(actions taken, running daemons, their pids) for one node."""
        d, actions, running, pids = self.node_dir(node), [], [], []
        self._agent(node, "run", ["mkdir", "-p", self.textfile_dir(node), f"{d}/data"], stage=stage)
        config_changed = False
        if node == self.prometheus_node:
            config_changed = self._write_configs(node, stage)
        for name, argv in self._daemons(node).items():
            pidfile = self._pidfile(node, name)
            args_changed = self._agent(node, "write_file", f"{d}/{name}.args", json.dumps(argv), stage=stage)
            status = self._agent(node, "daemon_status", pidfile, stage=stage)
            if status["alive"] and args_changed:
                self._agent(node, "stop_daemon", pidfile, stage=stage)
            if not status["alive"] or args_changed:
                pid = self._agent(node, "start_daemon", argv, pidfile, f"{d}/{name}.log", stage=stage)["pid"]
                actions.append(f"{name} {'restarted' if status['alive'] else 'started'} (pid {pid})")
                pids.append(pid)
                continue
            pids.append(status["pid"])
            if name == "prometheus" and config_changed:
                self._agent(node, "run", ["kill", "-HUP", str(status["pid"])], stage=stage)
                actions.append(f"prometheus configuration reloaded (pid {status['pid']})")
            else:
                running.append(f"{name} running (pid {status['pid']})")
        return actions, running, pids

    def _write_configs(self, node: Node, stage: str) -> bool:
        d = self.node_dir(node)
        changed = any([
            self._agent(node, "write_file", f"{d}/rules.yml", render_rules(self.reservation, self.options),
                        stage=stage),
            self._agent(node, "write_file", f"{d}/prometheus.yml",
                        render_config(self.reservation, self.layout, self.options, rules_file=f"{d}/rules.yml"),
                        stage=stage)])
        check = self._agent(node, "run", ["promtool", "check", "config", f"{d}/prometheus.yml"], stage=stage)
        if check["rc"] != 0:
            raise OperationalError(f"[{node.name} {stage}] generated {d}/prometheus.yml is invalid: "
                                   f"{(check['stderr'] or check['stdout']).strip().splitlines()[-1]}; "
                                   f"check extra_jobs in the monitor options")
        return changed

    def _start_vhost(self) -> str | None:
        """Start the local cluster's cgroup exporter on the controller; None when nothing to do."""
        vdir = self._vhost_dir
        if vdir is None:
            return None
        accounting = self.reservation.cpu_accounting
        for n in self.reservation.nodes:
            if not accounting.usage_files.get(n.name):
                raise OperationalError(f"[{n.name} monitor start] the local cluster has no cgroup CPU accounting "
                                       f"for this host, so per-host CPU cannot be measured; re-create it on a "
                                       f"machine with cgroup v1 cpuacct or cgroup v2")
        config = {"state_dir": str(accounting.controller_dir), "interval": self.options.vhost_interval,
                  "nodes": [{"name": n.name, "cpu_usage_file": accounting.usage_files[n.name],
                             "capacity": accounting.capacity[n.name],
                             "agent_pidfiles": [self._pidfile(n, name) for name in self._daemons(n)],
                             "textfile_dir": self.textfile_dir(n)} for n in self.reservation.nodes]}
        vdir.mkdir(parents=True, exist_ok=True)
        changed = node_agent.write_file(str(vdir / "vhost.json"), json.dumps(config, indent=1))
        pidfile = str(vdir / "vhost.pid")
        if changed:
            node_agent.stop_daemon(pidfile)
        # run the file itself, not "-m monitor_deploy.vhost": the package would import pandas & co.
        r = node_agent.start_daemon([sys.executable, vhost.__file__, str(vdir / "vhost.json")],
                                    pidfile, str(vdir / "vhost.log"))
        return f"cgroup exporter started on the controller (pid {r['pid']})" if r["started"] else None

    def _wait_ready(self, stage: str, timeout: float = 120.0) -> None:
        port = self.options.node_exporter_port
        self.cluster.call(node_agent, "wait_port", stage=stage, timeout=timeout + 30,
                          per_node=lambda n: {"host": n.cluster_address, "port": port, "timeout": timeout})
        p = self.prometheus_node
        self._agent(p, "wait_port", p.cluster_address, self.options.prometheus_port, timeout, stage=stage)
        deadline = time.monotonic() + timeout
        while not self.client.ready():
            if time.monotonic() > deadline:
                raise OperationalError(f"[{p.name} {stage}] Prometheus is not ready after {timeout:.0f}s; "
                                       f"see {self.node_dir(p)}/prometheus.log")
            time.sleep(0.3)
        names, seen = {n.name for n in self.reservation.nodes}, set()
        while True:  # every node_exporter scraped and stored once (not all at one instant: on hosts
            # of a fraction of a core, scrapes time out now and then): data flows when start returns
            seen |= {r["metric"].get(NODE_LABEL) for r in self.client.query('up{job="node"} == 1')}
            if seen >= names:
                return
            if time.monotonic() > deadline:
                down = {t["labels"].get(NODE_LABEL): t for t in self.client.targets()
                        if t["labels"].get("job") == "node" and t["labels"].get(NODE_LABEL) not in seen} or \
                    {p.name: {"scrapeUrl": "node targets", "health": "no samples stored"}}
                node, t = sorted(down.items())[0]
                raise OperationalError(f"[{node} {stage}] Prometheus cannot scrape node_exporter at "
                                       f"{t['scrapeUrl']}: {t.get('lastError') or t['health']}; "
                                       f"see {self.node_dir(node)}/node_exporter.log")
            time.sleep(0.3)

    def stop(self) -> StageReport:
        """Stop Prometheus, every node_exporter and the cgroup exporter; every node in parallel."""
        report = StageReport("monitor stop")

        def one(node: Node) -> list[str]:
            return [f"{name} stopped (pid {r['pid']})" for name in self._daemons(node)
                    if (r := self._agent(node, "stop_daemon", self._pidfile(node, name),
                                         stage=report.stage))["stopped"]]
        res = self.cluster.each(one, stage=report.stage)
        if self._vhost_dir is not None:
            r = node_agent.stop_daemon(str(self._vhost_dir / "vhost.pid"))
            if r["stopped"]:
                res[self.prometheus_node.name].append(f"cgroup exporter stopped (pid {r['pid']})")
        for n in self.reservation.nodes:
            stopped = res[n.name]
            report.add(n.name, bool(stopped), "; ".join(stopped) if stopped else "nothing running")
        return report

    def uninstall(self) -> StageReport:
        """Stop everything and remove all monitoring state (configs, TSDB, logs) from every node.

        Distribution packages stay installed (local-cluster hosts share one package database).
        """
        self.stop()
        report = StageReport("monitor uninstall")
        script = 'if [ -e "$1" ]; then rm -rf "$1"; echo removed; fi'
        res = self.cluster.each(lambda n: self._agent(n, "run", ["sh", "-c", script, "sh", self.node_dir(n)],
                                                      stage=report.stage), stage=report.stage)
        if self._vhost_dir is not None and self._vhost_dir.exists():
            shutil.rmtree(self._vhost_dir)
        for n in self.reservation.nodes:
            removed = "removed" in res[n.name]["stdout"]
            report.add(n.name, removed, f"removed {self.node_dir(n)}" if removed else "no monitoring state")
        return report

    def status(self) -> StageReport:
        """Daemon state per node and scrape-target health (``details['targets']``, ``details['ok']``).

        Changes nothing; ``ok`` is true when every daemon runs and Prometheus is ready.
        """
        report = StageReport("monitor status")

        def one(node: Node) -> dict[str, dict]:
            return {name: self._agent(node, "daemon_status", self._pidfile(node, name),
                                      stage=report.stage) for name in self._daemons(node)}
        res = self.cluster.each(one, stage=report.stage)
        ok = all(st["alive"] for daemons in res.values() for st in daemons.values())
        targets = []
        if res[self.prometheus_node.name]["prometheus"]["alive"] and self.client.ready():
            targets = [{"job": t["labels"].get("job"), "node": t["labels"].get(NODE_LABEL),
                        "url": t["scrapeUrl"], "health": t["health"], "error": t.get("lastError", "")}
                       for t in self.client.targets()]
        else:
            ok = False
        for n in self.reservation.nodes:
            parts = [f"{name} {'running (pid %s)' % st['pid'] if st['alive'] else 'not running'}"
                     for name, st in res[n.name].items()]
            mine = [t for t in targets if t["node"] == n.name]
            if mine:
                parts.append(f"targets up {sum(t['health'] == 'up' for t in mine)}/{len(mine)}")
            report.add(n.name, False, "; ".join(parts), log=False)
        report.details.update(ok=ok, targets=targets)
        return report

    # -- queries and outputs ---------------------------------------------------------------
    def query(self, promql: str, time: float | str | None = None) -> list[dict]:
        """Instant query: Prometheus' result list (``metric`` labels, ``value`` [t, "v"])."""
        return self.client.query(promql, None if time is None else parse_time(time))

    def query_range(self, promql: str, start, end, step: float | str | None = None) -> list[dict]:
        """Range query between ``start`` and ``end`` (epoch seconds or ISO times); ``step`` in
        seconds or as a duration (default: the scrape interval)."""
        return self.client.query_range(promql, parse_time(start, what="start"), parse_time(end, what="end"),
                                       step_seconds(step, self.options.interval_seconds))

    def read_by(self) -> list[str]:
        """PromQL expressions, each the time up to which every host's counters have been read
        (:func:`monitor_deploy.export.read_by`): activity that ended at ``t`` is scraped once
        each is at least ``t``."""
        from .export import read_by
        return read_by(self)

    def targets(self) -> list[dict]:
        """Prometheus' active targets (``labels``, ``health``, ``lastError``, ``scrapeUrl``)."""
        return self.client.targets()

    def export(self, start, end, out_dir, *, step=None, nodes=None, metrics=None, overwrite=False,
               plots=True):
        """Export per-node metrics between ``start`` and ``end`` into ``out_dir``: see
        :func:`monitor_deploy.export.export_window`."""
        from .export import export_window
        return export_window(self, start, end, out_dir, step=step, nodes=nodes, metrics=metrics,
                             overwrite=overwrite, plots=plots)

    def export_many(self, windows, *, step=None, nodes=None, metrics=None, overwrite=False, plots=True) -> list:
        """Export each ``(start, end, out_dir)`` of ``windows``, querying each series once for windows
        close together: see :func:`monitor_deploy.export.export_windows`."""
        from .export import export_windows
        return export_windows(self, windows, step=step, nodes=nodes, metrics=metrics, overwrite=overwrite,
                              plots=plots)

    def dashboards(self, out_dir) -> list[Path]:
        """Write Grafana dashboards and provisioning files: see :func:`monitor_deploy.dashboards.write_dashboards`."""
        from .dashboards import write_dashboards
        return write_dashboards(self, out_dir)

    @property
    def marker(self):
        """The :class:`~monitor_deploy.marker.RunMarker` publishing which run is active."""
        if self._marker is None:
            from .marker import RunMarker
            self._marker = RunMarker(self)
        return self._marker
