"""Where a local host's cgroups live, read from real mount tables of the three kinds of machine
(cgroup v1, a stock cgroup v2 machine, a container whose cgroups are read-only), and the v2
interface files written as the kernel's cgroup v2 documents them, on a tree laid out as the
kernel lays it out (this machine's own cgroup2 mount hands down no controller to write)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from metareserve.capacity import Capacities
from metareserve.errors import UsageError
from metareserve.providers import cgroups

V1_HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
STOCK_V2 = """\
24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
"""
CONTAINER = """\
712 703 0:29 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate
"""
COMBINED_V1 = """\
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
"""


def _mountinfo(tmp_path: Path, text: str, root: Path | None = None) -> Path:
    if root is not None:
        text = text.replace("/sys/fs/cgroup", str(root))
    f = tmp_path / "mountinfo"
    f.write_text(text)
    return f


def _v1_tree(root: Path, controllers=("cpu", "cpuacct", "cpuset", "memory")) -> None:
    for c in controllers:
        (root / c).mkdir(parents=True)


def test_v1_machine_keeps_one_directory_per_controller(tmp_path):
    root = tmp_path / "cg"
    _v1_tree(root)
    (root / "unified").mkdir()
    h = cgroups.detect(mountinfo=_mountinfo(tmp_path, V1_HYBRID, root))
    assert h.mode == "v1" and h.v2 is None
    assert [d.parent.name for d in h.dirs("sae-x-node1")] == ["cpu", "cpuset", "memory", "cpuacct"]
    assert h.usage_file("sae-x-node1") == str(root / "cpuacct" / "sae-x-node1" / "cpuacct.usage")


def test_combined_v1_mount_counts_for_both_controllers(tmp_path):
    root = tmp_path / "cg"
    for d in ("cpu,cpuacct", "cpuset", "memory"):
        (root / d).mkdir(parents=True)
    h = cgroups.detect(mountinfo=_mountinfo(tmp_path, COMBINED_V1, root))
    assert h.mode == "v1" and h.v1["cpu"] == h.v1["cpuacct"] == root / "cpu,cpuacct"


def test_stock_v2_machine_uses_the_one_hierarchy(tmp_path):
    root = tmp_path / "cg"
    root.mkdir()
    h = cgroups.detect(mountinfo=_mountinfo(tmp_path, STOCK_V2, root))
    assert h.mode == "v2" and h.v2 == root and h.dirs("c") == [root / "c"]
    assert h.usage_file("c") == str(root / "c" / "cpu.stat")


def test_the_hierarchy_asked_for_must_be_there(tmp_path, monkeypatch):
    root = tmp_path / "cg"
    root.mkdir()
    info = _mountinfo(tmp_path, STOCK_V2, root)
    with pytest.raises(UsageError, match="SAE_CGROUP=v1: this machine has no writable v1"):
        cgroups.detect("v1", mountinfo=info)
    monkeypatch.setenv(cgroups.ENV, "v3")
    with pytest.raises(UsageError, match=r"SAE_CGROUP='v3' is not one of v1, v2, none"):
        cgroups.detect(mountinfo=info)
    monkeypatch.setenv(cgroups.ENV, "none")
    h = cgroups.detect(mountinfo=info)
    assert (h.mode, h.dirs("c"), h.usage_file("c"), h.why) == ("none", [], None, "SAE_CGROUP=none")


def test_read_only_cgroups_leave_cores_to_cpu_affinity(tmp_path):
    root = tmp_path / "cg"
    root.mkdir()
    h = cgroups.detect(mountinfo=_mountinfo(tmp_path, CONTAINER, root))
    assert h.mode == "none" and "read-only" in h.why
    how = cgroups.plan(h, _cap(cpus="0", cpu_quota="0.5", memory="256MiB"))
    assert how.by["cores"] == cgroups.AFFINITY
    assert set(how.missing) == {"quota", "memory"} and "read-only" in how.missing["quota"]


def test_a_controller_the_root_will_not_hand_down_is_said_so(tmp_path):
    h = _v2_tree(tmp_path / "cg", "cpuset cpu memory")
    control = tmp_path / "cg" / "cgroup.subtree_control"
    control.unlink()
    control.mkdir()      # every write fails, as the kernel's EBUSY does (root ignores mode bits)
    how = cgroups.plan(h, _cap(cpus="0", cpu_quota="0.5"))
    assert how.by["cores"] == cgroups.AFFINITY
    assert "subtree_control refuses +cpu" in how.missing["quota"]


def _cap(**fields):
    return Capacities.parse(["node1"], **{k: [f"node1={v}"] for k, v in fields.items()}).of("node1")


def _v2_tree(root: Path, controllers: str) -> cgroups.Hierarchy:
    """A cgroup2 root as the kernel lays it out: the controllers it has, none handed down yet."""
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("\n")
    (root / "cgroup.procs").write_text("")
    return cgroups.Hierarchy("v2", v2=root)


def test_v2_capacities_go_to_cpuset_cpu_max_and_memory_max(tmp_path):
    h = _v2_tree(tmp_path / "cg", "cpuset cpu io memory pids")
    cap = _cap(cpus="1", cpu_quota="0.5", memory="256MiB")
    changed, how = cgroups.apply(h, "sae-x-node2", cap)
    d = tmp_path / "cg" / "sae-x-node2"
    assert changed and (d / "cpuset.cpus").read_text() == "1"
    assert (d / "cpu.max").read_text() == "50000 100000"
    assert (d / "memory.max").read_text() == str(256 << 20)
    assert how.by == {"cores": "cgroup v2 cpuset.cpus", "quota": "cgroup v2 cpu.max",
                      "memory": "cgroup v2 memory.max"} and not how.missing
    assert cgroups.apply(h, "sae-x-node2", cap)[0] is False          # idempotent
    changed, how = cgroups.apply(h, "sae-x-node2", _cap())            # back to unlimited
    assert changed and how.by == {}
    assert [(d / f).read_text().strip() for f in ("cpuset.cpus", "cpu.max", "memory.max")] == \
        ["", "max 100000", "max"]


def test_v2_without_controllers_enforces_cores_by_affinity_and_says_what_it_cannot(tmp_path):
    h = _v2_tree(tmp_path / "cg", "io pids")
    how = cgroups.plan(h, _cap(cpus="0", cpu_quota="0.5", memory="256MiB"))
    assert how.by["cores"] == cgroups.AFFINITY and cgroups.cores_by_affinity(h)
    assert "has no cpu controller: it is bound to a v1 hierarchy" in how.missing["quota"]
    assert "has no memory controller" in how.missing["memory"]
    assert "memory not enforced" in how.text()


def test_affinity_reaches_every_thread_of_a_live_process():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two cores")
    p = subprocess.Popen(["python3", "-c", "import threading, time; "
                          "[threading.Thread(target=time.sleep, args=(30,)).start() for _ in range(3)]; "
                          "print('up', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        assert cgroups.set_affinity([p.pid], [cpus[0]]) is True
        tids = [int(t) for t in os.listdir(f"/proc/{p.pid}/task")]
        assert len(tids) == 4 and all(os.sched_getaffinity(t) == {cpus[0]} for t in tids)
        assert cgroups.set_affinity([p.pid], [cpus[0]]) is False      # idempotent
        assert cgroups.set_affinity([p.pid], None) is True            # back to every core
        assert os.sched_getaffinity(p.pid) == set(cpus)
    finally:
        p.kill()
        p.wait()


def test_cpu_seconds_reads_either_counter(tmp_path):
    (tmp_path / "cpuacct.usage").write_text("2500000000\n")
    (tmp_path / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert cgroups.cpu_seconds(str(tmp_path / "cpuacct.usage")) == 2.5
    assert cgroups.cpu_seconds(str(tmp_path / "cpu.stat")) == 1.5
