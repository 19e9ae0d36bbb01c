"""A second tenant on the storage side (``ClusterSpec.storage_load``): while an application runs,
stress-ng keeps a declared share of each storage host's cores busy, started over the host's
own connection (on the local cluster: inside the host's cgroup, so it competes with the OSDs
for the same cores), and what it got is sampled every :data:`SAMPLE_S` seconds on its own
thread and connections, so each repetition records the CPU the tenant took during it.

stress-ng duty-cycles its workers (``--cpu-load``): a share of ``L`` on a host of ``C`` cores
runs ``ceil(L·C)`` workers, each busy ``L·C / workers`` of the time. A worker competes with the
OSD's threads as any process does (CFS, same weight): a share of 1 does not stop the OSDs, it
halves what they get while both want the cores.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from metareserve import Cluster, Reservation, node_agent
from metareserve.errors import SaeError
from metareserve.log import say

PACKAGE = "stress-ng"
SAMPLE_S = 1.0
STAGE = "sae tenant load"


def pidfile(reservation: Reservation, host: str) -> str:
    """Where a host's tenant load records its pid (sae's state on the host)."""
    return f"{reservation.node_dir(host, 'sae')}/tenant-load.pid"


def stop_left(cluster: Cluster, hosts: list[str]) -> list[str]:
    """Stop a tenant load a killed runner left on ``hosts``; one line per host that had one."""
    stopped = cluster.call(node_agent, "stop_group", nodes=hosts, stage=f"{STAGE} stop",
                           per_node=lambda n: {"pidfile": pidfile(cluster.reservation, n.name)})
    return [f"{h}: stopped a tenant load left running ({r['stopped']} processes, pid {r['pid']})"
            for h, r in stopped.items() if r["stopped"]]


def stress_argv(share: float, cores: float) -> list[str]:
    """stress-ng's command line for ``share`` of a host's ``cores`` (share > 0)."""
    busy = share * cores
    workers = max(1, math.ceil(busy - 1e-9))
    load = min(100, max(1, round(100 * busy / workers)))
    return [PACKAGE, "--cpu", str(workers), "--cpu-load", str(load), "--quiet"]


class Samples:
    """One host's tenant CPU-seconds over controller time; :meth:`between` interpolates."""

    def __init__(self):
        self.times: list[float] = []
        self.cpu: list[float] = []

    def add(self, at: float, cpu_s: float) -> None:
        self.times.append(at)
        self.cpu.append(cpu_s)

    def between(self, start: float, end: float) -> float | None:
        """CPU-seconds used from ``start`` to ``end`` (linear between samples; None unless both
        lie within them)."""
        if not self.times or start < self.times[0] or end > self.times[-1]:
            return None
        a, b = np.interp([start, end], self.times, self.cpu)
        return max(0.0, float(b - a))


class TenantLoad:
    """``with TenantLoad(reservation, hosts, share):`` holds the load on ``hosts`` for the block (a
    load an earlier, killed runner left there is stopped first); :meth:`cpu_between` gives the
    CPU-seconds it took on all of them in a window."""

    def __init__(self, reservation: Reservation, hosts: list[str], share: float):
        self.reservation, self.hosts, self.share = reservation, list(hosts), share
        self.pidfile = {h: pidfile(reservation, h) for h in self.hosts}
        self.logfile = {h: f"{reservation.node_dir(h, 'sae')}/tenant-load.log" for h in self.hosts}
        self.samples = {h: Samples() for h in self.hosts}
        self.pids: dict[str, int] = {}
        self.cluster = Cluster(reservation)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._sample, name="sae-tenant-load", daemon=True)

    def __enter__(self) -> "TenantLoad":
        try:
            self.cluster.apt_install([PACKAGE], nodes=self.hosts, stage=f"{STAGE} install")
            for line in stop_left(self.cluster, self.hosts):
                say(None, STAGE, line)
            cores = self.cluster.call(node_agent, "usable_cores", nodes=self.hosts, stage=STAGE)
            started = self.cluster.call(node_agent, "start_daemon", nodes=self.hosts, stage=STAGE,
                                        per_node=lambda n: {"argv": stress_argv(self.share, cores[n.name]),
                                                            "pidfile": self.pidfile[n.name],
                                                            "logfile": self.logfile[n.name]})
        except BaseException:
            self._stop()
            raise
        self.pids = {h: r["pid"] for h, r in started.items()}
        for h in self.hosts:
            say(h, STAGE, f"a second tenant keeps {self.share:g}x the host's {cores[h]:g} cores busy "
                          f"({' '.join(stress_argv(self.share, cores[h])[:5])}, pid {self.pids[h]})")
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
            stop_left(self.cluster, self.hosts)
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
