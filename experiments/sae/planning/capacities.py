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

from metareserve import Capacities, CpuSet, HostCapacity, LinkRate, Size
from metareserve.capacity import Cores, online_cpus
from metareserve.errors import UsageError

CORES_MODES = ("sides", "shared", "split")
LOCAL_DEFAULTS = {"cores": "sides", "link_rate": LinkRate.parse("1.25gbit/core", what="LOCAL_DEFAULTS")}
"""What the local provider gets where the cluster section says None."""


def parse_cluster(cluster, where: str):
    """The cluster section with its capacity fields parsed into their types (``cores``: a mode
    or node → :class:`CpuSet`, ``link_rate``: :class:`LinkRate`, ``host_memory``:
    :class:`Size`; None stays None); UsageError naming ``where`` and the field. A cpuset is
    checked against this machine's cores once the provider is known (:func:`resolve`)."""
    cores, what = cluster.cores, f"{where}: cluster.cores"
    if isinstance(cores, dict) and all(isinstance(k, str) for k in cores):
        cores = {n: CpuSet.parse(v, what=f"{what} {n}") for n, v in cores.items()}
    elif cores is not None and cores not in CORES_MODES:
        raise UsageError(f"{what} {cores!r} must be 'sides', 'shared', 'split' or a mapping node -> cores "
                         f"such as {{'node1': '1', 'node2': '0'}}")
    return dataclasses.replace(
        cluster, cores=cores,
        link_rate=None if cluster.link_rate is None else LinkRate.parse(cluster.link_rate,
                                                                        what=f"{where}: cluster.link_rate"),
        host_memory=None if cluster.host_memory is None else Size.parse(cluster.host_memory,
                                                                        what=f"{where}: cluster.host_memory"))


def resolve(cluster, sides: dict[str, str], nodes: list[str], where: str = "cluster") -> Capacities:
    """The declared capacities of ``nodes`` (node → ``compute``/``storage``/``both`` in
    ``sides``) for the cluster section ``cluster`` (typed as a point holds it; one as written
    is parsed by :func:`parse_cluster` first) on the local provider (None fields: its defaults,
    :data:`LOCAL_DEFAULTS`)."""
    cluster = parse_cluster(cluster, where)
    machine = online_cpus()
    cores = LOCAL_DEFAULTS["cores"] if cluster.cores is None else cluster.cores
    rate = LOCAL_DEFAULTS["link_rate"] if cluster.link_rate is None else cluster.link_rate
    cpus = _cpusets("sides" if cores == "split" else cores, sides, nodes, machine, where)
    quotas = _shares(cpus) if cores == "split" else {}
    hosts = {n: HostCapacity(cpus=cpus.get(n), cpu_quota=quotas.get(n), memory=cluster.host_memory,
                             link_rate=rate.of_host(quotas.get(n) or (len(cpus[n]) if cpus.get(n) else len(machine))))
             for n in nodes}
    return Capacities({n: c for n, c in hosts.items() if c.to_dict()})


def _cpusets(cores, sides: dict[str, str], nodes: list[str], machine: list[int], where: str) -> dict:
    if cores == "shared":
        return {}
    if isinstance(cores, dict):
        unknown = sorted(set(cores) - set(nodes))
        if unknown:
            raise UsageError(f"{where}: cluster.cores names {', '.join(unknown)}, not one of {', '.join(nodes)}")
        return {n: v.within(machine, what=f"{where}: cluster.cores {n}") for n, v in cores.items()}
    present = set(sides.values())
    if not {"compute", "storage"} <= present:
        return {}      # one side only (e.g. a single host): nothing to keep apart
    if len(machine) < 2:
        raise UsageError(f"{where}: cluster.cores 'sides' needs two cores to give storage and compute their own; "
                         f"this machine has {len(machine)}: set cores='shared'")
    half = (len(machine) + 1) // 2
    own = {"compute": CpuSet(tuple(machine[:half])), "storage": CpuSet(tuple(machine[half:]))}
    return {n: own[sides[n]] for n in nodes if sides.get(n) in own}


def _shares(cpus: dict) -> dict:
    """``split``: where a side has more hosts than cores, each of its hosts an equal share of them
    as a CPU quota (17 hosts on 2 cores: each of the 8 storage hosts 1/8 of one core)."""
    hosts_on: dict = {}
    for n, c in cpus.items():
        hosts_on.setdefault(c, []).append(n)
    return {n: Cores(len(c) / len(hosts_on[c])) for n, c in cpus.items() if len(hosts_on[c]) > len(c)}


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
