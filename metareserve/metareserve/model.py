"""Reservations: the nodes a user holds, as a versioned YAML file every tool reads.

A reservation lists nodes (how to reach them) and the provider state needed to release
or reattach them. Roles are not part of it: see :mod:`metareserve.layout`.
"""
from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from . import validate
from .capacity import Capacities, online_cpus
from .errors import UsageError

FORMAT_VERSION = 1
MAX_FILE_BYTES = 16 << 20     # reservations, layouts and hosts files are small
ENV_RESERVATION = "SAE_RESERVATION"
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, in C where PyYAML was built with libyaml (about 8x faster)."""
MAX_ALIAS_NODES = 100_000
"""How many nodes aliases (``*name``) may add to a YAML document sae reads: an anchor reused a
few times passes, an alias bomb ("billion laughs": nine lists of nine aliases of the list before)
is refused before anything is built from it."""


@dataclasses.dataclass(frozen=True)
class Node:
    """One reserved machine, identified by how we connect to it.

    ``name`` is the node's name in logs and layouts; ``host``/``port``/``user``/``identity``
    say how to reach it over SSH; ``address`` is its cluster (private) address that daemons
    bind to; ``labels`` are free-form facts (hardware type, site) kept out of the hash.
    """

    name: str
    host: str
    port: int = 22
    user: str = "root"
    identity: str | None = None
    address: str | None = None
    python: str = "python3"
    labels: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        validate.name(self.name, "node name")
        validate.host(self.host)
        validate.port(self.port)
        validate.user(self.user)
        if self.identity is not None:
            validate.path(self.identity, "identity")
        if self.address is not None:
            validate.address(self.address)
        validate.program(self.python, "python")

    @property
    def cluster_address(self) -> str:
        """The private address daemons bind to (falls back to the SSH host)."""
        return self.address or self.host

    def to_dict(self) -> dict:
        """The node as it appears in a reservation file."""
        d = {"name": self.name, "host": self.host, "port": self.port, "user": self.user}
        if self.identity:
            d["identity"] = self.identity
        if self.address:
            d["address"] = self.address
        if self.python != "python3":
            d["python"] = self.python
        if self.labels:
            d["labels"] = dict(self.labels)
        return d


@dataclasses.dataclass(frozen=True)
class CpuAccounting:
    """Per-host CPU accounting of hosts that share one machine (a local cluster): each node's
    cgroup CPU-usage file (nanoseconds, None where the machine has no such cgroup), each node's
    declared cores, a controller-side directory for the exporter that reads them, and the local
    cluster's name."""

    usage_files: dict
    capacity: dict
    controller_dir: Path
    cluster: str

    def exempt(self, pids) -> int:
        """Move ``pids``, monitoring agents on the hosts, out of their hosts' cgroups: out of the
        cores, quota and memory declared for the hosts' own work, and out of their CPU time. How many
        moved (0: all had moved already); run on the controller, as root."""
        from .providers.local import exempt_agents
        return exempt_agents(self.cluster, pids)


@dataclasses.dataclass
class Reservation:
    """A named set of nodes from one provider, plus what that provider needs to release them.

    ``ssh_config`` (optional) is an ssh_config file used for every connection instead of
    ``~/.ssh/config``; ``state_root`` is where per-node state lives on each node.
    """

    name: str
    provider: str
    nodes: list[Node]
    provider_state: dict = dataclasses.field(default_factory=dict)
    ssh_config: str | None = None
    path: Path | None = dataclasses.field(default=None, compare=False)

    def node(self, name: str) -> Node:
        """The node called ``name``; UsageError naming the known nodes otherwise."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise UsageError(f"reservation {self.name!r} has no node {name!r} "
                         f"(nodes: {', '.join(n.name for n in self.nodes)})")

    @property
    def state_root(self) -> str:
        """Directory on every node under which per-node state of this reservation lives."""
        return self.provider_state.get("state_root", f"/var/lib/sae/{self.name}")

    @property
    def reattached(self) -> bool:
        """True when ``reserve`` found these nodes already up and reattached to them (nothing
        new was reserved)."""
        return bool(self.provider_state.get("reattached"))

    @property
    def shares_controller_packages(self) -> bool:
        """True when the nodes share the controller's filesystem and Debian package database
        (a local cluster's network namespaces, which have no route to the package mirrors):
        their packages are installed once, on the controller, as on any real host."""
        return self.provider == "local"

    @property
    def cpu_accounting(self) -> CpuAccounting | None:
        """Per-host CPU accounting when the nodes share one machine (local provider), else None:
        the nodes' own /proc/stat is then theirs alone."""
        if self.provider != "local":
            return None
        st, caps, machine = self.provider_state, self.capacities, len(online_cpus())
        return CpuAccounting(usage_files={n: s.get("cpu_usage_file") for n, s in st["nodes"].items()},
                             capacity={n: caps.of(n).cores(machine) for n in st["nodes"]},
                             controller_dir=Path(st["state_dir"]), cluster=self.name)

    @property
    def capacities(self) -> Capacities:
        """The hosts' declared capacities (cores, memory, link rate) where the provider emulates
        them (a local cluster); empty elsewhere, where hosts have what they have."""
        return Capacities.from_dict(self.provider_state.get("capacities"), f"reservation {self.name!r}")

    def node_dir(self, node: Node | str, component: str) -> str:
        """Per-node state directory for ``component`` (unique even when nodes share a disk)."""
        name = node if isinstance(node, str) else node.name
        return f"{self.state_root}/{name}/{component}"

    def to_dict(self) -> dict:
        d = {"version": FORMAT_VERSION, "name": self.name, "provider": self.provider,
             "nodes": [n.to_dict() for n in self.nodes]}
        if self.ssh_config:
            d["ssh_config"] = self.ssh_config
        d["provider_state"] = self.provider_state
        return d

    def save(self, path: str | os.PathLike) -> Path:
        """Write the reservation file (atomically) and return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))
        tmp.replace(path)
        self.path = path
        return path


_NODE_KEYS = {"name": str, "host": str, "port": int, "user": str, "identity": str,
              "address": str, "python": str, "labels": dict}


def reservation_from_dict(data: Any, source: str = "<reservation>") -> Reservation:
    """Validate a parsed reservation file; UsageError naming ``source`` and the field otherwise."""
    def bad(msg: str) -> UsageError:
        return UsageError(f"{source}: {msg}")

    if not isinstance(data, dict):
        raise bad("not a reservation file (expected a YAML mapping with version, name, provider, nodes)")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise bad(f"reservation format version {version!r} is not supported (this metareserve reads "
                  f"version {FORMAT_VERSION}); re-create it with 'metareserve reserve'")
    unknown = set(data) - {"version", "name", "provider", "nodes", "provider_state", "ssh_config"}
    if unknown:
        raise bad(f"unknown key(s) {', '.join(sorted(unknown))}")
    for key in ("name", "provider"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise bad(f"'{key}' must be a non-empty string")
    from .providers import known   # the providers import this module
    if data["provider"] not in known():
        raise bad(f"provider {data['provider']!r} is not one of {', '.join(known())} (the installed "
                  f"metareserve.providers entry points)")
    try:
        validate.name(data["name"], "reservation name")
        if data.get("ssh_config") is not None:
            validate.path(data["ssh_config"], "ssh_config")
    except UsageError as e:
        raise bad(str(e)) from None
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise bad("'nodes' must be a non-empty list")
    nodes, seen = [], set()
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict):
            raise bad(f"nodes[{i}] must be a mapping")
        for key, value in raw.items():
            if key not in _NODE_KEYS:
                raise bad(f"nodes[{i}]: unknown key {key!r}")
            if not isinstance(value, _NODE_KEYS[key]) or isinstance(value, bool):
                raise bad(f"nodes[{i}].{key} must be {_NODE_KEYS[key].__name__}")
        for key in ("name", "host"):
            if key not in raw:
                raise bad(f"nodes[{i}] lacks '{key}'")
        if raw["name"] in seen:
            raise bad(f"node name {raw['name']!r} appears twice")
        seen.add(raw["name"])
        try:
            nodes.append(Node(**raw))
        except UsageError as e:
            raise bad(f"nodes[{i}]: {e}") from None
    same = same_address([(n.host, n.port) for n in nodes])
    if same:
        first, second = (nodes[i] for i in same)
        raise bad(f"nodes {first.name} and {second.name} are both {first.host}:{first.port}, one machine; "
                  f"give each node its own host or port")
    state = data.get("provider_state") or {}
    if not isinstance(state, dict):
        raise bad("'provider_state' must be a mapping")
    return Reservation(name=data["name"], provider=data["provider"], nodes=nodes,
                       provider_state=state, ssh_config=data.get("ssh_config"))


def same_address(addresses: list[tuple[str, int]]) -> tuple[int, int] | None:
    """The indexes of the first two (host, port) pairs that reach the same sshd (host names
    compared without case), None when every node is its own."""
    seen: dict[tuple[str, int], int] = {}
    for i, (host, port) in enumerate(addresses):
        key = (host.lower().rstrip("."), port)
        if key in seen:
            return seen[key], i
        seen[key] = i
    return None


class AliasExpansion(yaml.YAMLError):
    """A YAML document whose aliases would expand beyond :data:`MAX_ALIAS_NODES` nodes, or into
    themselves."""


def load_yaml(text: str) -> Any:
    """``text`` parsed with the safe loader, its aliases' expansion checked before the document
    is built (:class:`AliasExpansion`); every YAML sae reads goes through here. A document with
    no ``&`` has no anchor, so no alias, and is not counted."""
    loader = SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" not in text:
            return loader.construct_document(node)
        distinct, expanded = _node_counts(node)
        if expanded is None:
            raise AliasExpansion("an alias refers to the node that contains it (a loop)")
        if expanded - distinct > MAX_ALIAS_NODES:
            raise AliasExpansion(f"aliases expand {distinct} nodes into {expanded} (at most {MAX_ALIAS_NODES} more "
                                 f"are read); write the values out")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _node_counts(root: yaml.Node) -> tuple[int, int | None]:
    """(distinct nodes, nodes with every alias expanded or None for a loop) of a composed YAML
    document: each node counted once, bottom up, without recursion."""
    size: dict[int, int] = {}
    inside: set[int] = set()   # nodes whose children are being counted
    stack = [(root, False)]
    while stack:
        node, counted = stack.pop()
        children = [] if isinstance(node, yaml.ScalarNode) else \
            node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
        if counted:
            inside.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
        elif id(node) in inside:
            return len(size), None
        elif id(node) not in size:
            inside.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in children)
    return len(size), size[id(root)]


def read_yaml(path: str | os.PathLike, what: str) -> Any:
    """Parse a YAML file; UsageError naming the file (and line) if missing, unreadable or malformed."""
    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{p}: {what} is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise UsageError(f"{p}: {what} is {st.st_size} bytes; files over {MAX_FILE_BYTES} bytes are refused")
        text = p.read_text()
    except FileNotFoundError:
        raise UsageError(f"{p}: {what} not found") from None
    except UnicodeDecodeError:
        raise UsageError(f"{p}: {what} is not UTF-8 text") from None
    except OSError as e:
        raise UsageError(f"{p}: cannot read {what}: {e.strerror}") from None
    try:
        return load_yaml(text)
    except AliasExpansion as e:
        raise UsageError(f"{p}: YAML refused: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise UsageError(f"{p}: malformed YAML{where}: {getattr(e, 'problem', e)}") from None


def load_reservation(path: str | os.PathLike | None = None) -> Reservation:
    """Read and validate a reservation file (default: ``$SAE_RESERVATION``)."""
    path = path or os.environ.get(ENV_RESERVATION)
    if not path:
        raise UsageError(f"no reservation given: pass --reservation FILE or set {ENV_RESERVATION}")
    data = read_yaml(path, "reservation file (create one with 'metareserve reserve')")
    res = reservation_from_dict(data, str(path))
    res.path = Path(path)
    return res
