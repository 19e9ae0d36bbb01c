"""Benchmark: SSH connection setup per host and no-op fan-out on 1, 4, 8 and 16 local hosts.

Reserves a 16-host local cluster (root needed), measures, releases. Prints the ratio
fan-out(N) / fan-out(1) and, as a reference measured in the same run, one plain `ssh host true`.
Usage: .venv/bin/python bench/metareserve_fanout.py [--repeat 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import metareserve
from metareserve import Cluster, node_agent
from metareserve.remote import ssh_argv


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    out = os.path.join(tempfile.mkdtemp(), "bench.yaml")
    res = metareserve.reserve(provider="local", name=f"bench{os.getpid() % 10000}", nodes=16, out=out)
    try:
        node = res.nodes[0]
        ssh_ref = statistics.median(timed(lambda: subprocess.run(
            ["ssh", *ssh_argv(res, node), node.host, "true"], check=True)) for _ in range(args.repeat))
        rows = []
        for n in (1, 4, 8, 16):
            names = [x.name for x in res.nodes[:n]]
            with Cluster(res) as c:
                connect = timed(lambda: c.call(node_agent, "pid_alive", 1, nodes=names, stage="bench"))
                call = statistics.median(timed(lambda: c.call(node_agent, "pid_alive", 1, nodes=names,
                                                              stage="bench")) for _ in range(args.repeat))
                cmd = statistics.median(timed(lambda: c.run(["true"], nodes=names, stage="bench"))
                                        for _ in range(args.repeat))
            rows.append((n, connect, call, cmd))
        base = rows[0]
        print(f"reference: plain 'ssh host true' (new connection each time): {ssh_ref * 1000:.0f} ms")
        print(f"{'hosts':>5} {'connect+1st call':>17} {'no-op call':>11} {'no-op cmd':>10} "
              f"{'connect/ssh':>11} {'call x1':>8} {'cmd x1':>7}")
        for n, connect, call, cmd in rows:
            print(f"{n:>5} {connect * 1000:>14.0f} ms {call * 1000:>8.1f} ms {cmd * 1000:>7.1f} ms "
                  f"{connect / ssh_ref:>10.2f}x {call / base[2]:>7.2f}x {cmd / base[3]:>6.2f}x")
        print(f"fan-out(16)/fan-out(1): no-op call {rows[-1][2] / base[2]:.2f}x, "
              f"no-op command {rows[-1][3] / base[3]:.2f}x, connection setup {rows[-1][1] / base[1]:.2f}x")
    finally:
        metareserve.release(res)


if __name__ == "__main__":
    main()
