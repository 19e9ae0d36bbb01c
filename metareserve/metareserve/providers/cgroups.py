"""A local host's cgroups on whatever hierarchy this machine has, and how each declared capacity
is put in force there.

Three machines are met in practice (:func:`detect` reads ``/proc/self/mountinfo`` once):

* **cgroup v1** (the ``cpu``, ``cpuacct``, ``cpuset`` and ``memory`` controllers each mounted
  under ``/sys/fs/cgroup``): one directory per controller; cores by ``cpuset.cpus``, a quota by
  ``cpu.cfs_quota_us``, memory by ``memory.limit_in_bytes``, CPU time from ``cpuacct.usage``.
* **cgroup v2** (a stock Debian 12 or Ubuntu 22.04+: one ``cgroup2`` mount): one directory under
  the hierarchy's root, whose ``cgroup.subtree_control`` gets ``+cpuset +cpu +memory``; cores by
  ``cpuset.cpus``, a quota by ``cpu.max``, memory by ``memory.max``, CPU time from ``cpu.stat``.
  A controller the root cannot hand down (a container's, or one held by a v1 hierarchy) is
  left out: cores then go by CPU affinity, and a quota or a memory limit is not enforced.
* **no writable hierarchy**: cores by CPU affinity only (set on the host's first process, which
  every later one inherits, and on every thread of its live processes), nothing else enforced,
  and no per-host CPU time.

``SAE_CGROUP=v1|v2|none`` picks one where several would do (default: v1 where its four
controllers are mounted, else v2 where a ``cgroup2`` mount is writable, else none).
:class:`Enforcement` records, per capacity, what put it in force or why nothing did.
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from ..capacity import HostCapacity, online_cpus
from ..errors import OperationalError, UsageError

MODES = ("v1", "v2", "none")
ENV = "SAE_CGROUP"
MOUNTINFO = Path("/proc/self/mountinfo")
V1_CONTROLLERS = ("cpu", "cpuset", "memory", "cpuacct")   # cpuacct last: it holds the CPU usage
V2_CONTROLLERS = ("cpuset", "cpu", "memory")
CFS_PERIOD_US = 100_000
UNLIMITED_MEMORY = 1 << 62     # v1 reports "no limit" as a page-rounded 2^63 - 1
AFFINITY = "CPU affinity"
NOT_ENFORCED = "not enforced"


@dataclasses.dataclass(frozen=True)
class Hierarchy:
    """Where this machine's cgroups are: ``mode`` (one of :data:`MODES`), the v1 mount point of
    each controller (``v1``) and the ``cgroup2`` mount point (``v2``), and ``why`` the mode was
    chosen (for messages)."""

    mode: str
    v1: dict = dataclasses.field(default_factory=dict)
    v2: Path | None = None
    why: str = ""

    # -- where a host's cgroup lives ------------------------------------------------------------
    def dirs(self, cgroup: str) -> list[Path]:
        """The directories a host's processes join (v1: one per controller, the CPU usage
        counter's last; v2: one; none: none)."""
        if self.mode == "v1":
            return [self.v1[c] / cgroup for c in V1_CONTROLLERS if c in self.v1]
        if self.mode == "v2":
            return [self.v2 / cgroup]
        return []

    def usage_file(self, cgroup: str) -> str | None:
        """The file holding the host's CPU time (v1 ``cpuacct.usage`` in ns, v2 ``cpu.stat``)."""
        if self.mode == "v1" and "cpuacct" in self.v1:
            return str(self.v1["cpuacct"] / cgroup / "cpuacct.usage")
        if self.mode == "v2":
            return str(self.v2 / cgroup / "cpu.stat")
        return None

    def v2_controllers(self) -> set[str]:
        """The v2 controllers the hierarchy's root hands down to our cgroups (enabling the ones it
        has but does not hand down yet; a controller it refuses is left out)."""
        if self.mode != "v2":
            return set()
        have = set(_read(self.v2 / "cgroup.controllers").split())
        control = self.v2 / "cgroup.subtree_control"
        on = set(_read(control).split())
        for c in V2_CONTROLLERS:
            if c in have and c not in on:
                try:
                    control.write_text(f"+{c}")
                    on.add(c)
                except OSError:
                    pass      # e.g. EBUSY in a container whose root cgroup holds processes
        return on & set(V2_CONTROLLERS)

    def describe(self) -> str:
        where = {"v1": "cgroup v1 (" + ", ".join(f"{c} at {p}" for c, p in self.v1.items()) + ")",
                 "v2": f"cgroup v2 at {self.v2}", "none": "no writable cgroup hierarchy"}[self.mode]
        return f"{where}{f'; {self.why}' if self.why else ''}"


def detect(mode: str | None = None, mountinfo: Path = MOUNTINFO) -> Hierarchy:
    """This machine's hierarchy (``mode``, else ``$SAE_CGROUP``, else the best there is);
    UsageError when the mode asked for is not there."""
    asked = mode or os.environ.get(ENV) or None
    if asked is not None and asked not in MODES:
        raise UsageError(f"{ENV}={asked!r} is not one of {', '.join(MODES)}")
    v1, v2 = _mounts(mountinfo)
    v1_ok, v2_ok = all(c in v1 for c in V1_CONTROLLERS), v2 is not None
    if asked == "v1" and not v1_ok:
        raise UsageError(f"{ENV}=v1: this machine has no writable v1 hierarchy of {', '.join(V1_CONTROLLERS)}")
    if asked == "v2" and not v2_ok:
        raise UsageError(f"{ENV}=v2: this machine has no writable cgroup2 mount")
    if asked is None:
        asked = "v1" if v1_ok else "v2" if v2_ok else "none"
        why = "" if asked != "none" else ("no writable cgroup mount (read-only in a container?)"
                                          if _mounts_any(mountinfo) else "no cgroup file system is mounted")
    else:
        why = f"{ENV}={asked}"
    return Hierarchy(asked, v1 if asked == "v1" else {}, v2 if asked == "v2" else None, why)


def _mounts(mountinfo: Path) -> tuple[dict, Path | None]:
    """(v1 controller → mount point, the first cgroup2 mount point) of the writable cgroup mounts
    in ``mountinfo`` (a read-only mount, as containers have, is left out)."""
    v1, v2 = {}, None
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return v1, v2
    for line in lines:
        mount, sep, fs = line.partition(" - ")
        fields, (fstype, _, options) = mount.split(), (fs.split() + ["", "", ""])[:3]
        if not sep or len(fields) < 6 or "ro" in fields[5].split(",") or not fstype.startswith("cgroup"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        if not os.access(point, os.W_OK):
            continue
        if fstype == "cgroup2" and v2 is None:
            v2 = point
        elif fstype == "cgroup":
            for c in options.split(","):
                if c in V1_CONTROLLERS:
                    v1.setdefault(c, point)
    return v1, v2


def _mounts_any(mountinfo: Path) -> bool:
    try:
        return any(" - cgroup" in line for line in mountinfo.read_text().splitlines())
    except OSError:
        return False


@dataclasses.dataclass(frozen=True)
class Enforcement:
    """How a host's declared capacities are in force: per capacity (``cores``, ``quota``,
    ``memory``) what enforces it (``cgroup v2 cpuset.cpus``, ``CPU affinity``, ...), or
    ``not enforced: why``; a capacity the host does not declare is absent."""

    by: dict = dataclasses.field(default_factory=dict)

    @property
    def missing(self) -> dict:
        """The declared capacities nothing enforces, with why."""
        return {k: v for k, v in self.by.items() if v.startswith(NOT_ENFORCED)}

    def text(self) -> str:
        return ", ".join(f"{k} by {v}" if not v.startswith(NOT_ENFORCED) else f"{k} {v}"
                         for k, v in self.by.items())


def plan(h: Hierarchy, cap: HostCapacity) -> Enforcement:
    """What would enforce each capacity ``cap`` declares on hierarchy ``h``."""
    on = h.v2_controllers() if h.mode == "v2" else set()
    by = {}
    if cap.cpus:
        by["cores"] = ("cgroup v1 cpuset.cpus" if h.mode == "v1" else
                       "cgroup v2 cpuset.cpus" if "cpuset" in on else AFFINITY)
    if cap.cpu_quota:
        by["quota"] = ("cgroup v1 cpu.cfs_quota_us" if h.mode == "v1" else
                       "cgroup v2 cpu.max" if "cpu" in on else _unable(h, "cpu"))
    if cap.memory:
        by["memory"] = ("cgroup v1 memory.limit_in_bytes" if h.mode == "v1" else
                        "cgroup v2 memory.max" if "memory" in on else _unable(h, "memory"))
    return Enforcement(by)


def _unable(h: Hierarchy, controller: str) -> str:
    """Why nothing enforces what ``controller`` would, and what would fix it."""
    if h.mode == "none":
        return f"{NOT_ENFORCED} ({h.why or 'no cgroup hierarchy'}; run on a VM or a host where cgroups are writable)"
    if controller not in _read(h.v2 / "cgroup.controllers").split():
        return (f"{NOT_ENFORCED} (the cgroup v2 hierarchy at {h.v2} has no {controller} controller: it is bound "
                f"to a v1 hierarchy or not delegated here; boot with systemd.unified_cgroup_hierarchy=1, "
                f"or run on a VM)")
    return (f"{NOT_ENFORCED} ({h.v2}/cgroup.subtree_control refuses +{controller}: its root cgroup "
            f"holds processes, as in a container; run on a VM)")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _write(path: Path, value: str) -> bool:
    """Write ``value`` unless ``path`` holds it already; True if written."""
    if _read(path) == value.strip():
        return False
    try:
        path.write_text(value)
    except OSError as e:
        raise OperationalError(f"[local shape] cannot write {value!r} to {path}: {e.strerror}") from None
    return True


def apply(h: Hierarchy, cgroup: str, cap: HostCapacity, pids=()) -> tuple[bool, Enforcement]:
    """Create the host's cgroups, put what ``cap`` declares in force (unlimited where it says
    None) and bring the host's processes in: its cgroup members, plus ``pids`` (its namespace's
    processes, which the CPU affinity path needs where there is no cgroup). (changed, how each
    capacity is enforced)."""
    how = plan(h, cap)
    changed = False
    for d in h.dirs(cgroup):
        if not d.exists():
            d.mkdir(parents=True)
            changed = True
    if h.mode == "v1":
        changed |= _apply_v1(h, cgroup, cap)
    elif h.mode == "v2":
        changed |= _apply_v2(h, cgroup, cap)
    changed |= _join_all(h, cgroup)
    if cores_by_affinity(h):
        changed |= set_affinity(set(pids) | members_of(h, cgroup), cap.cpus.cpus if cap.cpus else None)
    return changed, how


def cores_by_affinity(h: Hierarchy) -> bool:
    """Whether a host's cores go by CPU affinity on ``h`` (no cpuset controller to hand them)."""
    return h.mode == "none" or h.mode == "v2" and "cpuset" not in h.v2_controllers()


def _apply_v1(h: Hierarchy, cgroup: str, cap: HostCapacity) -> bool:
    cpuset = h.v1["cpuset"] / cgroup
    changed = _write(cpuset / "cpuset.mems", _read(cpuset.parent / "cpuset.mems"))
    changed |= _write(cpuset / "cpuset.cpus", str(cap.cpus or "") or _read(cpuset.parent / "cpuset.cpus"))
    quota = str(int(cap.cpu_quota * CFS_PERIOD_US)) if cap.cpu_quota else "-1"
    changed |= _write(h.v1["cpu"] / cgroup / "cpu.cfs_quota_us", quota)
    limit = h.v1["memory"] / cgroup / "memory.limit_in_bytes"
    current = int(_read(limit) or UNLIMITED_MEMORY)
    if (cap.memory or UNLIMITED_MEMORY) != (current if current < UNLIMITED_MEMORY else UNLIMITED_MEMORY):
        _write(limit, str(int(cap.memory or -1)))
        changed = True
    return changed


def _apply_v2(h: Hierarchy, cgroup: str, cap: HostCapacity) -> bool:
    d, on, changed = h.v2 / cgroup, h.v2_controllers(), False
    if "cpuset" in on:     # empty: the parent's cores (a write of nothing never reaches the kernel)
        changed |= _write(d / "cpuset.cpus", str(cap.cpus) if cap.cpus else "\n")
    if "cpu" in on:
        changed |= _write(d / "cpu.max", f"{int(cap.cpu_quota * CFS_PERIOD_US)} {CFS_PERIOD_US}"
                          if cap.cpu_quota else f"max {CFS_PERIOD_US}")
    if "memory" in on:
        changed |= _write(d / "memory.max", str(int(cap.memory)) if cap.memory else "max")
    return changed


def cpu_seconds(usage_file: str) -> float:
    """CPU seconds a host's cgroup used: from v1 ``cpuacct.usage`` (ns) or v2 ``cpu.stat`` (usage_usec)."""
    text = Path(usage_file).read_text()
    if usage_file.endswith("cpu.stat"):
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields["usage_usec"]) / 1e6
    return int(text.strip()) / 1e9


def exempt(h: Hierarchy, cgroup: str, pids) -> int:
    """Move ``pids`` (every thread of each) into ``cgroup``, made first with no limit: out of their
    hosts' cores, quota and memory limit, and out of their hosts' CPU time. Where cores go by CPU
    affinity, the processes get every core back (with no cgroup at all, a later reshape of their host
    pins them again: nothing records them). How many moved (0: all there already, or gone)."""
    pids = {int(p) for p in pids}
    if h.mode == "none":     # no cgroup: only the host's cores to give back
        return sum(set_affinity([pid], None) for pid in pids)
    apply(h, cgroup, HostCapacity())
    moved = set()
    for d in h.dirs(cgroup):
        for pid in pids - {int(p) for p in _read(d / "cgroup.procs").split()}:
            try:
                (d / "cgroup.procs").write_text(str(pid))
                moved.add(pid)
            except ProcessLookupError:
                pass     # exited meanwhile
    if cores_by_affinity(h):
        set_affinity(pids, None)
    return len(moved)


def members_of(h: Hierarchy, cgroup: str) -> set[int]:
    """The pids in the host's CPU-accounting cgroup (the last of :meth:`Hierarchy.dirs`)."""
    dirs = h.dirs(cgroup)
    return {int(p) for p in _read(dirs[-1] / "cgroup.procs").split()} if dirs else set()


def _join_all(h: Hierarchy, cgroup: str) -> bool:
    """Move the host's processes (members of its CPU-accounting cgroup, which its sshd joined
    when it started) into its other v1 cgroups; True if any moved."""
    dirs = h.dirs(cgroup)
    members = {str(p) for p in members_of(h, cgroup)}
    moved = False
    for d in dirs[:-1]:
        for pid in members - set(_read(d / "cgroup.procs").split()):
            try:
                (d / "cgroup.procs").write_text(pid)
                moved = True
            except ProcessLookupError:
                pass     # exited meanwhile
    return moved


def set_affinity(pids, cpus) -> bool:
    """Pin every thread of ``pids`` to ``cpus`` (None: every online core); True if one moved."""
    target = set(cpus) if cpus else set(online_cpus())
    changed = False
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue     # exited meanwhile
        for tid in tids:
            try:
                if os.sched_getaffinity(tid) != target:
                    os.sched_setaffinity(tid, target)
                    changed = True
            except OSError:
                pass     # exited meanwhile
    return changed


def join(h: Hierarchy, cgroup: str, cpus) -> None:
    """In a host's first process, before it execs: join its cgroups and, where cores go by CPU
    affinity, take the host's cores (every process the host starts later inherits both)."""
    for d in h.dirs(cgroup):
        with open(d / "cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
    if cpus is not None:
        os.sched_setaffinity(0, set(cpus))


def remove(h: Hierarchy, cgroup: str) -> None:
    """Remove the host's cgroups (waiting a little for exiting processes to leave them)."""
    for d in h.dirs(cgroup):
        for _ in range(50):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
