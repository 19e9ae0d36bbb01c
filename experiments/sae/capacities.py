"""A point's host capacities: the cluster section's ``cores``, ``link_rate`` and ``host_memory``
resolved for its hosts, put in force by the local provider (metareserve emulates them as Mininet
does) and recorded, declared beside measured, in ``capacities/<shape key>.yaml``.

By default on the local provider the storage side and the compute side run on disjoint halves of
the machine's cores (one core each on 2 cores), as the paper's two clusters did, and every host's
link runs at 1.25 Gbit/s per core of the host: the paper's m510 nodes had 10 GbE for 8 cores.
docs/results.md ("Capacities") says how the rate was chosen and what it does to the figures.
"""
from __future__ import annotations

import dataclasses

from metareserve import Capacities, HostCapacity, parse_rate
from metareserve.capacity import cpu_list, cpuset_text, online_cpus, parse_cpus
from metareserve.errors import UsageError
from metareserve.sizes import parse_size

CORES_MODES = ("sides", "shared")
PER_CORE = "/core"
LOCAL_DEFAULTS = {"cores": "sides", "link_rate": "1.25gbit/core"}
"""What the local provider gets where the cluster section says None."""


def check(cores, link_rate, host_memory, where: str) -> None:
    """The capacity fields' form, checked at plan time (a cpuset against this machine's cores
    is checked when the provider is known: :func:`resolve`)."""
    if cores is not None and cores not in CORES_MODES and not (
            isinstance(cores, dict) and all(isinstance(k, str) and isinstance(v, (str, int)) for k, v in cores.items())):
        raise UsageError(f"{where}: cluster.cores {cores!r} must be 'sides', 'shared' or a mapping node -> cores "
                         f"such as {{'node1': '1', 'node2': '0'}}")
    if link_rate is not None:
        rate_per_host(link_rate, 1, f"{where}: cluster.link_rate")
    if host_memory is not None:
        parse_size(host_memory, what=f"{where}: cluster.host_memory")


def rate_per_host(spec, cores: float, what: str) -> int | None:
    """Bits/s of a host's link: ``spec`` as a rate, or ``RATE/core`` times the host's cores."""
    text = str(spec)
    if text.endswith(PER_CORE):
        per_core = parse_rate(text[: -len(PER_CORE)], what=what)
        if per_core is None:
            raise UsageError(f"{what}: {spec!r}: 'unlimited' takes no '/core'")
        return round(per_core * cores)
    return parse_rate(spec, what=what)


def resolve(cluster, sides: dict[str, str], nodes: list[str], where: str = "cluster") -> Capacities:
    """The declared capacities of ``nodes`` (node → ``compute``/``storage``/``both`` in
    ``sides``) for the cluster section ``cluster`` on the local provider (None fields: its
    defaults, :data:`LOCAL_DEFAULTS`)."""
    machine = online_cpus()
    cores = LOCAL_DEFAULTS["cores"] if cluster.cores is None else cluster.cores
    rate = LOCAL_DEFAULTS["link_rate"] if cluster.link_rate is None else cluster.link_rate
    cpus = _cpusets(cores, sides, nodes, machine, where)
    memory = parse_size(cluster.host_memory, what=f"{where}: cluster.host_memory") if cluster.host_memory else None
    hosts = {}
    for n in nodes:
        n_cores = len(cpu_list(cpus[n])) if cpus.get(n) else len(machine)
        hosts[n] = HostCapacity(cpus=cpus.get(n), memory=memory,
                                link_rate=rate_per_host(rate, n_cores, f"{where}: cluster.link_rate"))
    return Capacities({n: c for n, c in hosts.items() if c.to_dict()})


def _cpusets(cores, sides: dict[str, str], nodes: list[str], machine: list[int], where: str) -> dict:
    if cores == "shared":
        return {}
    if isinstance(cores, dict):
        unknown = sorted(set(cores) - set(nodes))
        if unknown:
            raise UsageError(f"{where}: cluster.cores names {', '.join(unknown)}, not one of {', '.join(nodes)}")
        return {n: parse_cpus(v, what=f"{where}: cluster.cores {n}", online=machine) for n, v in cores.items()}
    present = set(sides.values())
    if not {"compute", "storage"} <= present:
        return {}      # one side only (e.g. a single host): nothing to keep apart
    if len(machine) < 2:
        raise UsageError(f"{where}: cluster.cores 'sides' needs two cores to give storage and compute their own; "
                         f"this machine has {len(machine)}: set cores='shared'")
    half = (len(machine) + 1) // 2
    own = {"compute": cpuset_text(machine[:half]), "storage": cpuset_text(machine[half:])}
    return {n: own[sides[n]] for n in nodes if sides.get(n) in own}


def check_provider(cluster, provider: str, where: str) -> None:
    """Capacities are emulated on the local provider only: elsewhere a declared one is refused."""
    if provider == "local":
        return
    given = {f: getattr(cluster, f) for f in ("cores", "link_rate", "host_memory") if getattr(cluster, f) is not None}
    if given:
        raise UsageError(f"{where}: cluster.{', cluster.'.join(given)} can only be emulated on the local provider; "
                         f"on {provider!r} hosts have the cores and links they have (sae measures them)")


def check_plan(points, provider: str, where: str) -> None:
    """Every point's capacities on ``provider``, checked before anything is reserved: refused off
    the local provider; on it, resolved against this machine's cores (hosts named node1..N, the
    first storing, as a stand-in for the layout the run will use)."""
    for point in points:
        cluster = point.spec.cluster
        check_provider(cluster, provider, f"{where}: point {point.id}")
        if provider == "local":
            names = [f"node{i}" for i in range(1, cluster.nodes + 1)]
            sides = {n: "storage" if i == 0 and len(names) > 1 else "compute" for i, n in enumerate(names)}
            resolve(cluster, sides, names, f"{where}: point {point.id}")


def sides_of(roles: dict[str, str], names: list[str]) -> dict[str, str]:
    """Node → side for every host (hosts with no Spark or Ceph role count as ``both``)."""
    return {n: roles.get(n, "both") for n in names}


@dataclasses.dataclass(frozen=True)
class SideFigures:
    """Declared and measured capacities of a run's sides, as result columns."""

    compute_cores_declared: float | None = None
    compute_cores_measured: float | None = None
    storage_cores_declared: float | None = None
    storage_cores_measured: float | None = None
    link_rate_declared_bps: float | None = None
    link_rate_measured_bps: float | None = None

    @classmethod
    def of(cls, record: dict | None) -> "SideFigures":
        """From a ``capacities/<key>.yaml`` record (None: nothing was recorded)."""
        from metareserve import Calibration
        if not record:
            return cls()
        cal = Calibration.from_dict(record["calibration"])
        compute, storage, link = cal.core("compute"), cal.core("storage"), cal.link()
        return cls(compute and compute.declared, compute and compute.measured,
                   storage and storage.declared, storage and storage.measured,
                   link and link.declared, link and link.measured)
