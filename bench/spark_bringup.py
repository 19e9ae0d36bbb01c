"""Benchmark: bring-up of 1 master + 2 workers through spark_deploy vs by hand, same run.

"By hand" runs the distribution's spark-daemon.sh over plain ssh with the same daemons, arguments,
environment and configuration files (master first, then both workers in parallel) and polls the
master's /json/ until both workers are ALIVE. "Cold" = fresh state directories, "warm" = a restart
in the same directories after a stop. The order alternates between repetitions. Prints medians and
the ratio spark_deploy / by hand.

Reserves its own 3-host local cluster (root needed) unless --reservation is given; releases it.
Usage: .venv/bin/python bench/spark_bringup.py [--reservation R.yaml] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import tempfile
import time
import urllib.request

import metareserve
from metareserve import Cluster, Layout, lease, node_agent
from metareserve.remote import ssh_argv
from spark_deploy import SparkCluster, SparkOptions
from spark_deploy.config import metrics_properties, spark_defaults


def ssh(res, node: str, command: str, background: bool = False):
    n = res.node(node)
    argv = ["ssh", *ssh_argv(res, n), n.host, command]
    if background:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def alive_workers(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return sum(w["state"] == "ALIVE" for w in json.load(r)["workers"])
    except OSError:
        return 0


def by_hand(spark: SparkCluster) -> float:
    """Start master then workers with spark-daemon.sh over ssh; seconds until all workers ALIVE."""
    res, daemons = spark.reservation, spark.daemons()
    t = time.perf_counter()

    def command(d):
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in spark.env(d.node, d.ident).items())
        args = shlex.join(d.args(spark.options, spark.paths(d.node), spark.master_url))
        return f"env {env} {spark.spark_home(d.node)}/sbin/spark-daemon.sh start {d.cls} 1 {args}"
    ssh(res, daemons[0].node, command(daemons[0]))
    for p in [ssh(res, d.node, command(d), background=True) for d in daemons[1:]]:
        p.wait()
    while alive_workers(f"{spark.master_ui_url}/json/") < len(daemons) - 1:
        time.sleep(0.2)
    return time.perf_counter() - t


def prepare_by_hand(spark: SparkCluster) -> None:
    """What a person would copy by hand: the same directories and configuration files."""
    for n in spark.nodes:
        p = spark.paths(n)
        spark.cluster.run(["mkdir", "-p", *p.all()], nodes=[n], stage="bench prepare")
        spark.cluster.call(node_agent, "write_file", f"{p.conf}/metrics.properties", metrics_properties(),
                           nodes=[n], stage="bench prepare")
        spark.cluster.call(node_agent, "write_file", f"{p.conf}/spark-defaults.conf",
                           spark_defaults(node=n, python=spark.python(n), paths=p, master_url=spark.master_url,
                                          options=spark.options, secret=f"bench-{spark.master_node}"),
                           nodes=[n], stage="bench prepare", mode=0o600)


def one_round(res, cluster, layout, i: int) -> dict:
    root = f"{res.state_root}/{{node}}/bench-{i}"
    tool = SparkCluster(res, layout, SparkOptions(prefix=f"{root}-tool"), cluster=cluster)
    hand = SparkCluster(res, layout, SparkOptions(prefix=f"{root}-hand"), cluster=cluster)
    prepare_by_hand(hand)
    times = {}

    def run_tool(kind):
        t = time.perf_counter()
        tool.start()
        times[("spark_deploy", kind)] = time.perf_counter() - t
        tool.stop()

    def run_hand(kind):
        times[("by hand", kind)] = by_hand(hand)
        hand.stop()
    order = [run_tool, run_hand] if i % 2 == 0 else [run_hand, run_tool]
    for kind in ("cold", "warm"):
        for fn in order:
            fn(kind)
    tool.uninstall()
    hand.uninstall()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reservation", help="use these nodes instead of reserving a local cluster")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    own = a.reservation is None
    res = (metareserve.load_reservation(a.reservation) if not own else
           metareserve.reserve(provider="local", name=f"bsp{os.getpid() % 10000}", nodes=3,
                               out=os.path.join(tempfile.mkdtemp(), "bench.yaml")))
    layout = Layout({"spark-master": [res.nodes[0].name], "driver": [res.nodes[0].name],
                     "spark-worker": [n.name for n in res.nodes[1:3]]})
    try:
        with Cluster(res) as cluster, lease.leased(cluster, "bench/spark_bringup.py"):   # no run measures beside it
            t = time.perf_counter()
            SparkCluster(res, layout, SparkOptions(), cluster=cluster).install()
            print(f"install (software present after the first run: a check): {time.perf_counter() - t:.1f}s")
            rounds = [one_round(res, cluster, layout, i) for i in range(a.repeat)]
    finally:
        if own:
            metareserve.release(res)
    for i, r in enumerate(rounds):
        print(f"round {i}: " + ", ".join(f"{who} {kind} {sec:.1f}s" for (who, kind), sec in r.items()))
    for kind in ("cold", "warm"):
        tool = statistics.median(r[("spark_deploy", kind)] for r in rounds)
        hand = statistics.median(r[("by hand", kind)] for r in rounds)
        print(f"{kind}: spark_deploy {tool:.1f}s, by hand (spark-daemon.sh) {hand:.1f}s, "
              f"ratio {tool / hand:.2f} (median of {len(rounds)})")


if __name__ == "__main__":
    main()
