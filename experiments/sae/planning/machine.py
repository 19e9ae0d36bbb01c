"""What a plan asks of the machine a local cluster runs on, checked before anything is reserved
or installed (:mod:`metareserve.providers.local_requirements`): the memory of every host at its
most demanding point (each deployer says what its daemons take), the disk of the node software
and the data, the capacities the points declare, and per-host CPU accounting where monitoring is on.
"""
from __future__ import annotations

import dataclasses

from data_deploy.footprint import stored_bytes
from metareserve import Layout, Node, Reservation
from metareserve.providers.local_requirements import Requirement, check_machine
from monitor_deploy import footprint as monitor_footprint
from rados_deploy import footprint as ceph_footprint
from spark_deploy import footprint as spark_footprint

from . import capacities
from .spec import ceph_options, spark_options

SOFTWARE_BYTES = 3 << 30
"""Node software on disk: Ceph's packages, a Spark node environment (pyspark ~0.7 GB), the object
class's Arrow libraries, and room for logs."""


@dataclasses.dataclass(frozen=True)
class MachineNeeds:
    """What the plan's most demanding point needs of the machine."""

    memory: int
    disk: int
    capacities: tuple
    accounting: bool


def layout(nodes: int, roles: dict | None) -> Layout:
    """The point's layout over hosts node1..N: its own roles, else the default one."""
    if roles:
        return Layout.from_dict({"roles": roles})
    stand_in = Reservation("plan", "local", [Node(name=f"node{i}", host=f"node{i}") for i in range(1, nodes + 1)])
    return Layout.default(stand_in)


def point_memory(spec) -> int:
    """Bytes every host of a point needs together."""
    lay = layout(spec.cluster.nodes, spec.cluster.layout)
    data = stored_bytes(spec.data.rows, spec.data.copy_multiplier)
    osd_hosts = max(1, len(lay.names("ceph-osd")))
    ceph, spark = ceph_options(spec.ceph), spark_options(spec.spark)
    total = 0
    for name in lay.all_names():
        roles = set(lay.roles_of(name))
        total += (ceph_footprint.memory(ceph, roles, data // osd_hosts if "ceph-osd" in roles else 0)
                  + spark_footprint.memory(spark, roles, spec.spark.driver_memory)
                  + (monitor_footprint.memory(roles) if spec.monitor.enabled else 0))
    return total


def needs(points) -> MachineNeeds:
    """What ``points`` (a plan's) need of a local cluster's machine."""
    caps = {}
    for point in points:
        cluster = point.spec.cluster
        names = [f"node{i}" for i in range(1, cluster.nodes + 1)]
        sides = layout(cluster.nodes, cluster.layout).host_roles()
        caps.update(dict.fromkeys(capacities.resolve(cluster, capacities.sides_of(sides, names), names).hosts.values()))
    return MachineNeeds(memory=max(point_memory(p.spec) for p in points),
                        disk=SOFTWARE_BYTES + max(stored_bytes(p.spec.data.rows, p.spec.data.copy_multiplier)
                                                  for p in points),
                        capacities=tuple(caps), accounting=any(p.spec.monitor.enabled for p in points))


def check(points) -> list[Requirement]:
    """Every requirement of this machine for ``points``, met or not (one line each)."""
    n = needs(points)
    return check_machine(disk_bytes=n.disk, memory_bytes=n.memory, capacities=n.capacities, accounting=n.accounting)
