"""Benchmark: CPU cost of monitoring and export speed on a 3-host local cluster.

Reserves its own local cluster (root needed), runs monitoring at each scrape interval for
--seconds, and reports the CPU time of Prometheus + node_exporters + the cgroup exporter as a
fraction of one core, next to a reference measured in the same run: one busy-looping core over
the same period (so "ratio" = share of one core). Then exports the window and compares the export
time with one raw query_range of a single series (reference).
Usage: .venv/bin/python bench/monitor_overhead.py [--seconds 30] [--intervals 1s 2s 5s]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import metareserve
from metareserve import Layout, node_agent
from monitor_deploy import METRICS, Monitoring, MonitorOptions, vhost


def cpu_seconds(pid: int) -> float:
    return vhost.process_cpu(pid)[1]


def monitoring_pids(mon: Monitoring) -> list[int]:
    return [node_agent.read_pid(f) for f in mon.pidfiles()]


def reference_core(seconds: float) -> float:
    """CPU seconds one busy loop gets in ``seconds`` of wall time on this (shared) machine."""
    start, cpu0 = time.monotonic(), time.process_time()
    while time.monotonic() - start < seconds:
        pass
    return time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--intervals", nargs="+", default=["1s", "2s", "5s"])
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp()) / "bench.yaml"
    res = metareserve.reserve(provider="local", name=f"benchmon{os.getpid() % 1000}", nodes=3, out=out)
    try:
        ref = reference_core(args.seconds)
        print(f"reference: one busy core got {ref:.1f} CPU s in {args.seconds:.0f} s")
        print(f"{'interval':>8} {'monitoring CPU s':>17} {'share of a core':>16} {'ratio to ref':>13}")
        for interval in args.intervals:
            with Monitoring(res, Layout.default(res), MonitorOptions(scrape_interval=interval)) as mon:
                mon.install()
                mon.start()
                pids = monitoring_pids(mon)
                before = sum(cpu_seconds(p) for p in pids)
                t0 = time.time()
                time.sleep(args.seconds)
                used = sum(cpu_seconds(p) for p in pids) - before
                print(f"{interval:>8} {used:17.2f} {used / args.seconds:16.3f} {used / ref:13.3f}")
                t1 = time.time()
                q = time.perf_counter()
                mon.query_range(METRICS["cpu"].record + '{sae_node="node1"}', t0, t1, 1)
                raw = time.perf_counter() - q
                q = time.perf_counter()
                mon.export(t0, t1, Path(tempfile.mkdtemp()) / "export")
                exp = time.perf_counter() - q
                print(f"{'':>8} export of {t1 - t0:.0f} s, 6 metrics x 3 nodes: {exp:.2f} s "
                      f"= {exp / raw:.0f}x one raw query_range ({raw * 1000:.0f} ms)")
                mon.uninstall()
    finally:
        metareserve.release(res)


if __name__ == "__main__":
    main()
