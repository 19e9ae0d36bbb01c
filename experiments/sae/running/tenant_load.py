"""A second tenant on the storage side, while an application runs:

* ``ClusterSpec.storage_load`` (:class:`CpuTenant`): stress-ng keeps a declared share of each
  storage host's cores busy, started over the host's own connection (on the local cluster: inside
  the host's cgroup, so it competes with the OSDs for the same cores);
* ``ClusterSpec.storage_scans`` (:class:`ScanTenant`): a second application, a librados client
  on the first storage host (``app/backend_scan.py`` with the distribution's python), keeps that
  many calls of the object class's scan in flight over the point's objects (every column, 1 %),
  pass after pass, so the OSDs serve its requests beside the application's; the application's
  queries start once it has answered its first call (:data:`FIRST_CALL_S`), so none runs before it.

What each got is sampled every :data:`SAMPLE_S` seconds on its own thread and connections (the
tenant's process group's CPU-seconds; the scan tenant's calls answered, from its log's last
line, which it writes several times a second while calls are answered), so each repetition records them (``tenant_cpu_s``; ``tenant_scan_cpu_s``, ``tenant_scans``).

stress-ng duty-cycles its workers (``--cpu-load``): a share of ``L`` on a host of ``C`` cores
runs ``ceil(L·C)`` workers, each busy ``L·C / workers`` of the time. A worker competes with the
OSD's threads as any process does (CFS, same weight): a share of 1 does not stop the OSDs, it
halves what they get while both want the cores.
"""
from __future__ import annotations

import json
import math
import threading
import time

import numpy as np

from metareserve import Cluster, Reservation, node_agent
from metareserve.errors import OperationalError, SaeError
from metareserve.log import say

from ..app.backend_scan import TENANT_TAG

PACKAGE = "stress-ng"
SAMPLE_S = 1.0
FIRST_CALL_S = 120.0
"""Seconds the scan tenant has to answer its first call: the application's queries start only
once it has (a query measured before the second application scans would not be measured busy)."""
STAGE = "sae tenant load"
KINDS = ("load", "scan")
"""The tenants' kinds: each keeps its pid in its own file on a host (:func:`pidfile`)."""


def pidfile(reservation: Reservation, host: str, kind: str = "load") -> str:
    """Where a host's tenant of ``kind`` records its pid (sae's state on the host)."""
    return f"{reservation.node_dir(host, 'sae')}/tenant-{kind}.pid"


def stop_left(cluster: Cluster, hosts: list[str], kinds: tuple = KINDS) -> list[str]:
    """Stop the tenants of ``kinds`` a killed runner left on ``hosts``; one line per tenant stopped."""
    out = []
    for kind in kinds:
        stopped = cluster.call(node_agent, "stop_group", nodes=hosts, stage=f"{STAGE} stop",
                               per_node=lambda n: {"pidfile": pidfile(cluster.reservation, n.name, kind)})
        out += [f"{h}: stopped a tenant {kind} left running ({r['stopped']} processes, pid {r['pid']})"
                for h, r in stopped.items() if r["stopped"]]
    return out


def stress_argv(share: float, cores: float) -> list[str]:
    """stress-ng's command line for ``share`` of a host's ``cores`` (share > 0)."""
    busy = share * cores
    workers = max(1, math.ceil(busy - 1e-9))
    load = min(100, max(1, round(100 * busy / workers)))
    return [PACKAGE, "--cpu", str(workers), "--cpu-load", str(load), "--quiet"]


def calls_answered(log_tail: str) -> int | None:
    """The calls the scan tenant had answered at its last line of progress (None before its first)."""
    for line in reversed(log_tail.splitlines()):
        if line.startswith(TENANT_TAG):
            try:
                return int(json.loads(line[len(TENANT_TAG):])["calls"])
            except (ValueError, KeyError, TypeError):
                continue   # a line being written
    return None


class Samples:
    """A running total sampled over controller time (a host's tenant CPU-seconds, the scan
    tenant's calls answered); :meth:`between` interpolates."""

    def __init__(self):
        self.times: list[float] = []
        self.totals: list[float] = []

    def add(self, at: float, total: float) -> None:
        self.times.append(at)
        self.totals.append(total)

    def between(self, start: float, end: float) -> float | None:
        """How much the total grew from ``start`` to ``end`` (linear between samples; None unless
        both lie within them)."""
        if not self.times or start < self.times[0] or end > self.times[-1]:
            return None
        a, b = np.interp([start, end], self.times, self.totals)
        return max(0.0, float(b - a))


class Tenant:
    """``with tenant:`` holds a second tenant on ``hosts`` for the block (one an earlier, killed
    runner left there is stopped first); :meth:`cpu_between` gives the CPU-seconds it took on all
    of them in a window. Subclasses say what runs: :meth:`commands` and :meth:`describe`."""

    kind: str                   # one of KINDS
    column: str                 # the result column of its CPU-seconds
    packages: tuple = ()        # Debian packages it needs on its hosts

    def __init__(self, reservation: Reservation, hosts: list[str]):
        self.reservation, self.hosts = reservation, list(hosts)
        self.pidfile = {h: pidfile(reservation, h, self.kind) for h in self.hosts}
        self.logfile = {h: f"{reservation.node_dir(h, 'sae')}/tenant-{self.kind}.log" for h in self.hosts}
        self.samples = {h: Samples() for h in self.hosts}
        self.pids: dict[str, int] = {}
        self.cluster = Cluster(reservation)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._sample, name=f"sae-tenant-{self.kind}", daemon=True)

    def commands(self) -> dict[str, list[str]]:
        """Each host's tenant command (argv)."""
        raise NotImplementedError

    def describe(self, host: str) -> str:
        """One line on what the tenant does on ``host``, for the log."""
        raise NotImplementedError

    def __enter__(self) -> "Tenant":
        try:
            if self.packages:
                self.cluster.apt_install(list(self.packages), nodes=self.hosts, stage=f"{STAGE} install")
            for line in stop_left(self.cluster, self.hosts, (self.kind,)):
                say(None, STAGE, line)
            argv = self.commands()
            started = self.cluster.call(node_agent, "start_daemon", nodes=self.hosts, stage=STAGE,
                                        per_node=lambda n: {"argv": argv[n.name], "pidfile": self.pidfile[n.name],
                                                            "logfile": self.logfile[n.name]})
        except BaseException:
            self._stop()
            raise
        self.pids = {h: r["pid"] for h, r in started.items()}
        for h in self.hosts:
            say(h, STAGE, f"{self.describe(h)} (pid {self.pids[h]})")
        self._sample_once()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()
        self._sample_once()
        self._stop()

    def _stop(self) -> None:
        try:
            stop_left(self.cluster, self.hosts, (self.kind,))
        finally:
            self.cluster.close()

    def _sample(self) -> None:
        while not self.stopped.wait(SAMPLE_S):
            self._sample_once()

    def _sample_once(self) -> None:
        try:
            used = self.cluster.call(node_agent, "group_cpu_seconds", nodes=list(self.pids), stage=f"{STAGE} sample",
                                     per_node=lambda n: {"pgid": self.pids[n.name]})
        except SaeError:
            return   # a host that does not answer now leaves a gap; the window interpolates over it
        now = time.time()
        for h, cpu in used.items():
            self.samples[h].add(now, cpu)

    def cpu_between(self, start: float, end: float) -> float | None:
        """CPU-seconds the tenant took on every host from ``start`` to ``end`` (None: not sampled)."""
        parts = [s.between(start, end) for s in self.samples.values()]
        return None if any(p is None for p in parts) else round(sum(parts), 3)

    def results(self, start: float, end: float) -> dict:
        """The result columns of a repetition from ``start`` to ``end``."""
        return {self.column: self.cpu_between(start, end)}


class CpuTenant(Tenant):
    """``ClusterSpec.storage_load``: stress-ng holding ``share`` of each storage host's cores."""

    kind, packages, column = "load", (PACKAGE,), "tenant_cpu_s"

    def __init__(self, reservation: Reservation, hosts: list[str], share: float):
        super().__init__(reservation, hosts)
        self.share = share
        self.cores: dict[str, float] = {}

    def commands(self) -> dict[str, list[str]]:
        self.cores = self.cluster.call(node_agent, "usable_cores", nodes=self.hosts, stage=STAGE)
        return {h: stress_argv(self.share, self.cores[h]) for h in self.hosts}

    def describe(self, host: str) -> str:
        argv = stress_argv(self.share, self.cores[host])
        return f"a second tenant keeps {self.share:g}x the host's {self.cores[host]:g} cores busy ({' '.join(argv[:5])})"


class ScanTenant(Tenant):
    """``ClusterSpec.storage_scans``: a second application's scans from ``host`` (the command,
    ``argv``, runs ``app/backend_scan.py`` without repetitions: over and over); its calls
    answered are read from its log at every sample."""

    kind, column = "scan", "tenant_scan_cpu_s"

    def __init__(self, reservation: Reservation, host: str, argv: list[str], in_flight: int):
        super().__init__(reservation, [host])
        self.argv, self.in_flight = argv, in_flight
        self.calls = Samples()

    def commands(self) -> dict[str, list[str]]:
        return {self.hosts[0]: self.argv}

    def describe(self, host: str) -> str:
        return f"a second application keeps {self.in_flight} scan calls of the object class in flight"

    def __enter__(self) -> "ScanTenant":
        """Start it, then wait until it has answered a call (:data:`FIRST_CALL_S`)."""
        super().__enter__()
        host, deadline = self.hosts[0], time.time() + FIRST_CALL_S
        while not self.calls.times:
            if time.time() > deadline:
                self.__exit__(None, None, None)
                raise OperationalError(f"[{host} {STAGE}] the second application answered no scan call in "
                                       f"{FIRST_CALL_S:g} s: see its log {self.logfile[host]} on {host}")
            time.sleep(SAMPLE_S / 4)
        say(host, STAGE, "the second application answers its scans: the queries start")
        return self

    def _sample_once(self) -> None:
        super()._sample_once()
        host = self.hosts[0]
        try:
            tail = self.cluster.run(["tail", "-n", "1", self.logfile[host]], nodes=[host],
                                    stage=f"{STAGE} sample")[host]["stdout"]
        except SaeError:
            return
        calls = calls_answered(tail)
        if calls is not None:
            self.calls.add(time.time(), calls)   # as of this sample (at most TENANT_LINE_S late)

    def results(self, start: float, end: float) -> dict:
        calls = self.calls.between(start, end)
        return {**super().results(start, end), "tenant_scans": None if calls is None else round(calls, 1)}
