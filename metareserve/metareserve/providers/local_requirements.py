"""What a machine needs to host a local cluster, checked before anything is installed or made:
root, a Debian or Ubuntu package manager, network namespaces, veth pairs, ``tc``'s token bucket,
cgroups that can put the declared capacities in force, and the disk and memory the work needs.

Each probe is side-effect free (a throw-away namespace of ``unshare --net`` at most) and its
outcome is one :class:`Requirement` line naming the fix. Machine probes run once per process.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
from pathlib import Path

from ..capacity import HostCapacity, machine_memory
from ..errors import OperationalError
from ..sizes import format_size
from . import cgroups

OS_RELEASE = Path("/etc/os-release")
DISTRIBUTIONS = {"debian": 12, "ubuntu": 22}
"""Distribution → the oldest major release the project runs on (its Ceph, Python and Java)."""
CONTROLLER_MEMORY = 1 << 30
"""Memory left to the controller itself (sae, the exporter, the shell) beside its hosts."""
VM_HINT = "or run sae in a VM of Debian 12 / Ubuntu 22.04+ where you are root"


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One requirement: ``name``, whether this machine meets it, what was found, and the fix."""

    name: str
    ok: bool
    found: str
    fix: str = ""

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.name}: {self.found}" + ("" if self.ok else f"; {self.fix}")


def _probe(argv: list[str]) -> str | None:
    """None if ``argv`` succeeds, else its last line of error."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if r.returncode == 0 else ((r.stderr or r.stdout).strip().splitlines() or [f"exit {r.returncode}"])[-1]


def distribution(os_release: Path = OS_RELEASE) -> Requirement:
    """Debian 12+ or Ubuntu 22.04+ with apt-get (whose packages the deployers install)."""
    try:
        info = dict(line.split("=", 1) for line in os_release.read_text().splitlines() if "=" in line)
    except OSError:
        info = {}
    info = {k: v.strip().strip('"') for k, v in info.items()}
    ids = [info.get("ID", "")] + info.get("ID_LIKE", "").split()
    version = info.get("VERSION_ID", "")
    name = info.get("PRETTY_NAME") or "an unknown distribution"
    known = next((i for i in ids if i in DISTRIBUTIONS), None)
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else None
    apt = shutil.which("apt-get") is not None
    ok = apt and known is not None and (major is None or info.get("ID") != known or major >= DISTRIBUTIONS[known])
    return Requirement("distribution", ok, f"{name}{'' if apt else ' without apt-get'}",
                       "sae installs Debian packages: use Debian 12+ or Ubuntu 22.04+ (a VM of one will do)")


@functools.lru_cache(maxsize=None)
def _kernel_checks() -> tuple[Requirement, ...]:
    """Namespaces, veth and tc, probed in throw-away network namespaces (once per process)."""
    netns = _probe(["unshare", "--net", "ip", "link", "set", "lo", "up"])
    veth = netns or _probe(["unshare", "--net", "ip", "link", "add", "saeprobe0", "type", "veth",
                            "peer", "name", "saeprobe1"])
    tc = netns or _probe(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
                          "rate", "1mbit", "burst", "32kb", "latency", "50ms"])
    return (Requirement("network namespaces", netns is None, netns or "unshare --net works",
                        f"the kernel must allow network namespaces (CONFIG_NET_NS; in a container: "
                        f"--privileged), {VM_HINT}"),
            Requirement("veth pairs", veth is None, veth or "ip link add type veth works",
                        f"load the veth module (modprobe veth), {VM_HINT}"),
            Requirement("tc token bucket", tc is None, tc or "tc qdisc tbf works",
                        f"install iproute2 and load sch_tbf (modprobe sch_tbf), {VM_HINT}"))


def cgroup_requirement(capacities=(), accounting: bool = False, h: cgroups.Hierarchy | None = None) -> Requirement:
    """Whether this machine's cgroups put ``capacities`` (the hosts' :class:`HostCapacity`) in
    force, and count each host's CPU time when ``accounting`` (monitoring) is asked for."""
    h = h or cgroups.detect()
    missing = {}
    for cap in capacities:
        missing.update(cgroups.plan(h, cap).missing)
    ways = sorted({v for cap in capacities for v in cgroups.plan(h, cap).by.values() if v not in missing.values()})
    found = h.describe() + (f"; {', '.join(ways)}" if ways else "")
    if accounting and h.mode == "none":
        return Requirement("cgroups", False, found, "per-host CPU time needs a writable cgroup mount (v1 cpuacct or "
                           f"cgroup2): mount one read-write, turn monitoring off (monitor.enabled=False), {VM_HINT}")
    if missing:
        what, why = next(iter(missing.items()))
        return Requirement("cgroups", False, f"{found}; declared {what} {why}",
                           f"declare no {what} limit (sae: cluster.host_memory; metareserve: --cpu-limit, "
                           f"--memory), or fix the cgroups as said")
    return Requirement("cgroups", True, found)


def _free_at(path: Path) -> tuple[Path, int]:
    """(the nearest existing directory of ``path``, the bytes free there)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path, shutil.disk_usage(path).free


def check_machine(*, disk_bytes: int = 0, memory_bytes: int = 0, capacities=(), accounting: bool = False,
                  state_dir: Path | None = None) -> list[Requirement]:
    """Every requirement of a local cluster on this machine, given the disk (under ``state_dir``
    and /opt/sae) and memory the work needs and the capacities it declares."""
    from .local import state_base
    out = [Requirement("root", os.geteuid() == 0, f"uid {os.geteuid()}",
                       "run as root (sudo): the local provider makes namespaces, interfaces and cgroups"),
           distribution()]
    if os.geteuid() == 0:     # what only root can probe
        out += [*_kernel_checks(), cgroup_requirement(capacities, accounting)]
    where, free = _free_at(Path(state_dir or state_base()))
    out.append(Requirement("disk", free >= disk_bytes, f"{format_size(free)} free at {where}, "
                           f"{format_size(disk_bytes)} needed",
                           f"free {format_size(disk_bytes - free)} at {where}, or make the data smaller (data.rows)"))
    total = machine_memory()
    if memory_bytes and total is not None:
        usable = total - CONTROLLER_MEMORY
        out.append(Requirement("memory", usable >= memory_bytes, f"{format_size(total)} on this machine "
                               f"({format_size(CONTROLLER_MEMORY)} kept for the controller), "
                               f"{format_size(memory_bytes)} needed by the hosts",
                               "use fewer hosts, smaller Spark heaps (spark.executor_memory, driver_memory) or "
                               "less data held by memstore OSDs, or a machine with more memory"))
    return out


def require(checks: list[Requirement], where: str = "local cluster") -> None:
    """OperationalError listing every failed requirement, one line each with its fix."""
    failed = [c for c in checks if not c.ok]
    if failed:
        raise OperationalError(f"[{where} requirements] this machine cannot host it:\n"
                               + "\n".join("  " + c.line() for c in failed))
