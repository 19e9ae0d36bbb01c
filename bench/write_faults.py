"""Benchmark: exactly-once writes through sae-ceph under injected faults, many times over.

tests/connector/test_write.py injects each fault once; this runs ``--jobs`` fault-injected jobs
(default 20) in one Spark application, taking turns: a task that fails and is retried (``fail``),
a straggler overtaken by its speculative copy (``straggle``), an executor's JVM ended mid-write
(``kill``). Each job copies a generated taxi dataset in two tasks, the fault in the first attempt of
partition 0 after its first file is written (the test's application, tests/connector/apps/writes.py,
and its fault UDF, tests/connector/WriteFaults.java). A job is exactly once when the committed
output, read back through offload and through vanilla Spark over the CephFS mount, has the input's
rows and checksum, the directory holds no file that no manifest names, and (a straggler's job
overwrites an earlier output) both readers' listings gave that earlier output whole while the
job's files were there. The reference in the
same run: the input's own checksum, and jobs that end in an error are counted as misses.

Reserves a 3-host local cluster (every host every core): node1 = Ceph mon, mgr, MDS and a bluestore
OSD; node2 = Spark master, driver and a worker; node3 = a worker. As the test does, the CephFS
sessions of a killed executor are evicted once its process is gone (else the next commit waits
for the MDS to time them out).

Usage: .venv/bin/python bench/write_faults.py [--jobs 20] [--rows 500000] [--keep]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import data_deploy as dd
import metareserve
from metareserve import Cluster, Layout, lease
from metareserve.log import setup
from rados_deploy import CephCluster, CephOptions, sessions
from sae import connector
from sae.connector import manifest
from spark_deploy import SparkCluster

import connector_stack

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "tests" / "connector" / "apps" / "writes.py"
FAULT_UDF = REPO / "tests" / "connector" / "WriteFaults.java"
FAULTS = ("fail", "straggle", "kill")
SPECULATION = {"spark.speculation": "true", "spark.speculation.interval": "200ms", "spark.speculation.quantile": "0.5",
               "spark.speculation.multiplier": "1.5", "spark.speculation.minTaskRuntime": "3s"}
"""As test_write.py: a straggler is copied once its partner has finished and it ran 3 s."""
DEST, OUT = "/data/bench-faults", "/bench-faults"
OBJECT_SIZE = 4 << 20
LAYOUT = Layout({"ceph-mon": ["node1"], "ceph-mgr": ["node1"], "ceph-mds": ["node1"], "ceph-osd": ["node1"],
                 "ceph-client": ["node1", "node2", "node3"], "spark-master": ["node2"], "driver": ["node2"],
                 "spark-worker": ["node2", "node3"]})


def fault_jar(work: Path) -> Path:
    """The fault UDF compiled against the installed pyspark's jars."""
    import pyspark
    classes = work / "classes"
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", f"{Path(pyspark.__file__).parent / 'jars'}/*",
                    "-d", str(classes), str(FAULT_UDF)], check=True, capture_output=True)
    subprocess.run(["jar", "cf", str(work / "faults.jar"), "-C", str(classes), "."], check=True)
    return work / "faults.jar"


def exactly_once(job: dict, expected: list) -> str | None:
    """Why ``job`` (the application's outcome of one fault-injected job) is not exactly once (None if it is)."""
    if "error" in job:
        return f"failed: {job['error'].strip().splitlines()[-1][:200]}"
    wrong = {reader: ck for reader, ck in job["checksums"].items() if ck != expected}
    if wrong:
        return f"read back {wrong}, the input is {expected}"
    if job["leftovers"]:
        return f"files no manifest names: {job['leftovers']}"
    seen = job.get("in_flight", {})   # a straggler's job overwrites an earlier output, read while it runs
    if job["fault"] == "straggle" and not (seen and seen["python"] == seen["java"] == seen["before"]):
        return f"while the job ran, the readers' listings gave {seen} instead of the earlier output"
    # part-<job>-<partition>-<task>-<attempt>-<n>: a retried or speculated partition 0 commits a later attempt
    zero = [int(n.split("-")[4]) for n in job["committed"] if n.split("-")[2] == "0"]
    if job["fault"] in ("fail", "straggle") and not any(a >= 1 for a in zero):
        return f"the fault did not fire: partition 0 committed attempt {zero}"
    return None


def run(spark: SparkCluster, ceph: CephCluster, spec, cfg: dict, work: Path, res) -> dict:
    """The application, evicting a killed executor's CephFS sessions as the test does."""
    kwargs = spec.submit_kwargs()
    kwargs["conf"].update(SPECULATION)
    kwargs["conf"]["spark.ui.showConsoleProgress"] = "false"
    kwargs["jars"].append(str(fault_jar(work)))
    kwargs["py_files"].append(manifest.__file__)
    lost, losses = threading.Event(), set()

    def on_line(line: str) -> None:
        if match := re.search(r"Lost executor (\d+)", line):
            losses.add(match.group(1))   # executor ids are not reused: one per kill
            lost.set()
    # the application holds its connection to the driver's node while it runs: evictions use their own
    with Cluster(res) as own, ThreadPoolExecutor(1) as pool:
        app = SparkCluster(res, LAYOUT, spark.options, cluster=own)
        running = pool.submit(app.submit, str(APP), args=[json.dumps(cfg)], on_line=on_line, log_dir=work / "logs",
                              **kwargs)
        evicted = 0
        while not running.done():
            if lost.wait(0.5):
                lost.clear()
                evicted += sum(len(found) for found in sessions.evict_dead_clients(ceph).values())
        result = running.result()
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("sae-result "))
    return dict(json.loads(line[len("sae-result "):]), evicted=evicted, lost_executors=len(losses))


def report(out: dict) -> int:
    """Print each job and the tally per fault; returns how many jobs were exactly once."""
    expected, jobs = out["input"], out["fault_jobs"]
    kills = sum(j["fault"] == "kill" for j in jobs)
    print(f"input: {expected[0]} rows, checksum {expected[1]}; executors lost {out['lost_executors']} times for "
          f"{kills} kill jobs; {out['evicted']} CephFS sessions of killed executors evicted")
    print(f"{'job':>4} {'fault':9} {'seconds':>8} {'files':>6}  exactly once")
    misses = {}
    for i, job in enumerate(jobs, 1):
        why = exactly_once(job, expected)
        misses[i] = why
        seconds = f"{job['seconds']:.1f}" if job.get("seconds") is not None else "-"
        print(f"{i:>4} {job['fault']:9} {seconds:>8} {len(job.get('committed', [])):>6}  {why or 'yes'}")
    print(f"\n{'fault':9} {'jobs':>5} {'exactly once':>13} {'median s':>9}")
    for fault in FAULTS:
        mine = [(i, j) for i, j in enumerate(jobs, 1) if j["fault"] == fault]
        if mine:
            times = [j["seconds"] for _, j in mine if j.get("seconds") is not None]
            print(f"{fault:9} {len(mine):>5} {sum(misses[i] is None for i, _ in mine):>13} "
                  f"{statistics.median(times) if times else float('nan'):>9.1f}")
    good = sum(why is None for why in misses.values())
    if out["lost_executors"] < kills:   # a kill that did not fire
        good -= kills - out["lost_executors"]
        print(f"only {out['lost_executors']} executors lost for {kills} kill jobs: the missing kills count as misses")
    print(f"\nexactly once in {good} of {len(jobs)} fault-injected jobs")
    return good


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20, help="fault-injected jobs, taking turns over fail, straggle, kill")
    ap.add_argument("--rows", type=int, default=500_000, help="generated taxi rows each job copies")
    ap.add_argument("--keep", action="store_true", help="keep the cluster (prints its reservation)")
    args = ap.parse_args()
    if args.jobs < 1 or args.rows < 10_000:
        ap.error("--jobs must be at least 1 and --rows at least 10000 (a fault needs a file written before it)")
    setup()
    work = Path(tempfile.mkdtemp(prefix="sae-write-faults-"))
    res = metareserve.reserve(provider="local", name=f"wf{int(time.time()) % 10000}", nodes=3,
                              out=work / "cluster.yaml")
    try:
        with Cluster(res) as cluster, lease.leased(cluster, "bench/write_faults.py"):   # no run measures beside it
            ceph, spark = connector_stack.start(res, LAYOUT, cluster, CephOptions())
            split = dd.split(dd.generate(args.rows, seed=7, out=work / "gen"), out=work / "split",
                             object_size=OBJECT_SIZE)
            dd.deploy(res, split.out, dest=DEST, plugin="cephfs", object_size=OBJECT_SIZE, node="node1",
                      ceph_conf=ceph.client_conf("node1"), cluster=cluster, layout=LAYOUT)
            spec = connector.build(spark=spark, ceph=ceph)
            mount = ceph.mount(["node2", "node3"]).details["mountpoint"]
            cfg = {"src": f"file://{mount}{DEST}", "mount": mount, "root": OUT, "options": spec.options,
                   "write_options": spec.write_options, "only_faults": True,
                   "faults": [FAULTS[i % len(FAULTS)] for i in range(args.jobs)]}
            out = run(spark, ceph, spec, cfg, work, res)
            (work / "jobs.json").write_text(json.dumps(out))
            print(f"raw outcomes: {work / 'jobs.json'}")
            good = report(out)
            if args.keep:
                print(f"cluster kept: {res.path}")
                return 0 if good == args.jobs else 1
            spark.uninstall()
            ceph.stop(), ceph.uninstall()
            return 0 if good == args.jobs else 1
    finally:
        if not args.keep:
            metareserve.release(res)
        for data in ("gen", "split", "classes"):
            shutil.rmtree(work / data, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
