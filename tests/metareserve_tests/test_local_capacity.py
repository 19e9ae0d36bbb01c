"""Host and link capacities on real local hosts: enforced by the kernel (cgroups, tc), measured
by calibration, changed in place, and gone with the release."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

import metareserve
from metareserve import Capacities, Cluster, node_agent
from metareserve.capacity import online_cpus
from metareserve.providers.local_shape import cgroup_dirs

pytestmark = pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two cores")


def _tbf_rate(dev: str, netns: str | None = None) -> int | None:
    argv = ["tc", *(["-n", netns] if netns else []), "-j", "qdisc", "show", "dev", dev]
    out = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout or "[]")
    return next((q["options"]["rate"] * 8 for q in out if q.get("kind") == "tbf"), None)


def _cpu_seconds(res, node: str) -> float:
    return int(Path(res.cpu_accounting.usage_files[node]).read_text()) / 1e9


def test_declared_capacities_are_enforced_measured_and_released(own_local_cluster):
    with own_local_cluster("cap", nodes=2) as (root, res):
        caps = Capacities.parse(["node1", "node2"], cpus=["node1=1", "node2=0"], cpu_quota=["node2=0.5"],
                                memory=["node2=256MiB"], link_rate="200mbit")
        assert metareserve.shape(res, caps) is True
        assert metareserve.shape(res, caps) is False            # idempotent: nothing left to change
        st = res.provider_state
        assert metareserve.load_reservation(res.path).capacities == caps   # recorded in the file
        for node in ("node1", "node2"):
            info = st["nodes"][node]
            assert _tbf_rate(info["veth"]) == _tbf_rate("eth0", info["netns"]) == 200_000_000

        # the link: both directions within 15 % of the declared rate
        links = [("node1", "node2"), ("node2", "node1")]
        cal = metareserve.calibrate(res, links=links, link_seconds=2.0)
        for link in cal.links:
            assert abs(link.measured - 200e6) <= 0.15 * 200e6, cal.text()
        # asked again under the same capacities: the last calibration, said to be reused
        again = metareserve.calibrate(res, links=links, link_seconds=2.0, reuse_within=600)
        assert again.reused and not cal.reused and (again.at, again.cores, again.links) == (cal.at, cal.cores, cal.links)
        assert not metareserve.calibrate(res, links=links[:1], link_seconds=2.0, reuse_within=600).reused

        # cores: a busy loop of two processes gets about one core on node1, half a core on node2
        with Cluster(res) as cluster:
            for node, limit in (("node1", 1.0), ("node2", 0.5)):
                before, start = _cpu_seconds(res, node), time.monotonic()
                probe = cluster.call(node_agent, "cpu_probe", 2.0, 2, nodes=[node], stage="burn")[node]
                used = (_cpu_seconds(res, node) - before) / (time.monotonic() - start)
                assert probe["workers"] == 2
                assert used <= limit * 1.1 and probe["cores"] <= limit * 1.1, (node, used, probe)
                assert probe["cores"] >= limit * 0.8, (node, probe)
            # memory: a process asking for more than the host's 256 MiB is killed by the kernel
            r = cluster.run(["python3", "-c", "b = bytearray(512 << 20); b[::4096] = b'x' * (len(b) // 4096)"],
                            nodes=["node2"], stage="oom", check=False)["node2"]
            assert r["rc"] in (-9, 137), r
        assert {c.name: c.declared for c in cal.cores} == {"node1": 1.0, "node2": 0.5}
        assert not cal.warnings(), cal.text()

        # in place: unlimited again (and a calibration under other capacities is measured anew)
        assert metareserve.shape(res, Capacities()) is True
        assert not metareserve.calibrate(res, links=links[:1], link_seconds=2.0, reuse_within=600).reused
        assert _tbf_rate(st["nodes"]["node1"]["veth"]) is None
        again = metareserve.reserve(provider="local", name=res.name, nodes=2, out=res.path, capacities=caps)
        assert again.capacities == caps and _tbf_rate(st["nodes"]["node2"]["veth"]) == 200_000_000
    # released: no namespace, interface (with its qdiscs) or cgroup of any controller is left
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    for info in st["nodes"].values():
        assert info["netns"] not in netns and f" {info['veth']}@" not in links and info["veth"] not in qdiscs
        dirs = cgroup_dirs(info["cgroup"])
        assert {d.parts[-2] for d in dirs} >= {"cpu", "cpuacct", "cpuset", "memory"}
        assert not any(d.exists() for d in dirs)
