"""Declared capacities of hosts that share one machine (a local cluster), as Mininet declares
them: a host's cores (a cpuset and/or a CFS quota in cores), its memory, and the rate of its link
(both directions). Parsed and checked here, once, before anything is created; the local provider
enforces them (cgroups, ``tc``) and :mod:`metareserve.calibrate` measures them.

Rates follow ``tc``'s units (``100mbit``, ``1.25gbit``, ``500kbit``, ``10mbps`` = bytes/s), also
written with ``/s`` (``10Gbit/s``); a bare number is Mbit/s, as Mininet's ``bw``. ``unlimited``
(or ``none``) is no rate. A host's link may also be declared per core of the host
(``1.25gbit/core``, :class:`LinkRate`). Each value is parsed once, where it enters, into its type
(:class:`Rate`, :class:`LinkRate`, :class:`CpuSet`, :class:`Cores`, :class:`~metareserve.Size`),
whose ``str`` is the canonical form a reservation records.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from .errors import UsageError
from .sizes import Size, format_size

RATE_UNITS = {"bit": 1, "kbit": 10 ** 3, "mbit": 10 ** 6, "gbit": 10 ** 9, "tbit": 10 ** 12,
              "kibit": 1 << 10, "mibit": 1 << 20, "gibit": 1 << 30,
              "bps": 8, "kbps": 8 * 10 ** 3, "mbps": 8 * 10 ** 6, "gbps": 8 * 10 ** 9}
MIN_RATE, MAX_RATE = 64_000, 100 * 10 ** 9
MIN_MEMORY = 64 << 20
UNLIMITED = ("unlimited", "none")
_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)(?:/s)?\s*", re.ASCII)
_CPUSET = re.compile(r"[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*", re.ASCII)
RATE_EXAMPLES = "examples: 100mbit, 1.25gbit, 10Gbit/s, 500kbit, 100 (Mbit/s), unlimited"
PER_CORE = "/core"


class Rate(int):
    """A link rate in bits per second; ``str`` is its exact form in ``tc``'s units (``1.25gbit``)."""

    @classmethod
    def parse(cls, value, *, what: str) -> "Rate | None":
        """The rate ``value`` says (None for ``unlimited``); UsageError naming ``what``."""
        if isinstance(value, cls) or value is None:
            return value
        if isinstance(value, str) and value.strip().lower() in UNLIMITED:
            return None
        if isinstance(value, bool):
            raise UsageError(f"{what}: {value!r} is not a rate ({RATE_EXAMPLES})")
        if isinstance(value, (int, float)):
            value = str(value)
        m = _RATE.fullmatch(value) if isinstance(value, str) else None
        unit = m.group(2).lower() if m else None
        factor = 10 ** 6 if unit == "" else RATE_UNITS.get(unit) if m else None
        if factor is None:
            raise UsageError(f"{what}: {value!r} is not a rate ({RATE_EXAMPLES})")
        bits = round(float(m.group(1)) * factor)
        if not MIN_RATE <= bits <= MAX_RATE:
            raise UsageError(f"{what}: {value!r} is outside {format_rate(MIN_RATE)} .. {format_rate(MAX_RATE)}")
        return cls(bits)

    def __str__(self) -> str:
        for unit, factor in (("gbit", 10 ** 9), ("mbit", 10 ** 6), ("kbit", 10 ** 3)):
            if self >= factor:
                whole, rest = divmod(int(self), factor)
                fraction = str(rest).rjust(len(str(factor)) - 1, "0").rstrip("0")
                return f"{whole}.{fraction}{unit}" if fraction else f"{whole}{unit}"
        return f"{int(self)}bit"


@dataclasses.dataclass(frozen=True)
class LinkRate:
    """A host's link rate as declared: a :class:`Rate` (None: unlimited), or that rate per core
    of the host (``per_core``: ``1.25gbit/core``, the paper's 10 GbE for 8 cores)."""

    rate: Rate | None
    per_core: bool = False

    @classmethod
    def parse(cls, value, *, what: str) -> "LinkRate":
        """``100mbit``, ``unlimited`` or ``1.25gbit/core``; UsageError naming ``what``."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.strip().lower().endswith(PER_CORE):
            rate = Rate.parse(value.strip()[: -len(PER_CORE)], what=what)
            if rate is None:
                raise UsageError(f"{what}: {value!r}: 'unlimited' takes no '{PER_CORE}'")
            return cls(rate, per_core=True)
        return cls(Rate.parse(value, what=what))

    def of_host(self, cores: float) -> Rate | None:
        """The rate of a host with ``cores`` cores."""
        return Rate(round(self.rate * cores)) if self.per_core else self.rate

    def __str__(self) -> str:
        return "unlimited" if self.rate is None else f"{self.rate}{PER_CORE if self.per_core else ''}"


def format_rate(bits: float | None) -> str:
    """For people: ``1250000000`` → ``1.25Gbit/s`` (4 digits); None → ``unlimited``."""
    if bits is None:
        return "unlimited"
    for unit, factor in (("Gbit/s", 10 ** 9), ("Mbit/s", 10 ** 6), ("kbit/s", 10 ** 3)):
        if bits >= factor:
            return f"{bits / factor:.4g}{unit}"
    return f"{bits:.0f}bit/s"


def online_cpus() -> list[int]:
    """The CPUs this machine has online (``/sys/devices/system/cpu/online``)."""
    try:
        return cpu_list(Path("/sys/devices/system/cpu/online").read_text().strip())
    except (OSError, ValueError):
        return sorted(os.sched_getaffinity(0))


def cpu_list(cpuset: str) -> list[int]:
    """``0-2,5`` → ``[0, 1, 2, 5]``; ValueError if it is no cpuset."""
    if not _CPUSET.fullmatch(cpuset):
        raise ValueError(cpuset)
    out = set()
    for part in cpuset.split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            raise ValueError(cpuset)
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def cpuset_text(cpus) -> str:
    """``[0, 1, 2, 5]`` → ``0-2,5``."""
    cpus, parts = sorted(set(cpus)), []
    for c in cpus:
        if parts and parts[-1][1] == c - 1:
            parts[-1][1] = c
        else:
            parts.append([c, c])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in parts)


@dataclasses.dataclass(frozen=True)
class CpuSet:
    """A set of CPUs; ``str`` is its canonical cpuset (``0-2,5``)."""

    cpus: tuple[int, ...]

    @classmethod
    def parse(cls, value, *, what: str) -> "CpuSet":
        """The cores ``value`` names (``1``, ``0-3``, ``0,2``); UsageError naming ``what``."""
        if isinstance(value, cls):
            return value
        text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        try:
            return cls(tuple(cpu_list(text))) if text is not None else None
        except ValueError:
            pass
        raise UsageError(f"{what}: {value!r} is not a set of cores (examples: 0, 1, 0-3, 0,2)")

    def within(self, online: list[int], *, what: str) -> "CpuSet":
        """This set, if the machine (its ``online`` CPUs) has every core of it; UsageError otherwise."""
        missing = sorted(set(self.cpus) - set(online))
        if missing:
            raise UsageError(f"{what}: {str(self)!r} names core(s) {cpuset_text(missing)}, but this machine has "
                             f"{len(online)} ({cpuset_text(online)})")
        return self

    def __len__(self) -> int:
        return len(self.cpus)

    def __str__(self) -> str:
        return cpuset_text(self.cpus)


class Cores(float):
    """A CPU quota in cores (``0.5``); ``str`` is ``0.5``."""

    @classmethod
    def parse(cls, value, *, what: str, online: list[int] | None = None) -> "Cores":
        """Cores above 0 and at most the machine's (its ``online`` CPUs); UsageError naming ``what``."""
        online = online_cpus() if online is None else online
        text = str(value).strip() if not isinstance(value, bool) else ""
        cores = float(text) if re.fullmatch(r"[0-9]+(\.[0-9]+)?", text, re.ASCII) else None
        if cores is None or not 0 < cores <= len(online):
            raise UsageError(f"{what}: {value!r} is not a number of cores above 0 and at most {len(online)} "
                             f"(this machine's)")
        return cls(cores)

    def __str__(self) -> str:
        return f"{float(self):g}"


def parse_memory(value, *, what: str) -> Size:
    """A memory limit, from 64 MiB to this machine's memory."""
    n = Size.parse(value, what=what, minimum=MIN_MEMORY)
    total = machine_memory()
    if total and n > total:
        raise UsageError(f"{what}: {value!r} is more than this machine's {format_size(total)}")
    return n


def machine_memory() -> int | None:
    """Bytes of memory this machine has (None where /proc/meminfo says nothing)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@dataclasses.dataclass(frozen=True)
class HostCapacity:
    """One host's declared capacities; None = not limited (the whole machine, an unshaped link)."""

    cpus: CpuSet | None = None
    cpu_quota: Cores | None = None   # through the CFS quota
    memory: Size | None = None
    link_rate: Rate | None = None    # each direction of the host's link

    def cores(self, machine: int) -> float:
        """The cores this host may use: its cpuset's size, capped by its quota."""
        n = len(self.cpus) if self.cpus else machine
        return float(min(n, self.cpu_quota) if self.cpu_quota else n)

    def to_dict(self) -> dict:
        """As recorded in a reservation: each value's canonical form (:meth:`Capacities.from_dict`
        reads it back, and the plain numbers older records hold)."""
        return {f.name: str(getattr(self, f.name)) for f in dataclasses.fields(self) if getattr(self, f.name)}

    def describe(self) -> str:
        parts = [f"cores {self.cpus}" if self.cpus else "", f"quota {self.cpu_quota} cores" if self.cpu_quota else "",
                 f"memory {format_size(self.memory)}" if self.memory else "",
                 f"link {format_rate(self.link_rate)}" if self.link_rate else ""]
        return ", ".join(p for p in parts if p) or "unlimited"


FLAGS = {"cpus": "--cpus", "cpu_quota": "--cpu-limit", "memory": "--memory", "link_rate": "--link-rate"}
"""The CLI flag of each host capacity (a value's error names the flag it was given with)."""


@dataclasses.dataclass(frozen=True)
class Capacities:
    """Declared capacities per host name (hosts not named are unlimited); ``delay`` is refused
    where the kernel cannot emulate it."""

    hosts: dict = dataclasses.field(default_factory=dict)   # node name -> HostCapacity

    def of(self, node: str) -> HostCapacity:
        return self.hosts.get(node, HostCapacity())

    def cores(self, names, machine: list[int]) -> float:
        """Cores ``names`` may use together: the union of their cpusets, capped by their quotas."""
        caps = [self.of(n) for n in names]
        union = set()
        for c in caps:
            union.update(c.cpus.cpus if c.cpus else machine)
        quotas = [c.cpu_quota for c in caps]
        return float(min(len(union), sum(quotas)) if all(quotas) else len(union))

    def link_rate(self, src: str, dst: str) -> Rate | None:
        """The declared rate between two hosts: the slower of their links (None: unlimited)."""
        rates = [r for r in (self.of(src).link_rate, self.of(dst).link_rate) if r]
        return min(rates) if rates else None

    def to_dict(self) -> dict:
        return {n: c.to_dict() for n, c in self.hosts.items() if c.to_dict()}

    @classmethod
    def from_dict(cls, data, source: str = "capacities") -> "Capacities":
        """Capacities as :meth:`to_dict` wrote them (a reservation's record), validated."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise UsageError(f"{source}: capacities must map node names to their capacities")
        keys = [f.name for f in dataclasses.fields(HostCapacity)]
        for node, raw in data.items():
            if not isinstance(raw, dict) or set(raw) - set(keys):
                raise UsageError(f"{source} {node}: expected keys {', '.join(keys)}")
        return cls._parsed({n: dict(raw) for n, raw in data.items()}, lambda node, key: f"{source} {node} {key}")

    @classmethod
    def parse(cls, nodes: list[str], *, cpus=(), cpu_quota=(), memory=(), link_rate=(), delay=None) -> "Capacities":
        """Capacities from CLI-style specs, each ``VALUE`` (every host) or ``NODE[,NODE...]=VALUE``
        (later specs override earlier ones), checked against ``nodes`` and this machine. A
        ``delay`` is refused in one line where the kernel has no netem."""
        if delay is not None:
            check_delay(delay)
        values: dict[str, dict] = {n: {} for n in nodes}
        flags = {}
        for key, specs in (("cpus", cpus), ("cpu_quota", cpu_quota), ("memory", memory), ("link_rate", link_rate)):
            flag = FLAGS[key]
            for spec in [specs] if isinstance(specs, str) else specs:
                for node, value in _targets(spec, nodes, flag):
                    values[node][key], flags[node, key] = value, f"{flag} {spec}"
        return cls._parsed(values, lambda node, key: flags[node, key])

    @classmethod
    def _parsed(cls, values: dict, what) -> "Capacities":
        """Node → HostCapacity of ``values`` (node → field → value as written), each value
        parsed once into its type and checked against this machine; ``what(node, field)`` names it."""
        online = online_cpus()
        parsers = {"cpus": lambda v, w: CpuSet.parse(v, what=w).within(online, what=w),
                   "cpu_quota": lambda v, w: Cores.parse(v, what=w, online=online),
                   "memory": lambda v, w: parse_memory(v, what=w),
                   "link_rate": lambda v, w: Rate.parse(v, what=w)}
        hosts = {n: HostCapacity(**{k: parsers[k](v, what(n, k)) for k, v in fields.items()})
                 for n, fields in values.items()}
        return cls({n: c for n, c in hosts.items() if c.to_dict()})


def _targets(spec, nodes: list[str], flag: str) -> list[tuple[str, str]]:
    """(node, value) pairs of one ``VALUE`` or ``NODE[,NODE...]=VALUE`` spec."""
    text = str(spec)
    names, sep, value = text.rpartition("=")
    if not sep:
        return [(n, text) for n in nodes]
    unknown = [n for n in names.split(",") if n not in nodes]
    if unknown or not names:
        raise UsageError(f"{flag} {text!r}: no host {', '.join(unknown) or repr(names)} "
                         f"(hosts: {', '.join(nodes)})")
    return [(n, value) for n in names.split(",")]


def check_delay(delay) -> None:
    """Link delay needs the kernel's netem qdisc; UsageError in one line where it is missing."""
    import subprocess
    probe = subprocess.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise UsageError(f"link delay {delay!r}: this kernel has no netem qdisc (tc: "
                         f"{probe.stderr.strip() or probe.returncode}), so the local provider cannot emulate "
                         f"delay, loss or jitter; leave the delay out (link rates work)")
    raise UsageError(f"link delay {delay!r}: the local provider emulates link rates only; leave the delay out")
