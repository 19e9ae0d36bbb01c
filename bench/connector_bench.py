"""Benchmark: offload vs no-offload vs vanilla Spark Parquet at 1 %, 10 % and 100 % selectivity,
for a query over every column and a 3-column projection, with the offload path's compressions.

Reserves a 5-host local cluster so compute and storage are separate hosts: node1 = Ceph
mon/mgr/mds + Spark master + driver, node2-3 = OSDs (storage), node4-5 = Spark workers. Client
hosts = node1, node4, node5. Deploys a generated taxi dataset (16 MiB objects), builds the
connector, mounts CephFS with ceph-fuse for vanilla, runs bench/connector_app.py once, and while it
runs samples every host's eth0 rx bytes (``cat /sys/class/net/eth0/statistics/rx_bytes`` over SSH,
per namespace) and cgroup CPU time (``cpu_usage_file``, readable from the controller). Per query:
bytes received by client hosts, client CPU-seconds, storage CPU-seconds, wall time; medians over
the repetitions after the first; ratios against offload (lz4, the paper's setting), beside the
paper's figures. ``--link-multiplier K`` inflates the dataset with hard links (K names per object,
as the paper did) so that per-query fixed costs weigh less.

Usage: .venv/bin/python bench/connector_bench.py [--rows 2000000] [--reps 3] [--link-multiplier 1]
       [--readers offload,offload-none,offload-zstd,offload-x2,no-offload,vanilla] [--queries all,proj]
       [--selectivities 1,10,100] [--keep]
"""
from __future__ import annotations

import argparse
import bisect
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import data_deploy as dd
import metareserve
from metareserve import Layout
from metareserve.log import setup
from rados_deploy import CephCluster, CephOptions
from sae import connector
from spark_deploy import SparkCluster, SparkOptions

APP = Path(__file__).with_name("connector_app.py")
SELECTIVITIES = {"1": 0.01, "10": 0.10, "100": 1.0}
PAPER = {"1": "48.9x less network, 8x less client CPU", "10": "-", "100": "paper's connector far slower than vanilla"}
READERS = {"offload": {"offload": "true", "compression": "lz4", "objects_per_partition": "1"},
           "offload-none": {"offload": "true", "compression": "none", "objects_per_partition": "1"},
           "offload-zstd": {"offload": "true", "compression": "zstd", "objects_per_partition": "1"},
           "offload-x2": {"offload": "true", "compression": "lz4", "objects_per_partition": "2"},
           "no-offload": {"offload": "false", "objects_per_partition": "1"}, "vanilla": "vanilla"}
QUERIES = {"all": [], "proj": ["VendorID", "trip_distance", "total_amount"]}
CLIENTS, STORAGE = ["node1", "node4", "node5"], ["node2", "node3"]
WORKERS = ["node4", "node5"]   # the Spark workers: executors only (node1 also runs the driver and Ceph's mon/mgr/mds)
DEST, OBJECT_SIZE = "/data/bench", 16 << 20


class Sampler(threading.Thread):
    """Samples (time, {node: rx_bytes}, {node: cpu_seconds}) every ``interval`` seconds."""

    def __init__(self, res, interval: float = 1.0):
        super().__init__(daemon=True)
        # own connections: a running spark-submit keeps the shared driver-node channel busy
        self.res, self.cluster, self.interval = res, res.connect(), interval
        self.samples: list[tuple[float, dict, dict]] = []
        self.stop = threading.Event()

    def sample(self):
        t = time.time()
        rx = self.cluster.run(["cat", "/sys/class/net/eth0/statistics/rx_bytes"], stage="bench sample")
        cpu = {n: int(Path(s["cpu_usage_file"]).read_text()) / 1e9
               for n, s in self.res.provider_state["nodes"].items()}
        self.samples.append((t, {n: int(r["stdout"]) for n, r in rx.items()}, cpu))

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)

    def window(self, start: float, end: float) -> dict:
        """Counter deltas from the last sample before ``start`` to the first after ``end``."""
        times = [s[0] for s in self.samples]
        a = self.samples[max(0, bisect.bisect_right(times, start) - 1)]
        b = self.samples[min(len(times) - 1, bisect.bisect_left(times, end))]
        return {"net": sum(b[1][n] - a[1][n] for n in CLIENTS),
                "client_cpu": sum(b[2][n] - a[2][n] for n in CLIENTS),
                "worker_cpu": sum(b[2][n] - a[2][n] for n in WORKERS),
                "storage_cpu": sum(b[2][n] - a[2][n] for n in STORAGE)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--link-multiplier", type=int, default=1)
    ap.add_argument("--readers", default=",".join(READERS), type=lambda v: _pick(v, READERS, "reader"))
    ap.add_argument("--queries", default=",".join(QUERIES), type=lambda v: _pick(v, QUERIES, "query"))
    ap.add_argument("--selectivities", default=",".join(SELECTIVITIES),
                    type=lambda v: _pick(v, SELECTIVITIES, "selectivity"))
    ap.add_argument("--keep", action="store_true", help="keep the cluster (prints its reservation)")
    args = ap.parse_args()
    setup()
    work = Path(tempfile.mkdtemp(prefix="sae-connector-bench-"))
    res = metareserve.reserve(provider="local", name=f"cb{int(time.time()) % 10000}", nodes=5,
                              out=work / "cluster.yaml")
    layout = Layout({"ceph-mon": ["node1"], "ceph-mgr": ["node1"], "ceph-mds": ["node1"], "ceph-osd": STORAGE,
                     "ceph-client": [n.name for n in res.nodes], "spark-master": ["node1"],
                     "driver": ["node1"], "spark-worker": ["node4", "node5"]})
    try:
        with res.connect() as cluster:
            ceph = CephCluster(res, layout, CephOptions(store="bluestore", osd_size="8GiB"), cluster=cluster)
            spark = SparkCluster(res, layout, SparkOptions(worker_cores=1, worker_memory="2g"), cluster=cluster)
            ceph.install(), ceph.start()
            spark.install(), spark.start()
            split = dd.split(dd.generate(args.rows, seed=1, out=work / "gen"), out=work / "split",
                             object_size=OBJECT_SIZE)
            dd.deploy(res, split.out, plugin="cephfs", dest=DEST, object_size=OBJECT_SIZE, node="node1",
                      link_multiplier=args.link_multiplier,
                      ceph_conf=ceph.client_conf("node1"), cluster=cluster, layout=layout)
            spec = connector.build(spark=spark, ceph=ceph)
            mp = connector.mount_cephfs(ceph, nodes=CLIENTS, cluster=cluster).details["mountpoint"]
            thresholds = {k: dd.selectivity_threshold(split.out, f) for k, f in args.selectivities.items()}
            cfg = {"path": DEST, "vanilla": f"file://{mp}{DEST}", "options": spec.options,
                   "register": spec.register, "thresholds": thresholds, "reps": args.reps, "pause": 3,
                   "readers": args.readers, "queries": args.queries}
            sampler = Sampler(res)
            sampler.sample()
            sampler.start()
            kwargs = spec.submit_kwargs()
            kwargs["conf"]["spark.ui.showConsoleProgress"] = "false"
            result = spark.submit(str(APP), args=[json.dumps(cfg)], log_dir=work / "logs", stream=False, **kwargs)
            sampler.stop.set()
            sampler.join()
            sampler.sample()
            sampler.cluster.close()
            text = Path(result.driver_log).read_text() if result.driver_log else result.stdout
            decoder = json.JSONDecoder()
            queries = [decoder.raw_decode(ln, ln.index("bench-query ") + 12)[0]
                       for ln in text.splitlines() if "bench-query " in ln]
            (work / "measurements.json").write_text(json.dumps({"queries": queries, "samples": sampler.samples}))
            print(f"raw measurements: {work / 'measurements.json'}")
            report(queries, sampler, args, split)
            if args.keep:
                print(f"cluster kept: {res.path}")
                return
            connector.unmount_cephfs(ceph, nodes=CLIENTS, cluster=cluster)
            spark.uninstall()
            ceph.stop(), ceph.uninstall()
    finally:
        if not args.keep:
            metareserve.release(res)


def _pick(value: str, known: dict, what: str) -> dict:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad)}; pick from {', '.join(known)}")
    return {n: known[n] for n in names}


def report(queries, sampler, args, split):
    rows = {}
    for q in queries:
        if q["rep"] == 0:
            continue   # warm-up, as the paper drops the first run
        m = sampler.window(q["start"], q["end"])
        m["wall"] = q["end"] - q["start"]
        rows.setdefault((q["sel"], q["query"], q["reader"]), []).append((m, q["rows"], q["checksum"]))
    n = len(list(split.out.glob("*.parquet")))
    print(f"\n{args.rows} rows x {args.link_multiplier} links = {args.rows * args.link_multiplier} rows per query, "
          f"{n} objects of 16 MiB x {args.link_multiplier} names, {args.reps - 1} measured repetitions "
          f"(medians); client hosts {', '.join(CLIENTS)}, storage hosts {', '.join(STORAGE)}; "
          "queries: " + ", ".join(f"{k} = {v or 'every column'}" for k, v in args.queries.items()) + "\n")
    print("| sel | query | reader | rows | client rx MB | client CPU s | worker CPU s | storage CPU s | wall s | "
          "rx vs offload | client CPU vs offload | worker CPU vs offload | wall vs offload | paper |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ref = next(iter(args.readers))
    for sel in args.selectivities:
        for query in args.queries:
            med = {r: {k: statistics.median(m[k] for m, _, _ in rows[(sel, query, r)])
                       for k in ("net", "client_cpu", "worker_cpu", "storage_cpu", "wall")} for r in args.readers}
            checks = {(rows[(sel, query, r)][0][1], rows[(sel, query, r)][0][2]) for r in med}
            o = med[ref]
            for r, m in med.items():
                print(f"| {sel} % | {query} | {r} | {rows[(sel, query, r)][0][1]} | {m['net'] / 1e6:.1f} | "
                      f"{m['client_cpu']:.1f} | {m['worker_cpu']:.1f} | {m['storage_cpu']:.1f} | {m['wall']:.1f} | "
                      f"{m['net'] / max(o['net'], 1):.1f}x | {m['client_cpu'] / max(o['client_cpu'], 1e-3):.2f}x | "
                      f"{m['worker_cpu'] / max(o['worker_cpu'], 1e-3):.2f}x | "
                      f"{m['wall'] / o['wall']:.2f}x | {PAPER[sel] if r == ref and query == 'all' else ''} |")
            if len(checks) != 1:
                print(f"WARNING: readers disagree at {sel} % {query}: {checks}")


if __name__ == "__main__":
    main()
