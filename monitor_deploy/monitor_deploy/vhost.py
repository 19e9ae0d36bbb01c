"""Per-host CPU, memory and disk counters for local-cluster hosts, from their cgroups.

Local hosts share ``/proc/stat`` and the disks, so node_exporter reports whole-machine numbers
in every namespace. This small process runs in the root namespace (namespaces cannot see
``/sys/fs/cgroup``) and every ``interval`` seconds writes, per host, into that host's
node_exporter textfile directory (atomically):

* ``sae_vhost_cpu_seconds_total``: the host cgroup's CPU time (``cpuacct.usage`` or ``cpu.stat``):
  the host's own work, which is what a side's CPU-seconds add up (the monitoring agents
  monitor_deploy starts on the host, node_exporter and Prometheus, leave its cgroup once started);
* ``sae_vhost_agent_cpu_seconds_total``: those agents' CPU time (``/proc/<pid>/stat``, the pids
  from their pid files), restarted agents' kept;
* ``sae_vhost_cpu_read_time_seconds``: when that CPU time was read (epoch seconds): a scrape sees
  the value written up to ``interval`` earlier, so rates are drawn over the intervals between
  these times, not between scrapes;
* ``sae_vhost_cpu_capacity_cores``: the cores the host may use (its declared cores, else the machine's);
* ``sae_vhost_memory_rss_bytes``: resident memory of the cgroup's processes;
* ``sae_vhost_disk_{read,written}_bytes_total``: storage I/O of those processes (``/proc/<pid>/io``),
  including processes that have exited since the exporter started.

The CPU time is read every round; the processes (memory, disk) and the agents' CPU at most every
:data:`PROCESS_INTERVAL`, their files being most of a round's cost, so a short ``interval`` keeps
the CPU counter fresh cheaply (measured at 0.1 s, 3 hosts of 66 processes: 2.6 % of a core, of
which 1.8 % the processes; a local host has 10-20).

Run as ``python .../monitor_deploy/vhost.py CONFIG.json`` (imports only prometheus-client and metareserve); it exits when the reservation's state
directory disappears (the cluster was released).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from metareserve.providers.cgroups import cpu_seconds
from metareserve.remote.prelude import read_pid
from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
TEXTFILE_NAME = "sae_vhost.prom"
PROCESS_INTERVAL = 0.5
"""Seconds between two readings of a host's processes (memory, disk I/O: plotted, not windowed)."""


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first); OSError if gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _proc_sample(pid: int):
    """(start time, rss bytes, read bytes, written bytes) of a process, or None if it is gone."""
    try:
        stat = _stat(pid)
        rss = int(stat[21]) * PAGE
        io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
        return stat[19], rss, int(io["read_bytes"]), int(io["write_bytes"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def process_cpu(pid: int | None):
    """((pid, start time), CPU seconds: user + system) of a process, or None if it is gone."""
    try:
        stat = _stat(pid)
        return (pid, stat[19]), (int(stat[11]) + int(stat[12])) / TICK
    except (OSError, IndexError, ValueError, TypeError):
        return None


class AgentCpu:
    """CPU seconds of the processes some pid files name, summed; an agent restarted (a new pid or
    start time) keeps its predecessor's seconds, so the sum never falls."""

    def __init__(self, pidfiles=()):
        self.pidfiles, self.last, self.gone = list(pidfiles), {}, 0.0

    def seconds(self) -> float:
        for i, pidfile in enumerate(self.pidfiles):
            sample = process_cpu(read_pid(pidfile))
            previous = self.last.get(i)
            if previous and (sample is None or sample[0] != previous[0]):
                self.gone += previous[1]
                del self.last[i]
            if sample:
                self.last[i] = sample
        return self.gone + sum(v[1] for v in self.last.values())


class HostCollector:
    """Collects one host's counters; remembers I/O of exited processes so counters never fall."""

    def __init__(self, name: str, usage_file: str, procs_file: str, capacity: float, agent_pidfiles=()):
        self.name, self.usage_file, self.procs_file, self.capacity = name, usage_file, procs_file, capacity
        self.agents, self.agent_seconds = AgentCpu(agent_pidfiles), 0.0
        self.live: dict[tuple, tuple[int, int]] = {}
        self.gone = [0, 0]
        self.processes, self.sampled = (0, 0, 0), -PROCESS_INTERVAL

    def collect(self):
        if time.monotonic() - self.sampled >= PROCESS_INTERVAL:
            self.agent_seconds = self.agents.seconds()
            self.processes, self.sampled = self._sample_processes(), time.monotonic()
        rss, read, written = self.processes
        yield _counter("sae_vhost_cpu_seconds_total", "CPU time of the host's cgroup", cpu_seconds(self.usage_file))
        yield _counter("sae_vhost_agent_cpu_seconds_total", "CPU time of the host's monitoring agents",
                       self.agent_seconds)
        yield _gauge("sae_vhost_cpu_read_time_seconds", "when the CPU time above was read (epoch s)", time.time())
        yield _gauge("sae_vhost_cpu_capacity_cores", "cores the host may use", self.capacity)
        yield _gauge("sae_vhost_memory_rss_bytes", "resident memory of the host's processes", rss)
        yield _counter("sae_vhost_disk_read_bytes_total", "bytes the host's processes read from storage", read)
        yield _counter("sae_vhost_disk_written_bytes_total", "bytes the host's processes wrote to storage", written)

    def _sample_processes(self) -> tuple[int, int, int]:
        """(resident bytes, bytes read, bytes written) of the host's processes, exited ones' I/O kept."""
        try:
            pids = [int(p) for p in Path(self.procs_file).read_text().split()]
        except OSError:
            pids = []
        rss, seen = 0, {}
        for pid in pids:
            sample = _proc_sample(pid)
            if sample:
                start, mem, rd, wr = sample
                rss += mem
                seen[(pid, start)] = (rd, wr)
        for key, (rd, wr) in self.live.items():
            if key not in seen:
                self.gone[0] += rd
                self.gone[1] += wr
        self.live = seen
        return (rss, self.gone[0] + sum(v[0] for v in seen.values()),
                self.gone[1] + sum(v[1] for v in seen.values()))


def _counter(name, doc, value):
    m = CounterMetricFamily(name, doc)
    m.add_metric([], value)
    return m


def _gauge(name, doc, value):
    m = GaugeMetricFamily(name, doc)
    m.add_metric([], value)
    return m


def run(config: dict) -> None:
    """Write every host's counters every ``config['interval']`` s until the state dir is gone."""
    hosts = []
    for h in config["nodes"]:
        registry = CollectorRegistry(auto_describe=False)
        procs = str(Path(h["cpu_usage_file"]).with_name("cgroup.procs"))
        registry.register(HostCollector(h["name"], h["cpu_usage_file"], procs, h["capacity"],
                                        h.get("agent_pidfiles", ())))
        hosts.append((registry, Path(h["textfile_dir"]) / TEXTFILE_NAME))
    while Path(config["state_dir"]).is_dir():
        for registry, path in hosts:
            if path.parent.is_dir():
                try:
                    write_to_textfile(str(path), registry)
                except OSError as e:  # cgroup gone mid-release: skip this round
                    print(f"{path}: {e}", file=sys.stderr, flush=True)
        time.sleep(config["interval"])


if __name__ == "__main__":
    run(json.loads(Path(sys.argv[1]).read_text()))
