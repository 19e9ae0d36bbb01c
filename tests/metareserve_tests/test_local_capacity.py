"""Host and link capacities on real local hosts: enforced by the kernel (cgroups, tc), measured
by calibration, changed in place, and gone with the release."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

import metareserve
from metareserve import Capacities, Cluster, node_agent
from metareserve.capacity import online_cpus
from metareserve.providers import cgroups
from metareserve.providers.local import agents_cgroup, hierarchy

pytestmark = pytest.mark.skipif(len(online_cpus()) < 2, reason="needs two cores")


def _tbf_rate(dev: str, netns: str | None = None) -> int | None:
    argv = ["tc", *(["-n", netns] if netns else []), "-j", "qdisc", "show", "dev", dev]
    out = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout or "[]")
    return next((q["options"]["rate"] * 8 for q in out if q.get("kind") == "tbf"), None)


def _cpu_seconds(res, node: str) -> float:
    return cgroups.cpu_seconds(res.cpu_accounting.usage_files[node])


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
            _an_exempted_agent_leaves_its_hosts_quota_and_cpu_time(res, cluster)
        assert {c.name: c.declared for c in cal.cores} == {"node1": 1.0, "node2": 0.5}
        assert not cal.warnings(), cal.text()

        # in place: unlimited again (and a calibration under other capacities is measured anew)
        assert metareserve.shape(res, Capacities()) is True
        assert not metareserve.calibrate(res, links=links[:1], link_seconds=2.0, reuse_within=600).reused
        assert _tbf_rate(st["nodes"]["node1"]["veth"]) is None
        again = metareserve.reserve(provider="local", name=res.name, nodes=2, out=res.path, capacities=caps)
        assert again.capacities == caps and _tbf_rate(st["nodes"]["node2"]["veth"]) == 200_000_000
    # released: no namespace, interface (with its qdiscs) or cgroup of any controller is left,
    # the monitoring agents' neither
    assert not any(d.exists() for d in hierarchy(st).dirs(agents_cgroup(res.name)))
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    for info in st["nodes"].values():
        assert info["netns"] not in netns and f" {info['veth']}@" not in links and info["veth"] not in qdiscs
        dirs = hierarchy(st).dirs(info["cgroup"])
        if hierarchy(st).mode == "v1":
            assert {d.parts[-2] for d in dirs} >= {"cpu", "cpuacct", "cpuset", "memory"}
        assert not any(d.exists() for d in dirs)


def _an_exempted_agent_leaves_its_hosts_quota_and_cpu_time(res, cluster):
    """A busy process on node2 (quota half a core), exempted as a monitoring agent is, leaves every
    cgroup of node2's for the cluster's agents cgroup: it runs past node2's quota, and node2's CPU
    time no longer grows with it. Exempting it again moves nothing; a pid not of the cluster's hosts
    is refused, nothing moved."""
    h, name = hierarchy(res.provider_state), res.name
    pidfile = f"{res.node_dir('node2', 'agent-test')}/busy.pid"
    busy = ["python3", "-c", "while True: pass"]
    pid = cluster.call(node_agent, "start_daemon", busy, pidfile, pidfile + ".log", nodes=["node2"],
                       stage="agent")["node2"]["pid"]
    try:
        assert pid in cgroups.members_of(h, res.provider_state["nodes"]["node2"]["cgroup"])
        with pytest.raises(metareserve.errors.UsageError, match=rf"pid\(s\) {os.getpid()} are not processes"):
            res.cpu_accounting.exempt([pid, os.getpid()])
        assert pid not in cgroups.members_of(h, agents_cgroup(name))      # nothing moved
        assert res.cpu_accounting.exempt([pid]) == 1
        assert res.cpu_accounting.exempt([pid]) == 0                      # idempotent
        for d in h.dirs(res.provider_state["nodes"]["node2"]["cgroup"]):
            assert str(pid) not in (d / "cgroup.procs").read_text().split(), d
        assert all(str(pid) in (d / "cgroup.procs").read_text().split() for d in h.dirs(agents_cgroup(name)))
        busy_cpu = lambda: node_agent.group_cpu_seconds(pid)   # noqa: E731 (a daemon leads its own group)
        host_before, busy_before, start = _cpu_seconds(res, "node2"), busy_cpu(), time.monotonic()
        time.sleep(3)
        elapsed = time.monotonic() - start
        host_rate = (_cpu_seconds(res, "node2") - host_before) / elapsed
        busy_rate = (busy_cpu() - busy_before) / elapsed
        assert busy_rate > 0.6 and host_rate < 0.1, (busy_rate, host_rate)   # node2's quota: 0.5
    finally:
        os.kill(pid, 9)


@pytest.mark.parametrize("mode", ["v2", "none"])
def test_cores_without_a_cpuset_controller_go_by_affinity_and_the_calibration_says_what_is_not_enforced(
        own_local_cluster, monkeypatch, mode):
    """The machines a stock Debian or Ubuntu, or a container, give: a cgroup2 hierarchy that may
    hand down no controller (this machine's keeps cpu, cpuset and memory in v1), or no writable
    cgroup at all. Cores then go by CPU affinity, for real; a quota nothing can enforce is said; a
    monitoring agent exempted from its host gets every core back."""
    try:
        h = cgroups.detect(mode)
    except metareserve.errors.UsageError as e:
        pytest.skip(str(e))
    monkeypatch.setenv(cgroups.ENV, mode)
    with own_local_cluster(f"aff{mode}", nodes=2) as (root, res):
        assert res.provider_state["cgroup_mode"] == mode
        caps = Capacities.parse(["node1", "node2"], cpus=["node1=0", "node2=1"], cpu_quota=["node2=0.5"])
        assert metareserve.shape(res, caps) is True
        assert metareserve.shape(res, caps) is False
        enforced = res.provider_state["enforced"]
        affinity = cgroups.cores_by_affinity(h)
        assert enforced["node1"] == {"cores": cgroups.AFFINITY if affinity else "cgroup v2 cpuset.cpus"}
        quota_enforced = "cpu" in h.v2_controllers()
        assert enforced["node2"]["quota"].startswith(cgroups.NOT_ENFORCED) != quota_enforced
        with Cluster(res) as cluster:
            got = cluster.run(["python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                              stage="affinity")
            if affinity:
                assert {n: r["stdout"].strip() for n, r in got.items()} == {"node1": "[0]", "node2": "[1]"}
            before = _cpu_seconds(res, "node1") if mode == "v2" else None
            start = time.monotonic()
            probe = cluster.call(node_agent, "cpu_probe", 2.0, 2, nodes=["node1"], stage="burn")["node1"]
            # two busy workers get at most the one core (of the machine's two); the lower bounds
            # only say the probe ran, whatever else loads the machine
            assert 0.2 < probe["cores"] <= 1.1, probe
            if before is not None:     # the v2 hierarchy counts the host's CPU time
                used = (_cpu_seconds(res, "node1") - before) / (time.monotonic() - start)
                assert 0.2 < used <= 1.1, used
        cal = metareserve.calibrate(res, links=[])
        assert 0.2 < cal.core("node1").measured <= 1.1, cal.text()
        node2 = cal.core("node2")
        assert node2.declared == 0.5
        if not quota_enforced:     # only its one core holds it back, and the calibration says so
            assert node2.measured <= 1.1, cal.text()
            assert any("[node2 calibrate] declared quota not enforced" in w for w in cal.warnings()), cal.warnings()
            assert re.search(r"enforced node2 +cores by .*, quota not enforced", cal.text()), cal.text()
        # in place: node1 moves to the other core, its live processes with it
        sshd = int(Path(res.node_dir("node1", "sshd"), "sshd.pid").read_text())
        metareserve.shape(res, Capacities.parse(["node1", "node2"], cpus=["node1=1", "node2=1"]))
        if affinity:
            assert os.sched_getaffinity(sshd) == {1}
        # a monitoring agent exempted gets every core back (on v2, in the cluster's agents cgroup),
        # and a reshape of its host leaves it there (without cgroups it would pin it again)
        with Cluster(res) as cluster:
            pidfile = f"{res.node_dir('node1', 'agent-test')}/sleep.pid"
            pid = cluster.call(node_agent, "start_daemon", ["sleep", "600"], pidfile, pidfile + ".log",
                               nodes=["node1"], stage="agent")["node1"]["pid"]
        try:
            assert res.cpu_accounting.exempt([pid]) == 1 and res.cpu_accounting.exempt([pid]) == 0
            assert os.sched_getaffinity(pid) == set(online_cpus())
            if mode == "v2":
                assert pid in cgroups.members_of(h, agents_cgroup(res.name))
                metareserve.shape(res, Capacities.parse(["node1", "node2"], cpus=["node1=0", "node2=1"]))
                assert os.sched_getaffinity(pid) == set(online_cpus())
        finally:
            os.kill(pid, 9)
