"""Hostile values for every option and file field of the six CLIs, from one table: each is
refused at load with one ``error: ...`` line naming the option or field, exit 2 (usage error), no
traceback, no "unexpected" error, nothing injected, nothing written in or outside the working
directory, and no host reached.

Rows run in-process (click's CliRunner: the CLIs' import time would make 250 subprocesses take
minutes) under an alarm, so a row that hangs (a FIFO or /dev/zero read to its end) fails instead
of stalling the suite. Two guards keep every row off real hosts: the reservation names an ssh
host at 127.0.0.1:1, and opening a ``Cluster`` or reserving through any provider raises here, so
a value that gets past validation fails its row ("reached a host") instead of connecting.
"""
from __future__ import annotations

import json
import os
import resource
import signal
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from metareserve.errors import OperationalError
from metareserve import providers
from metareserve.providers import Provider
from metareserve.remote import Cluster
from test_bad_input import CLIS, EXPERIMENT, INJECT
from test_failed_commands_leave_nothing import _state

TIMEOUT = 10
MEMORY = 2 << 30   # address space a row may add: a CLI reading /dev/zero to its end gets a MemoryError, not the OOM killer
MARKS = [Path("/INJECTED"), Path("/tmp/INJECTED")]

RES = {"version": 1, "name": "hostile", "provider": "ssh",
       "nodes": [{"name": f"node{i}", "host": f"127.0.0.{i}", "port": 1} for i in (1, 2, 3)]}
BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
                  for p, c in zip("abcdefgh", "bcdefghi")))
COMMON = {   # files every row's working directory has (a FIFO, a directory and the run dir are made apart)
    "RES": yaml.safe_dump(RES), "EMPTY": "", "BADUTF8": b"\xff\xfe\x80 nodes: [\xc3\x28]\n", "BOMB": BOMB,
    "LIST": "- 1\n- 2\n", "SCALAR": "just a string\n", "BROKEN": "nodes: [unclosed\n",
}


def res_with(**changes) -> str:
    """The reservation with top-level fields changed (None removes one)."""
    data = {**RES, **changes}
    return yaml.safe_dump({k: v for k, v in data.items() if v is not None})


def node_with(**changes) -> str:
    node = {**RES["nodes"][0], **changes}
    return yaml.safe_dump({**RES, "nodes": [{k: v for k, v in node.items() if v is not None}]})


def exp(text: str, imports: str = "Experiment, Sweep, ClusterSpec, SparkSpec, CephSpec, MonitorSpec, DataSpec, "
                                    "Workload") -> str:
    return f"from sae import {imports}\nexperiment = {text}\n"


# ---------------------------------------------------------------- the table
# (cli, argv, extra files {name: text|bytes}, fragment the one error line must contain)
ROWS: list[tuple] = []


def rows(cli, prefix, cases, files=None):
    for case in cases:
        argv, fragment = case[0], case[1]
        extra = case[2] if len(case) > 2 else (files or {})
        ROWS.append((cli, [*prefix, *argv], extra, fragment))


BAD_FILES = [("missing.yaml", "missing.yaml"), ("DIR", "DIR"), ("FIFO", "FIFO"), ("/dev/zero", "/dev/zero"),
             ("BADUTF8", "BADUTF8"), ("BOMB", "BOMB"), ("LIST", "LIST"), ("BROKEN", "BROKEN")]
BAD_RESERVATIONS = [(f, f) for f, _ in BAD_FILES] + [("EMPTY", "EMPTY"), ("SCALAR", "SCALAR")]
BAD_RES_FIELDS = [
    ("R", "nodes", {"R": res_with(nodes=None)}),
    ("R", "nodes", {"R": res_with(nodes="node1")}),
    ("R", "nodes", {"R": res_with(nodes=[])}),
    ("R", "nodes", {"R": res_with(nodes=[["node1"]])}),
    ("R", "name", {"R": res_with(name=None)}),
    ("R", "name", {"R": res_with(name=["x"])}),
    ("R", "provider", {"R": res_with(provider="nope")}),
    ("R", "provider", {"R": res_with(provider=None)}),
    ("R", "version", {"R": res_with(version=99)}),
    ("R", "host", {"R": node_with(host=None)}),
    ("R", "port", {"R": node_with(port="22")}),
    ("R", "port", {"R": node_with(port=float("nan"))}),
    ("R", "name", {"R": node_with(name="a\nb")}),
    ("R", "name", {"R": yaml.safe_dump({**RES, "nodes": [RES["nodes"][0], RES["nodes"][0]]})}),
]

# metareserve ------------------------------------------------------------------
rows("metareserve", ["reserve", "--out", "r.yaml"], [
    (["--provider", ""], "provider"), (["--provider", " "], "provider"), (["--provider", "lo\ncal"], "provider"),
    (["--nodes", "-1"], "nodes"), (["--nodes", "99999999999"], "nodes"), (["--nodes", "nan"], "--nodes"),
    (["--name", ""], "name"), (["--name", " "], "name"), (["--name", "a\nb"], "name"), (["--name", "../x"], "name"),
    (["--name", "/etc/x"], "name"), (["--name", "a\x00b"], "name"), (["--name", "x" * 300], "name"),
    (["--name", f"a;{INJECT}"], "name"),
    (["--cpus", "999999"], "cpus"), (["--cpus", "-1"], "cpus"), (["--cpus", "3-1"], "cpus"),
    (["--cpus", "a-b"], "cpus"), (["--cpus", "node9=0"], "node9"), (["--cpus", ""], "cpus"),
    (["--cpu-limit", "nan"], "cpu"), (["--cpu-limit", "inf"], "cpu"), (["--cpu-limit", "0"], "cpu"),
    (["--cpu-limit", "1e308"], "cpu"), (["--cpu-limit", "many"], "cpu"),
    (["--memory", "999999TiB"], "memory"), (["--memory", "12XB"], "12XB"), (["--memory", "-1GiB"], "memory"),
    (["--memory", "nan"], "memory"), (["--memory", "0"], "memory"),
    (["--link-rate", "999999tbit"], "link"), (["--link-rate", "-5mbit"], "link"), (["--link-rate", "nan"], "link"),
    (["--link-rate", "fast"], "link"), (["--link-rate", "0"], "link"),
    (["--delay", "nan"], "delay"), (["--delay", "-1ms"], "delay"), (["--delay", "forever"], "delay"),
    (["--delay", "99999999999s"], "delay"),
    (["-O", "novalue"], "KEY=VALUE"), (["-O", "=x"], "KEY=VALUE"),
    (["-p", "ssh", "--host", ""], "--host"), (["-p", "ssh", "--host", "a\nb"], "--host"),
    (["-p", "ssh", "--ssh-config", "missing.conf", "--host", "h1"], "ssh-config"),
    (["-p", "ssh", "--ssh-config", "a b", "--host", "h1"], "ssh-config"),
    (["-p", "ssh", "--ssh-config", "DIR", "--host", "h1"], "ssh-config"),
    (["--out", "DIR"], "--out"), (["--out", "/proc/x/r.yaml"], "--out"),
    (["-p", "cloudlab", "--nodes", "1", "-O", "site=../x"], "site"),
])
rows("metareserve", ["reserve", "-p", "ssh", "--out", "r.yaml", "--hosts-file"],
     [([f], frag) for f, frag in BAD_FILES + [("EMPTY", "EMPTY"), ("SCALAR", "SCALAR")]] + [
         (["H"], "hosts", {"H": yaml.safe_dump({"hosts": "h1"})}),
         (["H"], "host", {"H": yaml.safe_dump({"hosts": [{"name": "a"}]})}),
         (["H"], "port", {"H": yaml.safe_dump({"hosts": [{"name": "a", "host": "h1", "port": -1}]})}),
         (["H"], "hosts", {"H": yaml.safe_dump({"hosts": [["h1"]]})}),
         (["H"], "unknown", {"H": yaml.safe_dump({"hosts": [{"name": "a", "host": "h1", "bogus": 1}]})}),
     ])
for command in (["show"], ["check"], ["release"], ["renew"], ["break-lease"], ["shape", "--cpus", "0"]):
    rows("metareserve", [*command, "-r"], [([f], frag) for f, frag in BAD_RESERVATIONS[:4]])
rows("metareserve", ["show", "-r"], [([f], frag) for f, frag in BAD_RESERVATIONS[4:]]
     + [([r], frag, files) for r, frag, files in BAD_RES_FIELDS])
rows("metareserve", ["renew", "-r", "RES"], [
    (["--hours", "nan"], "hours"), (["--hours", "inf"], "hours"), (["--hours", "-1"], "hours"),
    (["--hours", "0"], "hours"), (["--hours", "1e308"], "hours")])
rows("metareserve", ["shape", "-r", "RES"], [
    (["--cpus", "999999"], "cpus"), (["--memory", "999999TiB"], "memory"), (["--link-rate", "nan"], "link"),
    (["--cpu-limit", "inf"], "cpu"), (["--delay", "nan"], "delay")])

# spark-deploy -----------------------------------------------------------------
OPT = {"worker_cores": [1]}
rows("spark-deploy", ["start", "-r", "RES"], [
    (["--worker-cores", "-1"], "worker_cores"), (["--worker-cores", "99999999"], "worker_cores"),
    (["--worker-memory", "999999999999999g"], "worker_memory"), (["--worker-memory", ""], "worker_memory"),
    (["--worker-memory", "1g\n"], "worker_memory"), (["--executor-memory", "0g"], "executor_memory"),
    (["--executor-memory", "99999999t"], "executor_memory"),
    (["--master-port", "-1"], "master_port"), (["--master-ui-port", "0"], "master_ui_port"),
    (["--worker-port", "99999999999999999999"], "worker_port"), (["--worker-ui-port", "70000"], "worker_ui_port"),
    (["--metrics-namespace", "a\nb"], "metrics_namespace"), (["--metrics-namespace", ""], "metrics_namespace"),
    (["--metrics-namespace", "ns;x"], "metrics_namespace"), (["--metrics-namespace", "x" * 500], "metrics_namespace"),
    (["--prefix", "relative/dir"], "prefix"), (["--prefix", "/tmp/../etc"], "prefix"), (["--prefix", ""], "prefix"),
    (["--prefix", "/a/b\n/c"], "prefix"),
    (["--spark-conf", "spark.x=a\nb"], "spark.x"), (["--spark-conf", "notspark=1"], "conf"),
    (["--spark-conf", "=1"], "KEY=VALUE"), (["--spark-conf", "spark.x=a\x00b"], "spark.x"),
    (["--spark-env", "A=b\nc"], "env"), (["--spark-env", "1A=b"], "env"), (["--spark-env", "PATH;x=1"], "env"),
    (["--python-package", f"pkg; {INJECT}"], "python_packages"), (["--python-package", ""], "python_packages"),
    (["--python-package", "-e git+https://x/y"], "python_packages"),
    (["--spark-version", ""], "version"), (["--spark-version", f"4.3.0; {INJECT}"], "version"),
    (["--spark-version", "../x"], "version"),
    (["--spark-source", ""], "spark_source"), (["--spark-source", "ftp://x/spark.tgz"], "spark_source"),
    (["--spark-source", "/missing/spark-9.tgz"], "spark_source"),
    (["--layout", "missing.yaml"], "missing.yaml"), (["--layout", "DIR"], "DIR"), (["--layout", "BADUTF8"], "BADUTF8"),
    (["--layout", "LIST"], "LIST"), (["--layout", "L"], "nope", {"L": yaml.safe_dump({"version": 1, "roles": {"nope": ["node1"]}})}),
    (["--role", "nope=node1"], "nope"), (["--role", "spark-worker=node9"], "node9"),
])
rows("spark-deploy", ["start", "-r", "RES", "--options"],
     [([f], frag) for f, frag in BAD_FILES] + [
         (["O"], "worker_cores", {"O": yaml.safe_dump(OPT)}),
         (["O"], "conf", {"O": yaml.safe_dump({"conf": ["a"]})}),
         (["O"], "spark.x", {"O": yaml.safe_dump({"conf": {"spark.x": "a\nb"}})}),
         (["O"], "spark.x", {"O": yaml.safe_dump({"conf": {"spark.x": ["a"]}})}),
         (["O"], "env", {"O": yaml.safe_dump({"env": {"A": "b\nc"}})}),
         (["O"], "python_packages", {"O": yaml.safe_dump({"python_packages": "x"})}),
         (["O"], "python_packages", {"O": yaml.safe_dump({"python_packages": [1]})}),
         (["O"], "worker_cores", {"O": "worker_cores: .inf\n"}),
         (["O"], "version", {"O": yaml.safe_dump({"version": "../../x"})}),
         (["O"], "system_packages", {"O": yaml.safe_dump({"system_packages": ["a;b"]})}),
         (["O"], "worker_memory", {"O": yaml.safe_dump({"worker_memory": 2})}),
         (["O"], "bogus", {"O": yaml.safe_dump({"bogus": 1})}),
     ])
rows("spark-deploy", ["submit", "-r", "RES"], [
    (["--driver-env", "X=1\ny", "app.py"], "--driver-env"), (["--driver-env", "novalue", "app.py"], "--driver-env"),
    (["--log-dir", "/dev/zero/x", "app.py"], "log"),
])
rows("spark-deploy", ["uninstall", "-r", "RES"], [(["--prefix", "/etc"], "prefix"), (["--prefix", "/"], "prefix")])

# rados-deploy -----------------------------------------------------------------
rows("rados-deploy", ["start", "-r", "RES"], [
    (["--osd-size", "999999TiB"], "osd_size"), (["--osd-size", "0"], "osd_size"), (["--osd-size", "-1GiB"], "osd_size"),
    (["--osd-size", "nan"], "osd_size"), (["--osd-size", ""], "osd_size"), (["--osd-size", "1.5.5G"], "osd_size"),
    (["--osds-per-node", "-1"], "osds_per_node"), (["--osds-per-node", "100000"], "osds_per_node"),
    (["--op-timeout", "0"], "op_timeout"), (["--op-timeout", "-1"], "op_timeout"),
    (["--op-timeout", "10000000000"], "op_timeout"),
    (["--fs-name", ""], "fs_name"), (["--fs-name", "a\nb"], "fs_name"), (["--fs-name", "x" * 300], "fs_name"),
    (["--bluestore-device", "rel/dev"], "bluestore_device"),
    (["--bluestore-device", "/dev/../etc/passwd"], "bluestore_device"),
    (["--bluestore-device", "/a b"], "bluestore_device"), (["--bluestore-device", "a\nb"], "bluestore_device"),
    (["--store", ""], "--store"), (["--role", "ceph-osd=node9"], "node9"),
])
rows("rados-deploy", ["install-class", "-r", "RES", "--source-dir"], [
    (["missing-dir"], "source"), (["FIFO"], "source"), (["EMPTY"], "source")])
for command in ("status", "stop", "uninstall"):
    rows("rados-deploy", [command, "-r"], [(["DIR"], "DIR"), (["BOMB"], "BOMB")])

# data-deploy ------------------------------------------------------------------
rows("data-deploy", ["generate"], [
    (["--rows", "-1", "--out", "g"], "--rows"), (["--rows", "1000000000000000", "--out", "g"], "rows"),
    (["--rows", "nan", "--out", "g"], "--rows"), (["--rows", "10", "--seed", "-1", "--out", "g"], "seed"),
    (["--rows", "10", "--seed", str(2 ** 64), "--out", "g"], "seed"),
    (["--rows", "10", "--rows-per-file", "0", "--out", "g"], "--rows-per-file"),
    (["--rows", "10", "--out", "EMPTY"], "EMPTY"), (["--rows", "10", "--out", ""], "--out"),
    (["--rows", "10", "--out", "/dev/zero"], "/dev/zero"), (["--rows", "10", "--out", "a\nb"], "out"),
])
rows("data-deploy", ["ingest"], [
    (["missing.parquet", "--out", "i"], "missing.parquet"), (["DIR", "--out", "i"], "DIR"),
    (["FIFO", "--out", "i"], "FIFO"), (["EMPTY", "--out", "i"], "EMPTY"), (["BADUTF8", "--out", "i"], "BADUTF8"),
    (["X.csv", "--out", "i"], "X.csv", {"X.csv": b"\xff\xfe,\x00\n"}), (["/dev/zero", "--out", "i"], "/dev/zero"),
    (["GOOD.parquet", "--out", ""], "--out"),
])
rows("data-deploy", ["split"], [
    (["--object-size", "999999TiB", "--out", "s", "GOOD.parquet"], "object"),
    (["--object-size", "0", "--out", "s", "GOOD.parquet"], "object"),
    (["--object-size", "-1MiB", "--out", "s", "GOOD.parquet"], "object"),
    (["--object-size", "nan", "--out", "s", "GOOD.parquet"], "object"),
    (["--object-size", "1", "--out", "s", "GOOD.parquet"], "object"),
    (["--object-size", "", "--out", "s", "GOOD.parquet"], "object"),
    (["--object-size", "4MiB", "--out", "s", "missing.parquet"], "missing.parquet"),
    (["--object-size", "4MiB", "--out", "s", "DIR"], "DIR"), (["--object-size", "4MiB", "--out", "s", "FIFO"], "FIFO"),
    (["--object-size", "4MiB", "--out", "s", "EMPTY"], "EMPTY"),
    (["--object-size", "4MiB", "--out", "s", "/dev/zero"], "/dev/zero"),
    (["--object-size", "4MiB", "--out", "EMPTY", "GOOD.parquet"], "EMPTY"),
    (["--object-size", "4MiB", "--out", "s", "--compression", "lz"], "--compression"),
])
rows("data-deploy", ["threshold"], [
    (["--fraction", "nan", "GOOD.parquet"], "fraction"), (["--fraction", "inf", "GOOD.parquet"], "fraction"),
    (["--fraction", "-0.1", "GOOD.parquet"], "fraction"),
    (["--fraction", "0.5", "--column", "nope", "GOOD.parquet"], "nope"),
    (["--fraction", "0.5", "--column", "a\nb", "GOOD.parquet"], "column"),
    (["--fraction", "0.5", "missing.parquet"], "missing.parquet"), (["--fraction", "0.5", "EMPTY"], "EMPTY"),
    (["--fraction", "0.5", "FIFO"], "FIFO"),
])
rows("data-deploy", ["deploy", "-r", "RES"], [
    (["--object-size", "999999TiB", "SRC"], "object"), (["--object-size", "-1", "SRC"], "object"),
    (["--object-size", "nan", "SRC"], "object"),
    (["--object-size", "4MiB", "--dest", "", "SRC"], "dest"), (["--object-size", "4MiB", "--dest", "rel", "SRC"], "dest"),
    (["--object-size", "4MiB", "--dest", "/data/../etc", "SRC"], "dest"),
    (["--object-size", "4MiB", "--dest", "/a\nb", "SRC"], "dest"), (["--object-size", "4MiB", "--dest", "/", "SRC"], "dest"),
    (["--object-size", "4MiB", "--link-multiplier", "1000000000000", "SRC"], "link"),
    (["--object-size", "4MiB", "--copy-multiplier", "1000000000000", "SRC"], "copy"),
    (["--object-size", "4MiB", "--plugin", "nope", "SRC"], "nope"),
    (["--object-size", "4MiB", "--node", "a b", "SRC"], "node"), (["--object-size", "4MiB", "--node", "node9", "SRC"], "node9"),
    (["--object-size", "4MiB", "--ceph-conf", "a\nb", "SRC"], "ceph"),
    (["--object-size", "4MiB", "--ceph-conf", "rel/ceph.conf", "SRC"], "ceph"),
    (["--object-size", "4MiB", "--ceph-user", "a b", "SRC"], "ceph"), (["--object-size", "4MiB", "--ceph-user", "", "SRC"], "ceph"),
    (["--object-size", "4MiB", "--ceph-user", "../x", "SRC"], "ceph"),
    (["--object-size", "4MiB", "missing-src"], "missing-src"), (["--object-size", "4MiB", "EMPTY"], "EMPTY"),
])
for command in ("verify", "clean"):
    rows("data-deploy", [command, "-r", "RES"], [
        ([""], "DEST"), (["/"], "/"), (["relative"], "relative"), (["/data/../etc"], "etc"), (["/a\nb"], "DEST"),
        (["--plugin", "nope", "/data/taxi"], "nope")])

# monitor-deploy ---------------------------------------------------------------
rows("monitor-deploy", ["start", "-r", "RES"], [
    (["--scrape-interval", "0s"], "scrape"), (["--scrape-interval", "nan"], "scrape"),
    (["--scrape-interval", ""], "scrape"), (["--scrape-interval", "9" * 30 + "y"], "scrape"),
    (["--scrape-interval", "-1s"], "scrape"), (["--retention", "0s"], "retention"),
    (["--retention", "x"], "retention"), (["--retention", "9" * 30 + "y"], "retention"),
    (["--prometheus-port", "-1"], "prometheus_port"), (["--prometheus-port", "70000"], "prometheus_port"),
])
rows("monitor-deploy", ["start", "-r", "RES", "--config"],
     [([f], frag) for f, frag in BAD_FILES] + [
         (["C"], "prometheus_port", {"C": yaml.safe_dump({"prometheus_port": "9090"})}),
         (["C"], "prometheus_port", {"C": yaml.safe_dump({"prometheus_port": True})}),
         (["C"], "extra_jobs", {"C": yaml.safe_dump({"extra_jobs": "x"})}),
         (["C"], "extra_jobs", {"C": yaml.safe_dump({"extra_jobs": [{"job_name": "a\nb"}]})}),
         (["C"], "vhost_interval", {"C": "vhost_interval: .nan\n"}),
         (["C"], "vhost_interval", {"C": "vhost_interval: -1\n"}),
         (["C"], "node_collectors", {"C": yaml.safe_dump({"node_collectors": ["cpu", "--collector.x"]})}),
         (["C"], "driver_address", {"C": yaml.safe_dump({"driver_address": "a\nb"})}),
         (["C"], "scrape_interval", {"C": yaml.safe_dump({"scrape_interval": ["2s"]})}),
         (["C"], "retention", {"C": yaml.safe_dump({"retention": {"a": 1}})}),
         (["C"], "node_exporter_port", {"C": yaml.safe_dump({"node_exporter_port": 9090})}),
         (["C"], "bogus", {"C": yaml.safe_dump({"bogus": 1})}),
     ])
rows("monitor-deploy", ["export", "-r", "RES"], [
    (["--from", "nan", "--to", "1", "--out", "e"], "nan"), (["--from", "0", "--to", "inf", "--out", "e"], "inf"),
    (["--from", "-1e309", "--to", "1", "--out", "e"], "-1e309"), (["--from", "10", "--to", "5", "--out", "e"], "end"),
    (["--from", "1e300", "--to", "1e301", "--out", "e"], "--from"),
    (["--from", "0", "--to", "1", "--step", "0", "--out", "e"], "step"),
    (["--from", "0", "--to", "1", "--step", "-1", "--out", "e"], "step"),
    (["--from", "0", "--to", "1", "--step", "nan", "--out", "e"], "step"),
    (["--from", "0", "--to", "1", "--out", "EMPTY"], "EMPTY"),
    (["--from", "0", "--to", "1", "--node", "a b", "--out", "e"], "node"),
    (["--from", "0", "--to", "1", "--metric", "nope", "--out", "e"], "nope"),
])
rows("monitor-deploy", ["windows", "-r", "RES"], [
    (["--from", "nan", "--to", "1"], "nan"), (["--from", "0", "--to", "inf"], "inf"),
    (["--from", "9e99", "--to", "1e100"], "--from")])
rows("monitor-deploy", ["dashboard", "-r", "RES", "--out"], [(["EMPTY"], "EMPTY")])

# sae --------------------------------------------------------------------------
EXPERIMENTS = {
    "negative seed": ("data=DataSpec(seed=-1)", "data.seed"),
    "huge seed": ("data=DataSpec(seed=2**70)", "data.seed"),
    "unknown generator": ("data=DataSpec(generator='nope')", "data.generator"),
    "missing input": ("data=DataSpec(input='missing.parquet')", "data.input"),
    "input dir": ("data=DataSpec(input='DIR')", "data.input"),
    "input traversal": ("data=DataSpec(input='../../../../etc/passwd')", "data.input"),
    "newline conf value": ("spark=SparkSpec(conf={'spark.x': 'a\\nb'})", "spark.x"),
    "list conf value": ("spark=SparkSpec(conf={'spark.x': ['a']})", "spark.x"),
    "conf not spark": ("spark=SparkSpec(conf={'x': 'a'})", "conf"),
    "huge sweep": ("sweep=Sweep(cartesian={'selectivity': [x / 1000 for x in range(1, 100001)]})", "sweep"),
    "unknown field": ("bogus=1", "bogus"),
    "unknown section field": ("data=DataSpec(bogus=1)", "bogus"),
    "huge rows": ("data=DataSpec(rows=10**15)", "data.rows"),
    "huge object": ("data=DataSpec(object_size='999999TiB')", "object_size"),
    "huge osd": ("ceph=CephSpec(osd_size='999999TiB')", "osd_size"),
    "nan osd": ("ceph=CephSpec(osd_size='nan')", "osd_size"),
    "huge osds": ("ceph=CephSpec(osds_per_node=100000)", "osds_per_node"),
    "huge nodes": ("cluster=ClusterSpec(nodes=10**6)", "nodes"),
    "nan cores": ("cluster=ClusterSpec(cores='nan')", "cores"),
    "nan link": ("cluster=ClusterSpec(link_rate='nan')", "link"),
    "huge link": ("cluster=ClusterSpec(link_rate='999999tbit')", "link"),
    "huge memory": ("cluster=ClusterSpec(host_memory='999999TiB')", "memory"),
    "huge worker cores": ("spark=SparkSpec(worker_cores=10**6)", "worker_cores"),
    "huge executor memory": ("spark=SparkSpec(executor_memory='99999999t')", "executor_memory"),
    "driver memory": ("spark=SparkSpec(driver_memory='lots')", "driver_memory"),
    "nan scrape": ("monitor=MonitorSpec(scrape_interval='nan')", "scrape"),
    "zero batch": ("workload=Workload(batch_size=0)", "batch_size"),
    "nan selectivity": ("workload=Workload(selectivity=float('nan'))", "selectivity"),
    "inf selectivity": ("workload=Workload(selectivity=float('inf'))", "selectivity"),
    "zero repetitions": ("repetitions=0", "repetitions"),
    "negative warmup": ("warmup=-1", "warmup"),
    "inf pause": ("pause=float('inf')", "pause"),
    "newline name": ("name='a\\nb'", "name"), "traversal name": ("name='../x'", "name"),
    "figures string": ("figures='points'", "figures"),
    "unknown axis": ("sweep=Sweep(cartesian={'nope': [1]})", "nope"),
    "axis dict": ("sweep=Sweep(cartesian={'selectivity': {'a': 1}})", "selectivity"),
    "stored compression": ("data=DataSpec(stored_compression='nope')", "stored_compression"),
    "format": ("data=DataSpec(format='orc')", "data.format"),
    "page rows": ("data=DataSpec(page_rows=-5)", "data.page_rows"),
    "codec the format lacks": ("data=DataSpec(format='ipc', stored_compression='snappy')", "stored_compression"),
    "vanilla on ipc": ("data=DataSpec(format='ipc'), workload=Workload(reader='vanilla')", "data.format ipc"),
    "join on csv": ("data=DataSpec(format='csv'), workload=Workload(query='join')", "zones"),
    "compression": ("workload=Workload(compression='nope')", "compression"),
    "reader": ("workload=Workload(reader='nope')", "reader"),
    "columns string": ("workload=Workload(columns='total_amount')", "columns"),
    "column newline": ("workload=Workload(column='a\\nb')", "column"),
    "rows float": ("data=DataSpec(rows=1e3)", "data.rows"),
    "copy multiplier": ("data=DataSpec(copy_multiplier=10**12)", "copy_multiplier"),
    "link multiplier": ("data=DataSpec(link_multiplier=10**12)", "link_multiplier"),
    "description": ("description=['x']", "description"),
    "profile": ("profiles={'tiny': 5}", "tiny"),
    "nested sweep": ("sweep=Sweep(cartesian={'selectivity': [[1]]})", "selectivity"),
    "query": ("workload=Workload(query='nope')", "query"),
    "query list": ("workload=Workload(query=['scan'])", "query"),
    "sql with query": ("workload=Workload(query='groupby', sql='SELECT 1 FROM trips')", "sql"),
    "sql not select": ("workload=Workload(sql='DROP TABLE trips')", "sql"),
    "sql two statements": ("workload=Workload(sql='SELECT 1 FROM trips; DROP TABLE trips')", "sql"),
    "sql empty": ("workload=Workload(sql='  ')", "sql"),
    "sql huge": ("workload=Workload(sql='SELECT 1 FROM trips WHERE ' + 'x' * 200000)", "sql"),
    "sql no trips": ("workload=Workload(sql='SELECT 1')", "sql"),
    "sql number": ("workload=Workload(sql=5)", "sql"),
    "operators": ("workload=Workload(operators='yes')", "operators"),
}


def experiment_file(fields: str) -> dict:
    name = "" if fields.startswith("name=") else "name='h', "
    return {"E.py": exp(f"Experiment({name}{fields})")}


for label, (fields, frag) in EXPERIMENTS.items():
    ROWS.append(("sae", ["plan", "E.py"], experiment_file(fields), frag))
for label in ("negative seed", "unknown generator", "missing input", "newline conf value", "huge sweep"):
    fields, frag = EXPERIMENTS[label]
    ROWS.append(("sae", ["run", "E.py", "-r", "RES"], experiment_file(fields), frag))
rows("sae", ["plan"], [
    (["missing.py"], "missing.py"), (["DIR"], "DIR"), (["FIFO"], "FIFO"), (["/dev/zero"], "/dev/zero"),
    (["EMPTY"], "EMPTY"), (["BADUTF8"], "BADUTF8"),
    (["E.py"], "experiment file E.py: raised ZeroDivisionError: division by zero at line 1", {"E.py": "1/0\n"}),
    (["E.py"], "experiment", {"E.py": "experiment = 5\n"}),
    (["E.py"], "E.py", {"E.py": "import sys; sys.exit(3)\n"}),
    ([EXPERIMENT, "--profile", ""], "profile"), ([EXPERIMENT, "--profile", "a\nb"], "profile"),
])
rows("sae", ["run", EXPERIMENT, "-r", "RES"], [
    (["--wait-lease", "nan"], "wait-lease"), (["--wait-lease", "-1"], "wait-lease"),
    (["--wait-lease", "inf"], "wait-lease"), (["--skip", ""], "skip"), (["--skip", "a\nb"], "skip"),
    (["--out", "EMPTY"], "--out"), (["--profile", "../x"], "../x"),
])
rows("sae", ["run", EXPERIMENT, "-r"], [([f], frag) for f, frag in BAD_RESERVATIONS]
     + [([r], frag, files) for r, frag, files in BAD_RES_FIELDS[:6]])
rows("sae", ["clean", "--keep-nodes", "-r"], [(["DIR"], "DIR"), (["BOMB"], "BOMB"), (["missing.yaml"], "missing")])
RUN = "RUNDIR"
for command in ("status", "report", "resume"):
    rows("sae", [command], [
        (["missing-dir"], "missing-dir"), (["EMPTY"], "EMPTY"),
        ([RUN], "ledger.json", {f"{RUN}/ledger.json": '{"version": 1}'}),
        ([RUN], "ledger.json", {f"{RUN}/ledger.json": "[1, 2]"}),
        ([RUN], "ledger.json", {f"{RUN}/ledger.json": b"\xff\xfe"}),
        ([RUN], "ledger.json", {f"{RUN}/ledger.json": '{"version": 1, "entries": {"k": {"point": 1}}, "steps": [],'
                                                      ' "runs": [], "executed": []}'}),
        ([RUN], "plan.yaml", {f"{RUN}/plan.yaml": yaml.safe_dump({"version": 1})}),
    ])
rows("sae", ["status"], [
    ([RUN], "lease.yaml", {f"{RUN}/lease.yaml": yaml.safe_dump({"reservation": "x"})}),
    ([RUN], "lease.yaml", {f"{RUN}/lease.yaml": "- 1\n"}),
    ([RUN], "lease.yaml", {f"{RUN}/lease.yaml": yaml.safe_dump({"reservation": "x", "holder": "h", "pid": "x",
                                                                "host": "h", "since": 0})}),
])
rows("sae", ["resume"], [
    ([RUN], "spec.yaml", {f"{RUN}/spec.yaml": yaml.safe_dump({"version": 1})}),
    ([RUN], "spec.yaml", {f"{RUN}/spec.yaml": "- 1\n"}),
])
rows("spark-deploy", ["start", "-r", "RES"], [
    (["--pyarrow", f"26.0.1; {INJECT}"], "pyarrow"), (["--pyarrow", ""], "pyarrow"),
    (["--python-package", "pyarrow==20.0.0"], "python_packages names pyarrow"),
])
rows("sae", ["plan", EXPERIMENT, "--set"], [
    (["spark.pyarrow=../x"], "pyarrow"), (["spark.version=4.0.1"], "Spark 4.1 and later"),
])
rows("sae", ["plan", EXPERIMENT, "--set"], [
    (["spark.jit=fast"], "jit must be one of full, quick"),
])
rows("rados-deploy", ["install-scan-library", "-r", "RES"], [
    (["--node", "node9"], "node9"), (["--node", "node1\n"], "node1"),
])

# the last bad values: digits of other scripts, sizes Spark cannot read, one machine named twice,
# alias bombs inside otherwise good files, outputs where nothing can be written, an experiment
# file's own code raising
FLOW_BOMB = "[" + ", ".join(["&a [1,1,1,1,1,1,1,1,1]"] + [f"&{c} [{','.join([f'*{p}'] * 9)}]"
                                                          for p, c in zip("abcdefgh", "bcdefghi")]) + "]"
TWICE = {"R": res_with(nodes=[{"name": "node1", "host": "10.0.0.1"}, {"name": "node2", "host": "10.0.0.1", "port": 22}])}
HOSTS_TWICE = {"H": yaml.safe_dump({"hosts": [{"name": "a", "host": "10.0.0.1"}, {"name": "b", "host": "10.0.0.2"},
                                              {"name": "c", "host": "10.0.0.1"}]})}
ROWS.extend([
    ("spark-deploy", ["start", "-r", "RES", "--worker-cores", "３"], {}, "--worker-cores"),
    ("spark-deploy", ["start", "-r", "RES", "--worker-cores", "٣"], {}, "--worker-cores"),
    ("metareserve", ["reserve", "--nodes", "٣", "--out", "r.yaml"], {}, "--nodes"),
    ("metareserve", ["reserve", "--cpu-limit", "٣", "--out", "r.yaml"], {}, "--cpu-limit"),
    ("metareserve", ["renew", "-r", "RES", "--hours", "٣"], {}, "--hours"),
    ("rados-deploy", ["start", "-r", "RES", "--osds-per-node", "٣"], {}, "--osds-per-node"),
    ("data-deploy", ["generate", "--rows", "٣", "--out", "g"], {}, "--rows"),
    ("monitor-deploy", ["windows", "-r", "RES", "--from", "٣", "--to", "٤"], {}, "--from"),
    ("sae", ["compare", "a", "b", "--fail-on", "time>５%"], {}, "time>５%"),
    ("sae", ["history", "x", "--lookback", "٣"], {}, "--lookback"),
    ("sae", ["plan", EXPERIMENT, "--set", "spark.worker_cores=３"], {}, "worker_cores"),
    ("sae", ["plan", "E.py"], experiment_file("spark=SparkSpec(worker_cores='٣')"), "worker_cores"),
    ("sae", ["plan", "E.py"], experiment_file("workload=Workload(selectivity='１０')"), "selectivity '１０' is not a number"),
    ("spark-deploy", ["start", "-r", "RES", "--worker-memory", "4 GiB"], {}, "(Spark writes it 4g)"),
    ("sae", ["plan", EXPERIMENT, "--set", "spark.executor_memory=1.5 GiB"], {}, "(Spark writes it 1536m)"),
    ("metareserve", ["show", "-r", "R"], TWICE, "R: nodes node1 and node2 are both 10.0.0.1:22"),
    ("sae", ["run", EXPERIMENT, "-r", "R"], TWICE, "R: nodes node1 and node2 are both 10.0.0.1:22"),
    ("metareserve", ["reserve", "-p", "ssh", "--out", "r.yaml", "--hosts-file", "H"], HOSTS_TWICE,
     "H: hosts[0] (a) and hosts[2] (c) are both 10.0.0.1:22"),
    ("metareserve", ["show", "-r", "R"], {"R": res_with(provider_state=None) + f"provider_state: {{x: {FLOW_BOMB}}}\n"},
     "R: YAML refused: aliases expand"),
    ("metareserve", ["reserve", "-p", "ssh", "--out", "r.yaml", "--hosts-file", "H"],
     {"H": f"hosts: [{{name: a, host: h1, labels: {{x: {FLOW_BOMB}}}}}]\n"}, "H: YAML refused: aliases expand"),
    ("spark-deploy", ["start", "-r", "RES", "--layout", "L"], {"L": f"version: 1\nroles: {{x: {FLOW_BOMB}}}\n"},
     "L: YAML refused"),
    ("spark-deploy", ["start", "-r", "RES", "--options", "O"], {"O": f"env: {{A: {FLOW_BOMB}}}\n"}, "O: YAML refused"),
    ("monitor-deploy", ["start", "-r", "RES", "--config", "C"], {"C": f"extra_jobs: {FLOW_BOMB}\n"}, "C: YAML refused"),
    ("sae", ["plan", EXPERIMENT, "--set", f"description={FLOW_BOMB}"], {}, "--set description: value refused"),
    ("sae", ["plan", EXPERIMENT, "--set", "description=&a [*a]"], {}, "--set description: value refused: an alias"),
    ("sae", ["resume", RUN], {f"{RUN}/spec.yaml": f"version: 1\nexperiment: {FLOW_BOMB}\n"}, "spec.yaml: YAML refused"),
    ("sae", ["status", RUN], {f"{RUN}/lease.yaml": f"reservation: {FLOW_BOMB}\n"}, "lease.yaml: YAML refused"),
    ("sae", ["run", EXPERIMENT, "-r", "RES", "--out", "/proc/foo"], {}, "--out /proc/foo: nothing can be written"),
    ("sae", ["run", "DIR", "-r", "RES", "--out", "/proc/foo"], {}, "--out /proc/foo: nothing can be written"),
    ("sae", ["compare", "a", "b", "--html", "/proc/x"], {}, "--html /proc/x"),
    ("sae", ["history", "x", "--html", "/proc/x"], {}, "--html /proc/x"),
    ("metareserve", ["reserve", "--out", "/proc/r.yaml"], {}, "--out /proc/r.yaml: nothing can be written"),
    ("monitor-deploy", ["export", "-r", "RES", "--from", "0", "--to", "1", "--out", "/proc/e"], {}, "--out /proc/e"),
    ("monitor-deploy", ["dashboard", "-r", "RES", "--out", "/proc/d"], {}, "--out /proc/d"),
    ("spark-deploy", ["submit", "-r", "RES", "--log-dir", "/proc/l", "app.py"], {}, "--log-dir /proc/l"),
    ("data-deploy", ["generate", "--rows", "10", "--out", "/proc/g"], {}, "/proc/g"),
    ("sae", ["plan", "E.py"], {"E.py": "def f():\n    return {}['x']\n\nexperiment = f()\n"},
     "experiment file E.py: raised KeyError: 'x' at line 2"),
    ("sae", ["plan", "E.py"], {"E.py": "len(5)\n"}, "experiment file E.py: raised TypeError"),
    ("sae", ["plan", "E.py"], experiment_file("sweep=Sweep(cartesian={'selectivity': [1, 10]}, where=lambda p: 1 / 0)"),
     "sweep.where raised ZeroDivisionError: division by zero at line 2"),
])

IDS = [f"{i:03d} {cli} {' '.join(a.replace(EXPERIMENT, 'selectivity.py') for a in argv)[:50]!r}"
       + (f" {files['E.py'].splitlines()[-1][30:80]!r}" if "E.py" in files else "")
       for i, (cli, argv, files, _) in enumerate(ROWS)]

# rows that still fail: the reason is what happens today; fixing one removes it from here
XFAIL: dict[int, str] = {
    152: 'reaches the hosts: a start needs no tarball once installed, so install checks it',
}


# ---------------------------------------------------------------- the harness
@pytest.fixture(scope="module")
def good_parquet(tmp_path_factory) -> bytes:
    import data_deploy
    return data_deploy.generate(200, seed=1, out=tmp_path_factory.mktemp("gen"))[0].read_bytes()


@pytest.fixture(scope="module")
def run_template(tmp_path_factory) -> dict[str, bytes]:
    """The files of a fresh run directory of the selectivity experiment (nothing run)."""
    from sae.planning.planner import plan as make_plan
    from sae.planning.loader import load_experiment
    from sae.results.run.ledger import RunLedger
    from sae.running import runner
    experiment = load_experiment(EXPERIMENT).with_profile("tiny")
    p = make_plan(experiment, profile="tiny")
    root = tmp_path_factory.mktemp("run")
    (root / "plan.yaml").write_text(yaml.safe_dump(p.to_dict(), sort_keys=False))
    RunLedger.create(root / "ledger.json", p, {})
    (root / "spec.yaml").write_text(yaml.safe_dump({
        "version": 1, "file": EXPERIMENT, "file_sha256": runner._file_hash(Path(EXPERIMENT)), "profile": "tiny",
        "options": {"reservation": "RES"}, "experiment": runner._spec_dict(experiment)}, sort_keys=False))
    return {f.name: f.read_bytes() for f in root.iterdir()}


@pytest.fixture
def guarded(monkeypatch):
    """No row reaches a host: opening a Cluster or reserving raises."""
    def refuse(*args, **kwargs):
        raise OperationalError("[hostile-input guard] reached a host (or a provider) before refusing the input")
    monkeypatch.setattr(Cluster, "__init__", refuse)
    for name in providers.known():
        providers.get(name)   # imports each provider class, so the loop below patches every one
    for cls in Provider.__subclasses__():
        monkeypatch.setattr(cls, "reserve", refuse)


def _make(root: Path, files: dict, good: bytes, run: dict) -> None:
    for name, text in {**COMMON, **files}.items():
        if name.startswith(RUN + "/") and not (root / RUN).exists():
            (root / RUN).mkdir()
            for f, data in run.items():
                (root / RUN / f).write_bytes(data)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (root / "DIR").mkdir()
    (root / "SRC").mkdir()
    (root / "SRC" / "part-00000.parquet").write_bytes(good)
    (root / "GOOD.parquet").write_bytes(good)
    os.mkfifo(root / "FIFO")


def _address_space() -> int:
    """This process's virtual memory size in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


class Hung(Exception):
    pass


def _alarm(signum, frame):
    raise Hung(f"no answer within {TIMEOUT} s")


@pytest.mark.parametrize("index", range(len(ROWS)), ids=IDS)
def test_a_hostile_value_is_refused_at_load(tmp_path, monkeypatch, guarded, good_parquet, run_template, request, index):
    if index in XFAIL:
        request.applymarker(pytest.mark.xfail(strict=True, reason=XFAIL[index]))
    cli, argv, files, fragment = ROWS[index]
    work = tmp_path / "work"
    work.mkdir()
    _make(work, files, good_parquet, run_template)
    monkeypatch.chdir(work)
    for var, sub in (("HOME", "home"), ("SAE_HOME", "home/.sae"), ("SAE_LOCAL_STATE", "local-state")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.delenv("SAE_RESERVATION", raising=False)
    outside_before = {m: m.exists() for m in MARKS}
    before = _state(tmp_path)
    previous = signal.signal(signal.SIGALRM, _alarm)
    limits = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + MEMORY, limits[1]))
    signal.alarm(TIMEOUT)
    try:
        r = CliRunner().invoke(CLIS[cli], argv)
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, limits)
        signal.signal(signal.SIGALRM, previous)
    assert not isinstance(r.exception, Hung), f"hung: {r.exception}"
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert "Traceback" not in r.output and "unexpected" not in r.output, r.output
    assert r.exit_code == 2, r.output
    assert lines and lines[-1].startswith("error: ") and len([x for x in lines if x.startswith("error: ")]) == 1, \
        r.output
    assert fragment in lines[-1], lines[-1]
    assert _state(tmp_path) == before
    assert {m: m.exists() for m in MARKS} == outside_before


def test_a_size_written_with_a_space_reads_as_the_same_size_everywhere(tmp_path, monkeypatch):
    """'4 GiB' is a size wherever sae reads one (metareserve.parse_size): the same bytes as
    '4GiB', recorded in canonical form, and the same sweep point; Spark's memory options, which
    take the JVM's '4g', refuse it saying so (rows above)."""
    from metareserve import Capacities
    from rados_deploy import CephOptions
    assert CephOptions(osd_size="4 GiB").osd_size == CephOptions(osd_size="4GiB").osd_size == 4 << 30
    assert Capacities.parse(["node1"], memory=["node1=4 GiB"]).to_dict() == {"node1": {"memory": "4GiB"}}
    monkeypatch.setenv("SAE_HOME", str(tmp_path))
    plans = [CliRunner().invoke(CLIS["sae"], ["plan", EXPERIMENT, "--json", "--set", f"data.object_size={size}"])
             for size in ("8 MiB", "8MiB")]
    assert [r.exit_code for r in plans] == [0, 0], plans[0].output
    spaced, plain = (json.loads(r.output)["points"] for r in plans)
    assert [p["id"] for p in spaced] == [p["id"] for p in plain]
    assert {p["params"]["data"]["object_size"] for p in spaced} == {8 << 20}


def test_one_machine_twice_in_a_hosts_file_is_refused_by_sae_plan(tmp_path, monkeypatch):
    """``sae plan --hosts`` reads the hosts file as ``sae run --hosts`` does (no host is reached)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    (tmp_path / "H").write_text(HOSTS_TWICE["H"])
    r = CliRunner().invoke(CLIS["sae"], ["plan", EXPERIMENT, "--hosts", "H"])
    assert r.exit_code == 2 and r.output.startswith("error: ") and len(r.output.splitlines()) == 1, r.output
    assert "/H: hosts[0] (a) and hosts[2] (c) are both 10.0.0.1:22" in r.output


def test_yaml_aliases_read_within_bounds_and_a_bomb_or_a_loop_is_refused_before_it_is_built():
    from metareserve.model import AliasExpansion, load_yaml
    assert load_yaml("a: &x [1, 2]\nb: *x\nc: *x\n") == {"a": [1, 2], "b": [1, 2], "c": [1, 2]}
    for text, what in ((BOMB, "expand 28 nodes into"), (f"x: {FLOW_BOMB}", "at most 100000 more"),
                       ("a: &x [1, *x]", "loop")):
        with pytest.raises(AliasExpansion, match=what):
            load_yaml(text)
