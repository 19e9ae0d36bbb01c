"""Measuring what hosts can do, beside what was declared (as Mininet checks its links with
iperf): the cores a host (or a group of hosts together) really gets under a busy loop, and the
TCP throughput between two hosts. Runs through the remote-execution layer, so it measures SSH
hosts and CloudLab nodes as well as local ones; declared figures exist where the provider
emulates capacities (a local cluster), and a measurement more than :data:`TOLERANCE` off its
declared figure gets a one-line warning.
"""
from __future__ import annotations

import dataclasses
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .capacity import Capacities, format_rate, online_cpus
from .model import Reservation
from .providers.cgroups import NOT_ENFORCED, Enforcement
from .remote.prelude import write_file
from .remote import Cluster, node_agent

TOLERANCE = 0.15
PROBE_PORT = 47299      # the TCP port the link probe's receiver listens on (cluster address)
STAGE = "calibrate"
LAST_FILE = "calibration.json"
"""The file in a local cluster's state directory that keeps its last calibration."""


@dataclasses.dataclass(frozen=True)
class CoresMeasure:
    """Usable cores of ``hosts`` spinning together (``name``: a host, or a group such as a
    cluster side); ``declared`` None where the provider declares nothing."""

    name: str
    hosts: tuple
    declared: float | None
    measured: float


@dataclasses.dataclass(frozen=True)
class LinkMeasure:
    """TCP throughput from ``src`` to ``dst`` in bits/s (the receiver's view), and the declared
    rate between them (None: unlimited or not declared)."""

    src: str
    dst: str
    declared: int | None
    measured: float


@dataclasses.dataclass(frozen=True)
class Calibration:
    """One calibration of a reservation's hosts (``at``: epoch seconds; ``reused``: returned from
    an earlier call instead of measured again, see :func:`calibrate`); ``enforced``: host → what
    put each of its declared capacities in force, or why nothing did (the local provider's
    record, :class:`metareserve.providers.cgroups.Enforcement`)."""

    cores: tuple = ()
    links: tuple = ()
    at: float = 0.0
    reused: bool = False
    enforced: dict = dataclasses.field(default_factory=dict)

    def core(self, name: str) -> CoresMeasure | None:
        return next((c for c in self.cores if c.name == name), None)

    def link(self, src: str | None = None, dst: str | None = None) -> LinkMeasure | None:
        """The first link measured (from ``src`` / to ``dst`` when given)."""
        return next((m for m in self.links if src in (None, m.src) and dst in (None, m.dst)), None)

    def warnings(self, tolerance: float = TOLERANCE) -> list[str]:
        """One line per declared capacity nothing enforces and per measurement more than
        ``tolerance`` off its declared figure."""
        out = [f"[{host} {STAGE}] declared {what} {how}" for host, by in self.enforced.items()
               for what, how in by.items() if how.startswith(NOT_ENFORCED)]
        for c in self.cores:
            if c.declared and abs(c.measured - c.declared) > tolerance * c.declared:
                out.append(f"[{c.name} {STAGE}] measured {c.measured:.2f} usable cores, declared {c.declared:g} "
                           f"({_off(c.measured, c.declared)}): something else competes for these cores, "
                           f"or the machine is oversubscribed")
        for m in self.links:
            if m.declared and abs(m.measured - m.declared) > tolerance * m.declared:
                out.append(f"[{m.src}->{m.dst} {STAGE}] measured {format_rate(m.measured)}, declared "
                           f"{format_rate(m.declared)} ({_off(m.measured, m.declared)}): the senders' or "
                           f"receivers' CPU may be too slow for this rate")
        return out

    def text(self) -> str:
        """The measurements as lines (declared beside measured)."""
        lines = [f"  cores {c.name:<10} declared {_or_dash(c.declared, '{:g}')}  measured {c.measured:.2f}"
                 for c in self.cores]
        lines += [f"  link  {m.src}->{m.dst}  declared {format_rate(m.declared) if m.declared else 'unlimited'}  "
                  f"measured {format_rate(m.measured)}" for m in self.links]
        lines += [f"  enforced {host:<7} " + Enforcement(by).text() for host, by in self.enforced.items() if by]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"at": self.at, "reused": self.reused,
                "cores": [dict(dataclasses.asdict(c), hosts=list(c.hosts)) for c in self.cores],
                "links": [dataclasses.asdict(m) for m in self.links], "enforced": self.enforced}

    @classmethod
    def from_dict(cls, data: dict) -> "Calibration":
        return cls(cores=tuple(CoresMeasure(**dict(c, hosts=tuple(c["hosts"]))) for c in data.get("cores", [])),
                   links=tuple(LinkMeasure(**m) for m in data.get("links", [])), at=data.get("at", 0.0),
                   reused=bool(data.get("reused", False)), enforced=dict(data.get("enforced") or {}))


def _off(measured: float, declared: float) -> str:
    share = measured / declared - 1
    return f"{abs(share):.0%} {'above' if share > 0 else 'below'}"


def _or_dash(value, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def default_links(reservation: Reservation) -> list[tuple[str, str]]:
    """From the first host to each of up to three others."""
    names = [n.name for n in reservation.nodes]
    return [(names[0], other) for other in names[1:4]]


def calibrate(reservation: Reservation, *, groups: dict | None = None, links=None, cluster: Cluster | None = None,
              seconds: float = 1.0, link_seconds: float = 2.0, reuse_within: float = 0.0) -> Calibration:
    """Measure usable cores of every host alone (and of each group in ``groups``, name → host
    names, spinning together), then the throughput of each ``(src, dst)`` in ``links`` (default
    :func:`default_links`), one measurement at a time so they do not disturb each other.

    ``reuse_within`` seconds (a local cluster's, whose provider keeps the last calibration in its
    state directory): return that calibration, marked ``reused``, when it measured the same hosts,
    groups and links under the same declared capacities at most that long ago."""
    sets = {n.name: [n.name] for n in reservation.nodes}
    sets.update(groups or {})
    links = default_links(reservation) if links is None else [tuple(link) for link in links]
    key = json.dumps({"capacities": reservation.capacities.to_dict(), "sets": sets, "links": links,
                      "seconds": [seconds, link_seconds]}, sort_keys=True)
    last = _last_file(reservation)
    if reuse_within > 0 and last is not None:
        earlier = _read_last(last, key)
        if earlier is not None and 0 <= time.time() - earlier.at <= reuse_within:
            return dataclasses.replace(earlier, reused=True)
    measured = _measure(reservation, sets, links, cluster, seconds, link_seconds)
    if last is not None:
        write_file(last, json.dumps({"key": key, "calibration": measured.to_dict()}))
    return measured


def _last_file(reservation: Reservation) -> Path | None:
    """Where a local cluster keeps its last calibration (None for other providers)."""
    state = reservation.provider_state.get("state_dir") if reservation.provider == "local" else None
    return Path(state) / LAST_FILE if state and Path(state).is_dir() else None


def _read_last(path: Path, key: str) -> Calibration | None:
    """The calibration kept in ``path`` if it was taken for ``key``."""
    try:
        data = json.loads(path.read_text())
        return Calibration.from_dict(data["calibration"]) if data.get("key") == key else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _measure(reservation: Reservation, sets: dict, links: list, cluster: Cluster | None, seconds: float,
             link_seconds: float) -> Calibration:
    own = cluster is None
    cluster = cluster or Cluster(reservation)
    caps = reservation.capacities if reservation.cpu_accounting is not None else None
    machine = online_cpus()
    try:
        cores = []
        for name, hosts in sets.items():
            got = cluster.call(node_agent, "cpu_probe", seconds, nodes=hosts, stage=f"{STAGE} cores")
            cores.append(CoresMeasure(name, tuple(hosts), caps.cores(hosts, machine) if caps else None,
                                      round(sum(r["cores"] for r in got.values()), 3)))
        measured = [LinkMeasure(src, dst, _declared_rate(caps, src, dst),
                                _throughput(cluster, reservation, src, dst, link_seconds))
                    for src, dst in links]
    finally:
        if own:
            cluster.close()
    enforced = reservation.provider_state.get("enforced", {}) if caps else {}
    return Calibration(tuple(cores), tuple(measured), time.time(), enforced=dict(enforced))


def _declared_rate(caps: Capacities | None, src: str, dst: str) -> int | None:
    """The declared rate from ``src`` to ``dst`` as the record's plain bits/s (None: unlimited)."""
    rate = caps.link_rate(src, dst) if caps else None
    return None if rate is None else int(rate)


def _throughput(cluster: Cluster, reservation: Reservation, src: str, dst: str, seconds: float) -> float:
    """Bits/s of one TCP transfer from ``src`` to ``dst``'s cluster address."""
    address = reservation.node(dst).cluster_address
    with ThreadPoolExecutor(max_workers=1) as pool:
        sink = pool.submit(cluster.call, node_agent, "tcp_sink", address, PROBE_PORT, seconds + 30,
                           nodes=[dst], stage=f"{STAGE} link")
        cluster.call(node_agent, "tcp_source", address, PROBE_PORT, seconds, nodes=[src], stage=f"{STAGE} link")
        got = sink.result()[dst]
    return round(got["bytes"] * 8 / got["seconds"], 1) if got["seconds"] else 0.0
