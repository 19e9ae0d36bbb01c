"""Benchmark: the sae-ceph reader with offload on and off vs vanilla Spark Parquet, at 1 %, 10 % and
100 % selectivity, for a query over every column and a 3-column projection.

Reserves a 5-host local cluster with compute and storage on separate hosts: node1 = Spark master +
driver, node2 = Ceph mon/mgr/mds + OSD, node3 = OSD, node4-5 = Spark workers. Compute hosts =
node1, node4, node5 (no Ceph daemon runs there; vanilla's ceph-fuse client does, as it is the
compute side's reading work). Deploys a generated taxi dataset (16 MiB objects), builds the
connector, mounts CephFS with ceph-fuse for vanilla, runs bench/connector_app.py once, and while it
runs samples every host's eth0 rx bytes (over SSH, per namespace) and cgroup CPU time. Per query:
bytes received by the compute hosts, their CPU-seconds, storage CPU-seconds, wall time and rows
scanned per second; medians over the repetitions after the first; ratios against vanilla measured
in the same run, and the issue's aims checked at the end. ``--link-multiplier K`` inflates the
dataset with hard links (K names per object, as the paper did) so per-query fixed costs weigh less.

Usage: .venv/bin/python bench/connector_bench.py [--rows 2000000] [--reps 3] [--link-multiplier 1]
       [--readers offload,offload-none,offload-lz4,no-offload,vanilla] [--queries all,proj]
       [--selectivities 1,10,100] [--jfr] [--keep]

``--jfr`` records the executors with Java Flight Recorder (``settings=profile``) and prints, per
reader at 1 % and 100 % over every column, the methods the executor threads were sampled in
(self time) and the share of samples by component, from the samples inside that reader's queries.
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
from metareserve import Cluster, Layout, lease
from metareserve.log import setup
from rados_deploy import CephCluster, CephOptions
from sae import connector
from spark_deploy import SparkCluster, SparkOptions

APP = Path(__file__).with_name("connector_app.py")
SELECTIVITIES = {"1": 0.01, "10": 0.10, "100": 1.0}
READERS = {"offload": {"offload": "true"},   # the connector's defaults (zstd)
           "offload-none": {"offload": "true", "compression": "none"},
           "offload-lz4": {"offload": "true", "compression": "lz4"},
           "no-offload": {"offload": "false"}, "vanilla": "vanilla"}
QUERIES = {"all": [], "proj": ["VendorID", "trip_distance", "total_amount"]}
CLIENTS, STORAGE = ["node1", "node4", "node5"], ["node2", "node3"]
WORKERS = ["node4", "node5"]   # the Spark workers: executors only (node1 runs the driver and the master)
DEST, OBJECT_SIZE = "/data/bench", 16 << 20


class Sampler(threading.Thread):
    """Samples (time, {node: rx_bytes}, {node: cpu_seconds}) every ``interval`` seconds."""

    def __init__(self, res, interval: float = 1.0):
        super().__init__(daemon=True)
        # own connections: a running spark-submit keeps the shared driver-node channel busy
        self.res, self.cluster, self.interval = res, Cluster(res), interval
        self.samples: list[tuple[float, dict, dict]] = []
        self.stop = threading.Event()

    def sample(self):
        t = time.time()
        rx = self.cluster.run(["cat", "/sys/class/net/eth0/statistics/rx_bytes"], stage="bench sample")
        cpu = {n: int(Path(f).read_text()) / 1e9 for n, f in self.res.cpu_accounting.usage_files.items()}
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
    ap.add_argument("--jfr", action="store_true", help="profile the executors with Java Flight Recorder")
    ap.add_argument("--keep", action="store_true", help="keep the cluster (prints its reservation)")
    args = ap.parse_args()
    setup()
    work = Path(tempfile.mkdtemp(prefix="sae-connector-bench-"))
    res = metareserve.reserve(provider="local", name=f"cb{int(time.time()) % 10000}", nodes=5,
                              out=work / "cluster.yaml")
    layout = Layout({"ceph-mon": ["node2"], "ceph-mgr": ["node2"], "ceph-mds": ["node2"], "ceph-osd": STORAGE,
                     "ceph-client": [n.name for n in res.nodes], "spark-master": ["node1"],
                     "driver": ["node1"], "spark-worker": ["node4", "node5"]})
    try:
        with Cluster(res) as cluster, lease.leased(cluster, "bench/connector_bench.py"):   # no run measures beside it
            ceph = CephCluster(res, layout, CephOptions(store="bluestore", osd_size="8GiB"), cluster=cluster)
            spark = SparkCluster(res, layout, SparkOptions(worker_cores=1, worker_memory="2g",
                                                                  system_packages=list(connector.SYSTEM_PACKAGES)),
                                 cluster=cluster)
            ceph.install(), ceph.start()
            spark.install(), spark.start()
            split = dd.split(dd.generate(args.rows, seed=1, out=work / "gen"), out=work / "split",
                             object_size=OBJECT_SIZE)
            dd.deploy(res, split.out, plugin="cephfs", dest=DEST, object_size=OBJECT_SIZE, node="node2",
                      link_multiplier=args.link_multiplier,
                      ceph_conf=ceph.client_conf("node2"), cluster=cluster, layout=layout)
            spec = connector.build(spark=spark, ceph=ceph)
            mp = ceph.mount(CLIENTS).details["mountpoint"]
            thresholds = {k: dd.selectivity_threshold(split.out, f) for k, f in args.selectivities.items()}
            cfg = {"path": DEST, "vanilla": f"file://{mp}{DEST}", "options": spec.options,
                   "register": spec.register, "thresholds": thresholds, "reps": args.reps, "pause": 3,
                   "readers": args.readers, "queries": args.queries}
            sampler = Sampler(res)
            sampler.sample()
            sampler.start()
            kwargs = spec.submit_kwargs()
            kwargs["conf"]["spark.ui.showConsoleProgress"] = "false"
            jfr_dir = work / "jfr"
            if args.jfr:
                jfr_dir.mkdir()
                kwargs["conf"]["spark.executor.extraJavaOptions"] = (
                    kwargs["conf"].get("spark.executor.extraJavaOptions", "") + " "
                    f"-XX:StartFlightRecording=settings=profile,dumponexit=true,filename={jfr_dir}/")   # one file per JVM
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
            if args.jfr:
                time.sleep(15)   # executors dump their recordings as they exit
                profile(queries, sorted(jfr_dir.glob("*.jfr")))
            if args.keep:
                print(f"cluster kept: {res.path}")
                return
            spark.uninstall()
            ceph.stop(), ceph.uninstall()   # stop unmounts first
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
    scanned = args.rows * args.link_multiplier
    print(f"\n{args.rows} rows x {args.link_multiplier} links = {scanned} rows per query, "
          f"{n} objects of 16 MiB x {args.link_multiplier} names, {args.reps - 1} measured repetitions "
          f"(medians); compute hosts {', '.join(CLIENTS)} (workers {', '.join(WORKERS)}), storage hosts "
          f"{', '.join(STORAGE)}; queries: " + ", ".join(f"{k} = {v or 'every column'}" for k, v in args.queries.items())
          + "\n")
    print("| sel | query | reader | rows | compute rx MB | compute CPU s | worker CPU s | storage CPU s | wall s | "
          "M rows/s | rx vs vanilla | compute CPU vs vanilla | wall vs vanilla |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ref = "vanilla" if "vanilla" in args.readers else next(iter(args.readers))
    aims = []
    for sel in args.selectivities:
        for query in args.queries:
            med = {r: {k: statistics.median(m[k] for m, _, _ in rows[(sel, query, r)])
                       for k in ("net", "client_cpu", "worker_cpu", "storage_cpu", "wall")} for r in args.readers}
            checks = {(rows[(sel, query, r)][0][1], rows[(sel, query, r)][0][2]) for r in med}
            o = med[ref]
            for r, m in med.items():
                print(f"| {sel} % | {query} | {r} | {rows[(sel, query, r)][0][1]} | {m['net'] / 1e6:.1f} | "
                      f"{m['client_cpu']:.1f} | {m['worker_cpu']:.1f} | {m['storage_cpu']:.1f} | {m['wall']:.1f} | "
                      f"{scanned / m['wall'] / 1e6:.2f} | {m['net'] / max(o['net'], 1):.3f}x | "
                      f"{m['client_cpu'] / max(o['client_cpu'], 1e-3):.2f}x | {m['wall'] / o['wall']:.2f}x |")
            if len(checks) != 1:
                print(f"WARNING: readers disagree at {sel} % {query}: {checks}")
            aims += _aims(sel, query, med)
    if aims:
        print("\n| aim (issue #14) | measured | met |\n|---|---|---|")
        for aim, value, ok in aims:
            print(f"| {aim} | {value} | {'yes' if ok else 'NO'} |")


COMPONENTS = [("sae-ceph reply wait (librados)", ("Rados$Call.await", "rados_aio_wait")),
              ("Arrow IPC read + decompression", ("org.apache.arrow.vector.ipc", "org.apache.arrow.compression",
                                                  "com.github.luben.zstd", "org.apache.commons.compress")),
              ("Parquet decode (vanilla)", ("org.apache.parquet", "VectorizedParquetRecordReader",
                                            "VectorizedColumnReader", "VectorizedRleValuesReader")),
              ("file read (vanilla, ceph-fuse)", ("java.io.FileInputStream", "sun.nio.ch.FileChannelImpl",
                                                  "org.apache.hadoop.fs")),
              ("Spark generated code + aggregation", ("GeneratedClass", "org.apache.spark.sql.catalyst.expressions",
                                                      "org.apache.spark.sql.execution", "ArrowColumnVector",
                                                      "org.apache.spark.unsafe"))]


def profile(queries, files: list[Path]) -> None:
    """Per reader at 1 % and 100 % over every column: executor samples by component and top methods."""
    import collections
    import datetime
    import subprocess
    if not files:
        print("no JFR recordings were written")
        return
    windows = [(q["start"], q["end"], q["reader"], q["sel"]) for q in queries
               if q["rep"] > 0 and q["query"] == "all" and q["sel"] in ("1", "100")]
    by = collections.defaultdict(collections.Counter)
    comp = collections.defaultdict(collections.Counter)
    for f in files:
        out = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(f)],
                             capture_output=True, text=True)
        for e in json.loads(out.stdout or "{}").get("recording", {}).get("events", []):
            v = e["values"]
            t = datetime.datetime.fromisoformat(v["startTime"][:26].rstrip("Z")).replace(
                tzinfo=datetime.timezone.utc).timestamp()
            hit = next(((r, s) for a, b, r, s in windows if a <= t <= b), None)
            frames = [f"{fr['method']['type']['name'].replace('/', '.')}.{fr['method']['name']}" for fr in
                      (v.get("stackTrace") or {}).get("frames", [])]
            if hit is None or not frames:
                continue
            by[hit][frames[0]] += 1
            name = next((c for c, keys in COMPONENTS if any(k in fr for fr in frames for k in keys)), "other")
            comp[hit][name] += 1
    for key in sorted(by, key=lambda k: (int(k[1]), k[0])):
        total = sum(by[key].values())
        shares = ", ".join(f"{c} {n / total:.0%}" for c, n in comp[key].most_common())
        print(f"\nJFR executor samples, {key[1]} % every column, {key[0]}: {total} samples; {shares}")
        for m, n in by[key].most_common(8):
            print(f"  {n / total:5.1%}  {m}")


def _aims(sel: str, query: str, med: dict) -> list[tuple[str, str, bool]]:
    """The issue's aims for one (selectivity, query) cell, where its readers were measured."""
    if query != "all" or not {"offload", "vanilla"} <= set(med):
        return []
    off, van = med["offload"], med["vanilla"]
    if sel == "100":
        ratio = off["wall"] / van["wall"]
        return [("100 %: wall time within 1.2x of vanilla", f"{ratio:.2f}x", ratio <= 1.2)]
    if sel != "1":
        return []
    out = [("1 %: compute CPU below vanilla", f"{off['client_cpu']:.1f} vs {van['client_cpu']:.1f} s",
            off["client_cpu"] < van["client_cpu"]),
           ("1 %: >= 40x fewer bytes to compute than vanilla", f"{van['net'] / max(off['net'], 1):.1f}x",
            van["net"] >= 40 * off["net"]),
           ("1 %: wall time below vanilla", f"{off['wall']:.2f} vs {van['wall']:.2f} s", off["wall"] < van["wall"])]
    if "no-offload" in med:
        r = med["no-offload"]["client_cpu"] / max(off["client_cpu"], 1e-3)
        out.insert(0, ("1 %: compute CPU >= 8x below no-offload", f"{r:.1f}x", r >= 8))
    return out


if __name__ == "__main__":
    main()
