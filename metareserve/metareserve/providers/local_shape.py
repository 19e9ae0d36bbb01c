"""Enforcing a local host's declared capacities (:class:`~metareserve.capacity.HostCapacity`):
its cgroups (cpuset, CFS quota, memory limit; cgroup v1) and ``tc tbf`` on both ends of its link
(the bridge-side veth shapes what the host receives, its ``eth0`` what it sends). Each function
reads what is in force first and changes only what differs, returning whether it changed anything.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..capacity import HostCapacity, format_rate
from ..errors import OperationalError, UsageError

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("cpu", "cpuset", "memory", "cpuacct")   # cpuacct last: it holds the CPU usage
CFS_PERIOD_US = 100_000
UNLIMITED_MEMORY = 1 << 62     # v1 reports "no limit" as a page-rounded 2^63 - 1
TBF_LATENCY = "50ms"           # queue a shaped link holds before it drops


def cgroup_v1() -> bool:
    return (CGROUP_ROOT / "cpuacct").is_dir()


def cgroup_dirs(cgroup: str) -> list[Path]:
    """This machine's cgroup directories a host's processes join (v1: one per controller, the
    CPU usage counter's last; v2: one directory)."""
    if cgroup_v1():
        return [CGROUP_ROOT / c / cgroup for c in V1_CONTROLLERS if (CGROUP_ROOT / c).is_dir()]
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT / cgroup]
    return []


def cpu_usage_file(cgroup: str) -> str | None:
    """The file holding the cgroup's CPU time: v1 ``cpuacct.usage`` (ns) or v2 ``cpu.stat``."""
    if cgroup_v1():
        return str(CGROUP_ROOT / "cpuacct" / cgroup / "cpuacct.usage")
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return str(CGROUP_ROOT / cgroup / "cpu.stat")
    return None


def _write(path: Path, value: str) -> bool:
    """Write ``value`` unless ``path`` holds it already; True if written."""
    if path.read_text().strip() == value:
        return False
    try:
        path.write_text(value)
    except OSError as e:
        raise OperationalError(f"[local shape] cannot write {value!r} to {path}: {e.strerror}") from None
    return True


def apply_cgroups(node: str, cgroup: str, cap: HostCapacity) -> bool:
    """Create the host's cgroups, put its cores, quota and memory limit in force (unlimited where
    ``cap`` says None) and move every process of the host into each of them."""
    if not cgroup_v1():
        if cap.to_dict():
            raise UsageError(f"[{node} local shape] host capacities need cgroup v1 controllers "
                             f"(/sys/fs/cgroup/cpuset, memory); this machine has cgroup v2 only")
        dirs = cgroup_dirs(cgroup)
        created = [d for d in dirs if not d.exists()]
        for d in created:
            d.mkdir(parents=True)
        return bool(created)
    changed = False
    for d in cgroup_dirs(cgroup):
        if not d.exists():
            d.mkdir(parents=True)
            changed = True
    cpuset = CGROUP_ROOT / "cpuset" / cgroup
    changed |= _write(cpuset / "cpuset.mems", (cpuset.parent / "cpuset.mems").read_text().strip())
    changed |= _write(cpuset / "cpuset.cpus", str(cap.cpus or "") or (cpuset.parent / "cpuset.cpus").read_text().strip())
    quota = str(int(cap.cpu_quota * CFS_PERIOD_US)) if cap.cpu_quota else "-1"
    changed |= _write(CGROUP_ROOT / "cpu" / cgroup / "cpu.cfs_quota_us", quota)
    limit = CGROUP_ROOT / "memory" / cgroup / "memory.limit_in_bytes"
    current = int(limit.read_text())
    if (cap.memory or UNLIMITED_MEMORY) != (current if current < UNLIMITED_MEMORY else UNLIMITED_MEMORY):
        _write(limit, str(int(cap.memory or -1)))
        changed = True
    return _join_all(cgroup) or changed


def _join_all(cgroup: str) -> bool:
    """Move the host's processes (members of its CPU-accounting cgroup, which sshd joined when it
    started) into its other cgroups; True if any moved."""
    dirs = cgroup_dirs(cgroup)
    members = set((dirs[-1] / "cgroup.procs").read_text().split())
    moved = False
    for d in dirs[:-1]:
        for pid in members - set((d / "cgroup.procs").read_text().split()):
            try:
                (d / "cgroup.procs").write_text(pid)
                moved = True
            except ProcessLookupError:
                pass     # exited meanwhile
    return moved


def _tc(*argv: str, netns: str | None = None) -> subprocess.CompletedProcess:
    prefix = ["tc", "-n", netns] if netns else ["tc"]
    return subprocess.run([*prefix, *argv], capture_output=True, text=True)


def _root_rate(dev: str, netns: str | None) -> int | None:
    """The rate (bits/s) of the tbf at the root of ``dev``; None if there is none."""
    r = _tc("-j", "qdisc", "show", "dev", dev, netns=netns)
    try:
        qdiscs = json.loads(r.stdout or "[]")
    except ValueError:
        return None
    return next((q["options"]["rate"] * 8 for q in qdiscs if q.get("root") and q.get("kind") == "tbf"), None)


def burst_bytes(rate: int) -> int:
    """A token bucket of 10 ms at ``rate``, and never below 64 KiB (a veth's offloaded segments)."""
    return max(rate // 8 // 100, 64 << 10)


def apply_link(node: str, netns: str, veth: str, rate: int | None) -> bool:
    """Shape both directions of the host's link to ``rate`` bits/s (None: remove the shaping)."""
    changed = False
    for dev, ns in ((veth, None), ("eth0", netns)):
        current = _root_rate(dev, ns)
        if current is None and rate is None or None not in (current, rate) and abs(current - rate) < 64:
            continue     # the kernel keeps rates in bytes/s: a rate not divisible by 8 reads back rounded
        if rate is None:
            r = _tc("qdisc", "del", "dev", dev, "root", netns=ns)
        else:
            r = _tc("qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{int(rate)}bit",
                    "burst", str(burst_bytes(rate)), "latency", TBF_LATENCY, netns=ns)
        if r.returncode != 0:
            raise OperationalError(f"[{node} local shape] tc on {dev} ({format_rate(rate)}) failed: "
                                   f"{r.stderr.strip()}")
        changed = True
    return changed
