"""Layouts: which node plays which roles. Deployers take a reservation plus a layout.

A layout file is YAML::

    version: 1
    roles:
      spark-master: [node1]
      spark-worker: [node2, node3]
      ceph-osd: [node1, node2, node3]

Roles are a fixed vocabulary (:data:`ROLES`); an unknown role or node is a usage error.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from .errors import UsageError
from .model import Node, Reservation, read_yaml

ROLES = ("spark-master", "spark-worker", "driver", "ceph-mon", "ceph-mgr", "ceph-osd",
         "ceph-mds", "ceph-rgw", "ceph-client", "prometheus")
METRICS_PORTS = {"spark-master": 8080, "spark-worker": 8081, "driver": 4040, "ceph-mgr": 9283}
"""The port each role serves its metrics on unless told otherwise (Spark's master, worker and
driver web UIs, the Ceph mgr's prometheus module): the deployer that starts the role and the
monitoring that scrapes it both default to it."""


@dataclasses.dataclass
class Layout:
    """Role → node names, with reverse lookup. Order of nodes within a role is kept."""

    roles: dict[str, list[str]]

    def __post_init__(self):
        for role in self.roles:
            if role not in ROLES:
                raise UsageError(f"unknown role {role!r} in layout (known roles: {', '.join(ROLES)})")

    def names(self, role: str) -> list[str]:
        """Node names playing ``role`` (empty list if none)."""
        if role not in ROLES:
            raise UsageError(f"unknown role {role!r} (known roles: {', '.join(ROLES)})")
        return list(self.roles.get(role, []))

    def nodes(self, reservation: Reservation, role: str) -> list[Node]:
        """The reservation's nodes playing ``role``."""
        return [reservation.node(n) for n in self.names(role)]

    def one(self, reservation: Reservation, role: str) -> Node:
        """The single node playing ``role``; UsageError if there is none."""
        nodes = self.nodes(reservation, role)
        if not nodes:
            raise UsageError(f"layout has no {role} node")
        return nodes[0]

    def roles_of(self, name: str) -> list[str]:
        """Roles played by the node called ``name``."""
        return [r for r, ns in self.roles.items() if name in ns]

    def all_names(self, *roles: str) -> list[str]:
        """Distinct node names playing any of ``roles`` (all roles if none given), in order."""
        out: list[str] = []
        for role in roles or tuple(self.roles):
            for n in self.names(role):
                if n not in out:
                    out.append(n)
        return out

    def validate(self, reservation: Reservation, *, require: tuple[str, ...] = ()) -> "Layout":
        """Check every node exists in ``reservation`` and every role in ``require`` is filled."""
        for role, names in self.roles.items():
            for n in names:
                if n not in {x.name for x in reservation.nodes}:
                    raise UsageError(f"layout role {role} names node {n!r}, which reservation "
                                     f"{reservation.name!r} does not have "
                                     f"(nodes: {', '.join(x.name for x in reservation.nodes)})")
        for role in require:
            if not self.roles.get(role):
                raise UsageError(f"layout has no {role} node; add one under 'roles: {role}:'")
        return self

    def to_dict(self) -> dict:
        return {"version": 1, "roles": {r: list(ns) for r, ns in self.roles.items()}}

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))
        return path

    @classmethod
    def from_dict(cls, data, source: str = "<layout>") -> "Layout":
        """Validate a parsed layout; UsageError naming ``source`` otherwise."""
        if not isinstance(data, dict) or not isinstance(data.get("roles"), dict):
            raise UsageError(f"{source}: not a layout (expected 'version: 1' and a 'roles:' mapping)")
        if data.get("version", 1) != 1:
            raise UsageError(f"{source}: layout version {data.get('version')!r} is not supported")
        roles = {}
        for role, names in data["roles"].items():
            if isinstance(names, str):
                names = [names]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise UsageError(f"{source}: role {role} must list node names")
            if role not in ROLES:
                raise UsageError(f"{source}: unknown role {role!r} (known roles: {', '.join(ROLES)})")
            roles[role] = names
        return cls(roles)

    @classmethod
    def load(cls, path) -> "Layout":
        """Read a layout file."""
        return cls.from_dict(read_yaml(path, "layout file"), str(path))

    @classmethod
    def parse(cls, specs: list[str]) -> "Layout":
        """Build a layout from ``role=node1,node2`` strings (CLI ``--role`` options)."""
        roles: dict[str, list[str]] = {}
        for spec in specs:
            role, sep, names = spec.partition("=")
            if not sep or not names:
                raise UsageError(f"--role {spec!r}: expected ROLE=NODE[,NODE...]")
            if role not in ROLES:
                raise UsageError(f"--role {spec!r}: unknown role {role!r} (known roles: {', '.join(ROLES)})")
            roles.setdefault(role, []).extend(n for n in names.split(",") if n)
        return cls(roles)

    @classmethod
    def default(cls, reservation: Reservation) -> "Layout":
        """Compute and storage on separate hosts, as the paper's two clusters (the one layout
        rule sae uses everywhere). Of n nodes the first ``max(1, n // 2)`` store (ceph-osd each;
        ceph-mon/mgr/mds and prometheus on the first), the others compute: the driver and the
        Spark master on the first compute host, a spark-worker on every compute host but the
        driver's when the compute side has more hosts than the storage side and at least 3 (17
        nodes: 8 OSD hosts, a driver host, 8 worker hosts, the thesis's cluster; 9: 4 + 1 + 4;
        3: node1 stores, node2 drives and works, node3 works). Every node is a ceph-client (the
        connector and ceph-fuse run on compute hosts). One node plays every role. No node is a
        ``ceph-rgw``: a Ceph asked for a gateway (``CephOptions.rgw``) runs it on the first storage
        host."""
        names = [n.name for n in reservation.nodes]
        if len(names) == 1:
            storage = compute = names
        else:
            storage, compute = names[:max(1, len(names) // 2)], names[max(1, len(names) // 2):]
        head, driver = storage[0], compute[0]
        own_driver = len(compute) > len(storage) and len(compute) >= 3
        return cls({
            "ceph-mon": [head], "ceph-mgr": [head], "ceph-mds": [head], "ceph-osd": list(storage),
            "prometheus": [head], "spark-master": [driver], "driver": [driver],
            "spark-worker": list(compute[1:] if own_driver else compute), "ceph-client": list(names),
        })

    def host_roles(self) -> dict[str, str]:
        """Node name → ``compute`` (runs Spark: worker, driver or master), ``storage`` (runs a
        Ceph daemon) or ``both``; nodes with neither (e.g. only prometheus) are left out."""
        compute = set(self.all_names("spark-master", "spark-worker", "driver"))
        storage = set(self.all_names("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-rgw"))
        return {n: "both" if n in compute and n in storage else "compute" if n in compute else "storage"
                for n in self.all_names() if n in compute | storage}


def resolve_layout(reservation: Reservation, *, layout_file=None, role_specs=()) -> Layout:
    """The layout a CLI asked for: a file, ``--role`` options, or the default; validated."""
    if layout_file and role_specs:
        raise UsageError("give either --layout FILE or --role options, not both")
    if layout_file:
        layout = Layout.load(layout_file)
    elif role_specs:
        layout = Layout.parse(list(role_specs))
    else:
        layout = Layout.default(reservation)
    return layout.validate(reservation)
