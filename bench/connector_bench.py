"""Benchmark: the sae-ceph reader with offload on and off vs vanilla Spark Parquet, at 1 %, 10 % and
100 % selectivity, for a query over every column and a 3-column projection; where the storage
side's time goes; and each reader's fixed cost per query.

Reserves a 5-host local cluster with compute and storage on separate hosts: node1 = Spark master +
driver, node2 = Ceph mon/mgr/mds + OSD, node3 = OSD, node4-5 = Spark workers. Compute hosts =
node1, node4, node5 (no Ceph daemon runs there; vanilla's ceph-fuse client does, as it is the
compute side's reading work). Deploys a generated taxi dataset (16 MiB objects), builds the
connector, mounts CephFS with ceph-fuse for vanilla, runs bench/connector_app.py once, and while it
runs samples every host's cgroup CPU time (every 0.1 s), eth0 rx bytes (over SSH, per namespace,
every second) and the OSDs' operation counters (every second). Per query: bytes received by the
compute hosts, their CPU-seconds (and those minus each host's idle rate, measured in the pauses
between queries: the query's own work), storage CPU-seconds, wall time, rows scanned per second;
medians over the repetitions after the first, after ``--warmup`` rounds of every reader's queries
(the first minutes of an application are mostly JIT compilation); ratios against vanilla measured
in the same run.

Queries: sae's scan (``all``: every column checksummed, ``proj``: three) and sae's query shapes
(``sum``, ``groupby``, ``topk``, ``join``, ``lookup``: sae.planning.queries; the full table only;
the join's zone table is deployed beside it); ``offload-rows`` is offload with the aggregation
and top-k left to Spark (``operators=false``), so the shapes show what the OSD's operators add.

Tables: ``full`` (the dataset, ``--link-multiplier K`` names per object, as the paper inflated
it), and with ``--floor`` (default) the same query over ``one`` object and over an ``empty``
directory: each reader's compute CPU and wall time as fixed + per-GB (the line through ``one``
and ``full``), the empty table's cost beside it. Storage: the object class's own phases (summed
per query by the connector) against the storage hosts' measured CPU-seconds, and the OSDs'
counters (read ops, bytes read from the store and sent).

Usage: .venv/bin/python bench/connector_bench.py [--rows 2000000] [--reps 3] [--link-multiplier 1]
       [--readers offload,offload-none,offload-lz4,offload-rows,no-offload,vanilla]
       [--queries all,proj,sum,groupby,topk,join,lookup]
       [--selectivities 1,10,100] [--warmup 1] [--no-floor] [--jfr] [--keep] [--capacities sides|shared]

``--jfr`` records the driver and the executors with Java Flight Recorder (``settings=profile``)
and prints, per reader, table and JVM at 1 % and 100 % over every column, the methods sampled
(self time) and the share of samples by component, from the samples inside that reader's queries.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import data_deploy as dd
import metareserve
from metareserve import Cluster, Layout, lease
from metareserve.log import setup
from metareserve.providers import cgroups
from rados_deploy import CephCluster, CephOptions, CounterSnapshot
from sae import connector, readers
from sae.planning import queries as sae_queries
from sae.results.run.storage_work import CLS_PHASES as PHASES
from sae.app import APP as RUN_POINTS

import connector_stack

APP = Path(__file__).with_name("connector_app.py")
SELECTIVITIES = {"1": 0.01, "10": 0.10, "100": 1.0}
VARIANTS = {"offload-none": (readers.OFFLOAD, {"compression": "none"}),
            "offload-lz4": (readers.OFFLOAD, {"compression": "lz4"}),
            "offload-rows": (readers.OFFLOAD, {"operators": "false"}),   # aggregates and top-k left to Spark
            # packing by bytes at the default 16 MiB objects, against offload's one task per slot
            "offload-4-per-task": (readers.OFFLOAD, {"objects_per_partition": "4"})}
READERS = {**{r.name: (r, {}) for r in readers.READERS.values()}, **VARIANTS}
"""The bench's readers: each of sae's at the connector's defaults, and variants of them given
connector options beyond the defaults."""
OFFLOAD, NO_OFFLOAD, VANILLA = readers.OFFLOAD.name, readers.NO_OFFLOAD.name, readers.VANILLA.name
"""The readers the aims compare."""
QUERIES = {"all": [], "proj": ["VendorID", "trip_distance", "total_amount"],
           **{name: q for name, q in sae_queries.QUERIES.items() if q.sql}}
"""The bench's queries: sae's scan over every column (``all``) or three (``proj``), and sae's
query shapes (sae.planning.queries: sum, groupby, topk, join, lookup), run on the full table."""
CLIENTS, STORAGE = ["node1", "node4", "node5"], ["node2", "node3"]
WORKERS = ["node4", "node5"]   # the Spark workers: executors only (node1 runs the driver and the master)
DEST, OBJECT_SIZE = "/data/bench", 16 << 20
FLOOR = {"one": "/data/bench-one", "empty": "/data/bench-empty"}
ZONES = "/data/bench-zones"   # the zone dimension table, for the join


PROCESSES = (("CoarseGrainedExecutorBackend", "executor"), ("SparkSubmit", "driver"), ("deploy.worker.Worker", "worker"),
             ("deploy.master.Master", "master"), ("ceph-fuse", "ceph-fuse"), ("connector_app", "app (python)"),
             ("sshd", "sshd"))
TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu(res, nodes) -> dict[str, float]:
    """CPU-seconds so far of every thread of every process in ``nodes``' cgroups, summed by
    "host process/thread kind" (thread names without their numbers: ``executor/msgr-worker``,
    ``driver/C2 CompilerThre``): who on the compute side spends what, without perf."""
    out: dict[str, float] = {}
    for node in nodes:
        procs = Path(res.cpu_accounting.usage_files[node]).with_name("cgroup.procs")
        for pid in procs.read_text().split():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                kind = next((k for key, k in PROCESSES if key in cmd), Path(cmd.split(" ")[0]).name or "?")
                for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
                    text = stat.read_text()
                    name = text[text.index("(") + 1:text.rindex(")")]
                    fields = text[text.rindex(")") + 2:].split()
                    key = f"{node} {kind}/{re.sub(r'[-#_ ]*[0-9]+$', '', name)}"
                    out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
            except (OSError, ValueError):
                continue   # the process or thread ended meanwhile
    return out


class Sampler(threading.Thread):
    """Samples every host's cgroup CPU time every ``interval`` s, and every ``slow`` s the compute
    hosts' eth0 rx bytes (over SSH) and the OSDs' counters (admin sockets)."""

    def __init__(self, res, ceph, interval: float = 0.1, slow: float = 1.0):
        super().__init__(daemon=True)
        # own connections: a running spark-submit keeps the shared driver-node channel busy
        self.res, self.cluster, self.interval, self.slow = res, Cluster(res), interval, slow
        self.ceph = CephCluster(res, ceph.layout, ceph.options, cluster=self.cluster)
        self.cpu: list[tuple[float, dict]] = []
        self.net: list[tuple[float, dict]] = []
        self.osd: list[CounterSnapshot] = []
        self.threads: list[tuple[float, dict]] = []
        self.stop = threading.Event()

    def sample_cpu(self):
        t = time.time()
        self.cpu.append((t, {n: cgroups.cpu_seconds(f) for n, f in self.res.cpu_accounting.usage_files.items()}))

    def sample_slow(self):
        t = time.time()
        rx = self.cluster.run(["cat", "/sys/class/net/eth0/statistics/rx_bytes"], nodes=CLIENTS, stage="bench sample")
        self.net.append((t, {n: int(r["stdout"]) for n, r in rx.items()}))
        self.osd.append(self.ceph.osd_counters(stage="bench sample"))
        self.threads.append((time.time(), thread_cpu(self.res, CLIENTS)))

    def run(self):
        slow = threading.Thread(target=self._slow_loop, daemon=True)
        slow.start()
        while not self.stop.is_set():
            self.sample_cpu()
            self.stop.wait(self.interval)
        slow.join()

    def _slow_loop(self):
        while not self.stop.is_set():
            self.sample_slow()
            self.stop.wait(self.slow)

    @staticmethod
    def _edges(times: list[float], start: float, end: float) -> tuple[int, int]:
        return max(0, bisect.bisect_right(times, start) - 1), min(len(times) - 1, bisect.bisect_left(times, end))

    def idle_rates(self, queries) -> dict[str, float]:
        """Each host's CPU rate (cores) in the pauses between queries (0.5 s after one ends to
        0.2 s before the next starts): what the host spends without a query."""
        spans = sorted((q["start"], q["end"]) for q in queries)
        times = [c[0] for c in self.cpu]
        used, seconds = {}, 0.0
        for (_, e), (s, _) in zip(spans, spans[1:]):
            a, b = bisect.bisect_left(times, e + 0.5), bisect.bisect_right(times, s - 0.2) - 1
            if b <= a:
                continue
            seconds += times[b] - times[a]
            for n in self.cpu[a][1]:
                used[n] = used.get(n, 0.0) + self.cpu[b][1][n] - self.cpu[a][1][n]
        return {n: v / seconds for n, v in used.items()} if seconds else {}

    def window(self, start: float, end: float, idle: dict) -> dict:
        """Counter deltas from the last sample before ``start`` to the first after ``end``;
        ``*_own``: minus each host's idle rate over the same span."""
        a, b = self._edges([c[0] for c in self.cpu], start, end)
        (ta, ca), (tb, cb) = self.cpu[a], self.cpu[b]
        na, nb = self._edges([n[0] for n in self.net], start, end)
        oa, ob = self._edges([o.begin for o in self.osd], start, end)
        cpu = {n: cb[n] - ca[n] for n in ca}
        own = {n: cpu[n] - idle.get(n, 0.0) * (tb - ta) for n in cpu}
        ops = self.osd[ob].delta(self.osd[oa]) or {}
        ta_, tb_ = self._edges([t[0] for t in self.threads], start, end)
        before, after = self.threads[ta_][1], self.threads[tb_][1]
        threads = {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}
        return {"net": sum(self.net[nb][1][n] - self.net[na][1][n] for n in CLIENTS),
                "client_cpu": sum(cpu[n] for n in CLIENTS), "client_own": sum(own[n] for n in CLIENTS),
                "worker_cpu": sum(cpu[n] for n in WORKERS), "driver_cpu": cpu["node1"],
                "storage_cpu": sum(cpu[n] for n in STORAGE), "storage_own": sum(own[n] for n in STORAGE),
                "osd_read_ops": ops.get("read_ops"), "osd_store_read_bytes": ops.get("store_read_bytes"),
                "osd_read_reply_bytes": ops.get("read_reply_bytes"), "threads": threads}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1,
                    help="rounds of every reader's queries before the measured ones (JIT warm-up)")
    ap.add_argument("--link-multiplier", type=int, default=1)
    ap.add_argument("--readers", default=",".join([*readers.names(), *VARIANTS]), type=lambda v: _pick(v, READERS, "reader"))
    ap.add_argument("--queries", default=",".join(QUERIES), type=lambda v: _pick(v, QUERIES, "query"))
    ap.add_argument("--selectivities", default=",".join(SELECTIVITIES),
                    type=lambda v: _pick(v, SELECTIVITIES, "selectivity"))
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="skip the one-object and empty tables (each reader's fixed cost)")
    ap.add_argument("--jfr", action="store_true", help="profile the driver and executors with Java Flight Recorder")
    ap.add_argument("--keep", action="store_true", help="keep the cluster (prints its reservation)")
    ap.add_argument("--capacities", choices=("sides", "shared"), default="sides",
                    help="sides: compute and storage hosts on disjoint halves of the cores, 1.25 Gbit/s per core "
                         "on every link (sae's default); shared: every host every core, links unlimited")
    args = ap.parse_args()
    setup()
    work = Path(tempfile.mkdtemp(prefix="sae-connector-bench-"))
    res = metareserve.reserve(provider="local", name=f"cb{int(time.time()) % 10000}", nodes=5,
                              out=work / "cluster.yaml", capacities=capacities(args.capacities))
    layout = Layout({"ceph-mon": ["node2"], "ceph-mgr": ["node2"], "ceph-mds": ["node2"], "ceph-osd": STORAGE,
                     "ceph-client": [n.name for n in res.nodes], "spark-master": ["node1"],
                     "driver": ["node1"], "spark-worker": ["node4", "node5"]})
    try:
        with Cluster(res) as cluster, lease.leased(cluster, "bench/connector_bench.py"):   # no run measures beside it
            ceph, spark = connector_stack.start(res, layout, cluster, CephOptions(store="bluestore", osd_size="8GiB"))
            split = dd.split(dd.generate(args.rows, seed=1, out=work / "gen"), out=work / "split",
                             object_size=OBJECT_SIZE)
            deploy = dict(plugin="cephfs", object_size=OBJECT_SIZE, node="node2", ceph_conf=ceph.client_conf("node2"),
                          cluster=cluster, layout=layout)
            dd.deploy(res, split.out, dest=DEST, link_multiplier=args.link_multiplier, **deploy)
            spec = connector.build(spark=spark, ceph=ceph)
            mp = ceph.mount(CLIENTS).details["mountpoint"]
            tables = {"full": DEST}
            shapes = {name: q for name, q in args.queries.items() if isinstance(q, sae_queries.Query)}
            if any(q.joins_zones for q in shapes.values()):
                dd.deploy(res, dd.generate_zones(work / "zones").parent, dest=ZONES, **deploy)
            if args.floor:
                one = dd.split(sorted(split.out.glob("*.parquet"))[:1], out=work / "split-one", object_size=OBJECT_SIZE)
                dd.deploy(res, one.out, dest=FLOOR["one"], **deploy)
                # the mount is read-only (fs-read); the handle shut down, or the exit may abort
                make_empty = ("import sys, cephfs; fs = cephfs.LibCephFS(conffile=sys.argv[1]); fs.mount(); "
                              "fs.mkdirs(sys.argv[2].encode(), 0o755); fs.shutdown()")
                cluster.run(["/usr/bin/python3", "-c", make_empty, ceph.client_conf("node2"), FLOOR["empty"]],
                            nodes=["node2"], stage="bench empty table")
                tables.update(FLOOR)
            thresholds = {k: dd.selectivity_threshold(split.out, f) for k, f in args.selectivities.items()}
            sources = {name: {table: reader.reads.source(path, build=spec, mount=mp, options=options).app_config()
                              for table, path in tables.items()}
                       for name, (reader, options) in args.readers.items()}
            zones = {name: reader.reads.source(ZONES, build=spec, mount=mp, options=options).path
                     for name, (reader, options) in args.readers.items()}
            cfg = {"sources": sources, "empty": ["empty"] if args.floor else [], "register": spec.register,
                   "thresholds": thresholds, "reps": args.reps, "warmup": args.warmup, "pause": 3,
                   "queries": {name: {"sql": {sel: q.statement("total_amount", t) for sel, t in thresholds.items()},
                                      "zones": zones if q.joins_zones else None,
                                      "float_digits": sae_queries.FLOAT_DIGITS, "answer_rows": sae_queries.MAX_ANSWER_ROWS}
                               if name in shapes else {"columns": q} for name, q in args.queries.items()}}
            sampler = Sampler(res, ceph)
            sampler.sample_cpu(), sampler.sample_slow()
            sampler.start()
            kwargs = spec.submit_kwargs()
            kwargs["py_files"].append(str(RUN_POINTS))   # the app queries as sae's runs do
            kwargs["conf"]["spark.ui.showConsoleProgress"] = "false"
            jfr_dir = work / "jfr"
            if args.jfr:
                jfr_dir.mkdir()
                # one file per JVM; every JIT compilation, not only those over profile's 100 ms, and
                # every deoptimization (what sends compiled code back to be compiled again)
                record = (f"-XX:StartFlightRecording=settings=profile,jdk.Compilation#threshold=0ms,"
                          f"jdk.Deoptimization#enabled=true,dumponexit=true,filename={jfr_dir}/")
                for who in ("driver", "executor"):
                    key = f"spark.{who}.extraJavaOptions"
                    kwargs["conf"][key] = f"{kwargs['conf'].get(key, '')} {record}".strip()
            result = spark.submit(str(APP), args=[json.dumps(cfg)], log_dir=work / "logs", stream=False, **kwargs)
            sampler.stop.set()
            sampler.join()
            sampler.sample_cpu(), sampler.sample_slow()
            sampler.cluster.close()
            text = Path(result.driver_log).read_text() if result.driver_log else result.stdout
            decoder = json.JSONDecoder()
            queries = [decoder.raw_decode(ln, ln.index("bench-query ") + 12)[0]
                       for ln in text.splitlines() if "bench-query " in ln]
            (work / "measurements.json").write_text(json.dumps(
                {"queries": queries, "cpu": sampler.cpu, "net": sampler.net,
                 "osd": [o.to_dict() for o in sampler.osd], "threads": sampler.threads}))
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
        for data in GENERATED:   # ~100 MB a run; the measurements, logs and recordings stay
            shutil.rmtree(work / data, ignore_errors=True)


GENERATED = ("gen", "split", "split-one", "zones")
"""The work directory's generated datasets, removed at the end (they are in CephFS while it runs)."""


def capacities(setting: str) -> metareserve.Capacities:
    """The hosts' capacities for ``setting`` (see --capacities), resolved as sae resolves its own."""
    from sae import ClusterSpec
    from sae.planning.capacities import resolve
    cores = "sides" if setting == "sides" else "shared"
    rate = "1.25gbit/core" if setting == "sides" else "unlimited"
    sides = {**{n: "compute" for n in CLIENTS}, **{n: "storage" for n in STORAGE}}
    return resolve(ClusterSpec(nodes=5, cores=cores, link_rate=rate), sides, sorted(sides))


def _pick(value: str, known: dict, what: str) -> dict:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad)}; pick from {', '.join(known)}")
    return {n: known[n] for n in names}


def _median(ms: list[dict], key: str):
    values = [m[key] for m in ms if m.get(key) is not None]
    return statistics.median(values) if values else None


def report(queries, sampler, args, split):
    idle = sampler.idle_rates(queries)
    cells = {}
    for q in queries:
        if q["rep"] <= 0:
            continue   # warm-up rounds, and the first repetition, as the paper drops it
        m = sampler.window(q["start"], q["end"], idle)
        m["wall"] = q["end"] - q["start"]
        m.update({f"cls_{k}": v for k, v in q.get("scan", {}).items()})
        cells.setdefault((q["sel"], q["query"], q.get("table", "full"), q["reader"]), []).append(
            (m, q["rows"], q["checksum"]))
    files = sorted(split.out.glob("*.parquet"))
    full_bytes = sum(f.stat().st_size for f in files) * args.link_multiplier
    scanned = args.rows * args.link_multiplier
    print(f"\n{args.rows} rows x {args.link_multiplier} links = {scanned} rows per query, "
          f"{len(files)} objects of 16 MiB x {args.link_multiplier} names ({full_bytes / 1e9:.2f} GB of Parquet), "
          f"{args.reps - 1} measured repetitions (medians); compute hosts {', '.join(CLIENTS)} (workers "
          f"{', '.join(WORKERS)}), storage hosts {', '.join(STORAGE)}; capacities {args.capacities}; queries: "
          + ", ".join(f"{k} = {v.definition if isinstance(v, sae_queries.Query) else v or 'every column'}"
                      for k, v in args.queries.items()))
    print("idle CPU (cores, in the pauses between queries): "
          + ", ".join(f"{n} {r:.3f}" for n, r in sorted(idle.items())) + "; 'own' = measured minus idle rate x span\n")
    print("| sel | query | reader | rows | compute rx MB | compute CPU s | own | worker CPU s | storage CPU s | own | "
          "wall s | M rows/s | rx vs vanilla | compute CPU vs vanilla | own vs vanilla | wall vs vanilla |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ref = VANILLA if VANILLA in args.readers else next(iter(args.readers))
    keys = ("net", "client_cpu", "client_own", "worker_cpu", "driver_cpu", "storage_cpu", "storage_own", "wall",
            "osd_read_ops", "osd_store_read_bytes", "osd_read_reply_bytes",
            *(f"cls_{p}_ns" for p in PHASES), "cls_total_ns", "cls_calls", "cls_reply_wait_ns")
    med = {k: {key: _median([m for m, _, _ in v], key) for key in keys} for k, v in cells.items()}
    answers = {(q["sel"], q["query"], q["reader"]): json.dumps(q["answer"]) for q in queries if "answer" in q}
    aims = []
    for sel in args.selectivities:
        for query in args.queries:
            cell = {r: med[(sel, query, "full", r)] for r in args.readers}
            checks = {(cells[(sel, query, "full", r)][0][1], cells[(sel, query, "full", r)][0][2]) for r in cell}
            if len(checks) > 1 and sae_queries.same_answers([answers.get((sel, query, r)) for r in cell]):
                checks = {"same rows, floats within 1e-9"}
            o = cell[ref]
            for r, m in cell.items():
                print(f"| {sel} % | {query} | {r} | {cells[(sel, query, 'full', r)][0][1]} | {m['net'] / 1e6:.1f} | "
                      f"{m['client_cpu']:.2f} | {m['client_own']:.2f} | {m['worker_cpu']:.2f} | {m['storage_cpu']:.2f} | "
                      f"{m['storage_own']:.2f} | {m['wall']:.2f} | {scanned / m['wall'] / 1e6:.2f} | "
                      f"{m['net'] / max(o['net'], 1):.3f}x | {m['client_cpu'] / max(o['client_cpu'], 1e-3):.2f}x | "
                      f"{m['client_own'] / max(o['client_own'], 1e-3):.2f}x | {m['wall'] / o['wall']:.2f}x |")
            if len(checks) != 1:
                print(f"WARNING: readers disagree at {sel} % {query}: {checks}")
            aims += _aims(sel, query, cell)
        if {"groupby", "all"} <= set(args.queries) and OFFLOAD in args.readers:
            g, a = med[(sel, "groupby", "full", OFFLOAD)], med[(sel, "all", "full", OFFLOAD)]
            r = g["storage_cpu"] / max(a["storage_cpu"], 1e-3)
            aims.append((f"{sel} %: offload's storage CPU per query, groupby <= 1.3x scan", f"{r:.2f}x", r <= 1.3))
    storage_table(med, args)
    if args.floor:
        floor_table(med, args, {"empty": 0, "one": files[0].stat().st_size, "full": full_bytes})
    threads_table(cells, args)
    if aims:
        print("\n| aim | measured | met |\n|---|---|---|")
        for aim, value, ok in aims:
            print(f"| {aim} | {value} | {'yes' if ok else 'NO'} |")


def storage_table(med: dict, args) -> None:
    """Per selectivity and sae-ceph reader (every column, full table): the class's phases (CPU-s
    per query, summed over its calls) against the storage hosts' measured CPU-seconds; the OSDs'
    counters for every reader."""
    print("\nStorage side, every column (CPU-s per query; phases: the class's own measurement, summed over its calls; "
          "measured: the storage hosts' cgroups, 'own' minus their idle rate):\n")
    print("| sel | reader | " + " | ".join(PHASES) + " | phases | class total | measured | own | phases / own | "
          "class calls | OSD read ops | store read MB | sent MB |")
    print("|---|---|" + "---|" * (len(PHASES) + 9))
    for sel in args.selectivities:
        for r in args.readers:
            m = med.get((sel, "all", "full", r))
            if m is None:
                continue
            ph = [m[f"cls_{p}_ns"] for p in PHASES]
            total = sum(ph) / 1e9 if all(v is not None for v in ph) else None
            cells = [f"{v / 1e9:.2f}" if v is not None else "-" for v in ph]
            fmt = lambda v, scale=1.0, f="{:.2f}": "-" if v is None else f.format(v / scale)  # noqa: E731
            print(f"| {sel} % | {r} | " + " | ".join(cells) + f" | {fmt(total)} | {fmt(m['cls_total_ns'], 1e9)} | "
                  f"{m['storage_cpu']:.2f} | {m['storage_own']:.2f} | "
                  f"{fmt(total / m['storage_own'] if total is not None and m['storage_own'] > 0 else None)} | "
                  f"{fmt(m['cls_calls'], 1, '{:.0f}')} | {fmt(m['osd_read_ops'], 1, '{:.0f}')} | "
                  f"{fmt(m['osd_store_read_bytes'], 1e6, '{:.1f}')} | {fmt(m['osd_read_reply_bytes'], 1e6, '{:.1f}')} |")


def threads_table(cells: dict, args, top: int = 10) -> None:
    """Per reader at each selectivity (every column, full table): the compute hosts' CPU-seconds
    per query by process and thread kind (medians), the largest first."""
    print("\nCompute side by thread (CPU-s per query, medians; from /proc/<pid>/task/*/stat of the compute hosts' "
          "cgroups, sampled every second around each query):")
    for sel in args.selectivities:
        for r in args.readers:
            ms = [m for m, _, _ in cells.get((sel, "all", "full", r), [])]
            keys = {k for m in ms for k in m["threads"]}
            med = sorted(((statistics.median(m["threads"].get(k, 0.0) for m in ms), k) for k in keys), reverse=True)
            if med:
                print(f"  {sel} % {r}: " + ", ".join(f"{k} {v:.2f}" for v, k in med[:top] if v > 0))


def floor_table(med: dict, args, table_bytes: dict) -> None:
    """Each reader's compute cost as fixed + per-GB: the line through the one-object and the full
    table (same query, every column), at each selectivity; the empty table's cost beside it."""
    print("\nCompute side's floor, every column (own CPU-s = compute hosts' CPU minus their idle rate; "
          "fixed + per GB of Parquet scanned, through the one-object and full tables):\n")
    print("| sel | reader | empty: own CPU s (driver) | wall s | one object: own CPU s | wall s | full: own CPU s | "
          "wall s | fixed CPU s | CPU s per GB | fixed wall s | wall s per GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    gb = {k: v / 1e9 for k, v in table_bytes.items()}
    for sel in args.selectivities:
        for r in args.readers:
            e, o, f = (med.get((sel, "all", t, r)) for t in ("empty", "one", "full"))
            if not (e and o and f):
                continue
            line = []
            for key in ("client_own", "wall"):
                slope = (f[key] - o[key]) / (gb["full"] - gb["one"])
                line.append((o[key] - slope * gb["one"], slope))
            print(f"| {sel} % | {r} | {e['client_own']:.2f} ({e['driver_cpu']:.2f}) | {e['wall']:.2f} | "
                  f"{o['client_own']:.2f} | {o['wall']:.2f} | {f['client_own']:.2f} | {f['wall']:.2f} | "
                  f"{line[0][0]:.2f} | {line[0][1]:.2f} | {line[1][0]:.2f} | {line[1][1]:.2f} |")


COMPONENTS = [("sae-ceph listing + schema", ("sae.connector.CephFiles", "sae.connector.SaeCephProvider")),
              ("sae-ceph reply wait (librados)", ("Rados$Call.await", "rados_aio_wait")),
              ("sae-ceph reader set-up", ("sae.connector.ObjectsReader.<init>", "sae.connector.Rados.connect")),
              ("Arrow IPC read + decompression", ("org.apache.arrow.vector.ipc", "org.apache.arrow.compression",
                                                  "com.github.luben.zstd", "org.apache.commons.compress")),
              ("Parquet decode (vanilla)", ("org.apache.parquet", "VectorizedParquetRecordReader",
                                            "VectorizedColumnReader", "VectorizedRleValuesReader")),
              ("file read (vanilla, ceph-fuse)", ("java.io.FileInputStream", "sun.nio.ch.FileChannelImpl",
                                                  "org.apache.hadoop.fs")),
              ("Spark planning + codegen", ("org.apache.spark.sql.catalyst.analysis", "org.apache.spark.sql.catalyst.optimizer",
                                            "org.codehaus.janino", "CodeGenerator", "org.apache.spark.sql.catalyst.planning",
                                            "org.apache.spark.sql.execution.QueryExecution")),
              ("Spark scheduling + RPC", ("org.apache.spark.scheduler", "org.apache.spark.rpc", "io.netty",
                                          "org.apache.spark.executor.Executor$TaskRunner.run")),
              ("Spark generated code + aggregation", ("GeneratedClass", "org.apache.spark.sql.catalyst.expressions",
                                                      "org.apache.spark.sql.execution", "ArrowColumnVector",
                                                      "org.apache.spark.unsafe"))]


def _jfr(path: Path, *events: str) -> list[dict]:
    import subprocess
    out = subprocess.run(["jfr", "print", "--json", "--events", ",".join(events), str(path)], capture_output=True,
                         text=True)
    return json.loads(out.stdout or "{}").get("recording", {}).get("events", [])


def _epoch(iso: str) -> float:
    import datetime
    return datetime.datetime.fromisoformat(iso[:26].rstrip("Z")).replace(tzinfo=datetime.timezone.utc).timestamp()


def _seconds(duration: str) -> float:
    """A JFR duration (``PT0.012S``) in seconds."""
    import re
    m = re.fullmatch(r"PT(?:(\d+)M)?([\d.]+)S", duration or "")
    return (int(m.group(1) or 0) * 60 + float(m.group(2))) if m else 0.0


def profile(queries, files: list[Path]) -> None:
    """Per JVM (driver, executors), reader and table at 1 % and 100 % over every column: samples
    by component and top methods, the JIT compilation and GC time inside the queries (the
    compiler and collector threads are not sampled as Java code), the classes whose methods the
    JIT compiled there most (what is compiled again query after query), and the commonest
    deoptimizations there (class, reason)."""
    import collections
    if not files:
        print("no JFR recordings were written")
        return
    windows = [(q["start"], q["end"], q["reader"], q["sel"], q.get("table", "full")) for q in queries
               if q["rep"] > 0 and q["query"] == "all" and q["sel"] in ("1", "100")]
    by = collections.defaultdict(collections.Counter)
    comp = collections.defaultdict(collections.Counter)
    side = collections.defaultdict(collections.Counter)
    compiled = collections.defaultdict(collections.Counter)
    deopts = collections.defaultdict(collections.Counter)
    count = collections.Counter(w[2:] for w in windows)

    def hit(t):
        return next(((r, sel, table) for a, b, r, sel, table in windows if a <= t <= b), None)
    for f in files:
        info = _jfr(f, "jdk.JVMInformation")
        role = "executor" if any("Executor" in json.dumps(e["values"]) for e in info) else "driver"
        for e in _jfr(f, "jdk.ExecutionSample"):
            v = e["values"]
            key = hit(_epoch(v["startTime"]))
            frames = [f"{fr['method']['type']['name'].replace('/', '.')}.{fr['method']['name']}" for fr in
                      (v.get("stackTrace") or {}).get("frames", [])]
            if key is None or not frames:
                continue
            by[(role, *key)][frames[0]] += 1
            comp[(role, *key)][next((c for c, keys in COMPONENTS if any(k in fr for fr in frames for k in keys)),
                                    "other")] += 1
        for e in _jfr(f, "jdk.Compilation", "jdk.GarbageCollection", "jdk.Deoptimization"):
            v = e["values"]
            key = hit(_epoch(v["startTime"]))
            if key is None:
                continue
            if e["type"] == "jdk.Deoptimization":
                method = v.get("method") or {}
                deopts[(role, *key)][f"{(method.get('type') or {}).get('name', '?').replace('/', '.')} "
                                     f"({v.get('reason', '?')})"] += 1
                continue
            seconds = _seconds(v.get("duration") or v.get("sumOfPauses"))
            if e["type"] == "jdk.Compilation":
                side[(role, *key)]["JIT compile s"] += seconds
                side[(role, *key)]["JIT compilations"] += 1
                method = v.get("method") or {}
                compiled[(role, *key)][(method.get("type") or {}).get("name", "?").replace("/", ".")] += seconds
            else:
                side[(role, *key)]["GC pause s"] += seconds
    for key in sorted(by, key=lambda k: (int(k[2]), k[3], k[1], k[0])):
        total = sum(by[key].values())
        n = count[key[1:]] or 1
        shares = ", ".join(f"{c} {c_n / total:.0%}" for c, c_n in comp[key].most_common())
        extra = ", ".join(f"{w} {v / n:.3f} per query" for w, v in side[key].items())
        print(f"\nJFR {key[0]} samples, {key[2]} % every column, table {key[3]}, {key[1]}: {total / n:.0f} samples per "
              f"query; {shares}" + (f"; {extra}" if extra else ""))
        for m, c_n in by[key].most_common(6):
            print(f"  {c_n / total:5.1%}  {m}")
        for cls, seconds in compiled[key].most_common(8):
            print(f"  JIT {seconds / n:.3f} s per query  {cls}")
        if deopts[key]:
            print(f"  deoptimizations: {sum(deopts[key].values()) / n:.0f} per query")
        for what, times in deopts[key].most_common(6):
            print(f"  deopt {times / n:.1f} per query  {what}")


SHAPE_AIMS = {"groupby": (500, 5, 0.5), "topk": (100, None, 0.5), "join": (20, None, None)}
"""Query shape → (bytes to the compute side, compute CPU: at least this many times fewer than
vanilla's; query time: at most this share of vanilla's), at 100 % (issue #29)."""


def _shape_aims(sel: str, query: str, med: dict) -> list[tuple[str, str, bool]]:
    """Issue #29's aims for a query shape at 100 %: offload against vanilla."""
    if sel != "100" or query not in SHAPE_AIMS or not {OFFLOAD, VANILLA} <= set(med):
        return []
    off, van = med[OFFLOAD], med[VANILLA]
    rx, cpu, wall = SHAPE_AIMS[query]
    out = [(f"100 % {query}: compute side receives >= {rx}x fewer bytes than vanilla",
            f"{van['net'] / max(off['net'], 1):.0f}x", van["net"] >= rx * off["net"])]
    if cpu:
        r = van["client_cpu"] / max(off["client_cpu"], 1e-3)
        out.append((f"100 % {query}: compute CPU >= {cpu}x below vanilla's", f"{r:.1f}x", r >= cpu))
    if wall:
        r = off["wall"] / van["wall"]
        out.append((f"100 % {query}: query time <= {wall}x vanilla's", f"{r:.2f}x", r <= wall))
    return out


def _aims(sel: str, query: str, med: dict) -> list[tuple[str, str, bool]]:
    """The aims for one (selectivity, query) cell of the full table, where its readers were measured."""
    if query != "all" or OFFLOAD not in med:
        return _shape_aims(sel, query, med)
    off, out = med[OFFLOAD], []
    phases = [off.get(f"cls_{p}_ns") for p in PHASES]
    if all(v is not None for v in phases) and off["storage_own"] > 0:
        ratio = sum(phases) / 1e9 / off["storage_own"]
        out.append((f"{sel} %: offload's storage phases within 10 % of the storage hosts' own CPU-s",
                    f"{sum(phases) / 1e9:.2f} vs {off['storage_own']:.2f} s ({ratio:.2f}x)", abs(ratio - 1) <= 0.1))
    if sel == "100" and NO_OFFLOAD in med:
        r = off["storage_cpu"] / max(med[NO_OFFLOAD]["storage_cpu"], 1e-3)
        out.append(("100 %: offload's storage CPU <= 0.5x no-offload's (whole objects sent as stored, not re-encoded)",
                    f"{r:.2f}x ({off['storage_cpu']:.2f} vs {med[NO_OFFLOAD]['storage_cpu']:.2f} s)", r <= 0.5))
    if sel == "1" and VANILLA in med:
        van = med[VANILLA]
        # Other readers of the connector in the same application warm offload's code paths too.
        shared = " (other connector readers in this run warmed its JIT: compare offload alone)" \
            if set(med) - {OFFLOAD, VANILLA} else ""
        for key, what in (("client_cpu", "compute CPU"), ("client_own", "own compute CPU")):
            r = van[key] / max(off[key], 1e-3)
            out.append((f"1 %: offload's {what} >= 8x below vanilla's{shared}",
                        f"{r:.1f}x ({off[key]:.2f} vs {van[key]:.2f} s)", r >= 8))
    return out


if __name__ == "__main__":
    main()
