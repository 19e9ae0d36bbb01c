"""The local provider: N hosts on this machine, one network namespace each.

Each host gets its own namespace on a private bridge (10.77.K.0/24, K picked free per cluster),
its own sshd with its own host key and hostname, key login with a generated key, and a CPU
cgroup (for per-host CPU accounting). A host's monitoring agents can be moved out of it, into the
cluster's agents cgroup (:func:`exempt_agents`), where no host's limits or CPU time hold them.
Everything lives under ``/var/lib/sae/local/<name>`` (override with ``$SAE_LOCAL_STATE``).

Reserving an existing name reattaches: missing pieces (namespace, sshd) are restored, nothing
else changes; a different node count is refused. ``release`` kills every process of every host
(by namespace and cgroup, the agents' cgroup too), then removes namespaces, bridge, cgroups and
the state directory.
"""
from __future__ import annotations

import fcntl
import ipaddress
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..capacity import Capacities, HostCapacity
from ..errors import NothingToDo, OperationalError, UsageError
from ..log import node_log
from ..model import Node, Reservation, load_reservation
from ..remote import node_agent
from ..remote.prelude import pid_alive, read_pid, stop_pids
from . import Provider
from . import cgroups
from .local_requirements import check_machine, require
from .local_shape import apply_link

PACKAGES = ["openssh-server", "openssh-client", "iproute2", "util-linux", "rsync", "python3", "procps"]
SSHD = "/usr/sbin/sshd"
MAX_NODES = 200


def state_base() -> Path:
    return Path(os.environ.get("SAE_LOCAL_STATE", "/var/lib/sae/local"))


def _sh(*argv, check=True, stage="local", node=None) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise OperationalError(f"[{node or 'local'} {stage}] '{' '.join(argv)}' failed: "
                               f"{(r.stderr or r.stdout).strip().splitlines()[-1:] or r.returncode}")
    return r


class LocalProvider(Provider):
    """Network-namespace hosts on this machine. Needs root."""

    name = "local"
    max_nodes = MAX_NODES

    def check_request(self, *, name: str, nodes: int | None = None, **options) -> None:
        _require_root()
        super().check_request(name=name, nodes=nodes)
        _check_name(name)

    def reserve(self, *, name: str, nodes: int | None = 3, capacities: Capacities | None = None,
                **options) -> Reservation:
        """Create (or reattach to) local cluster ``name`` with ``nodes`` hosts.

        ``capacities`` (hosts ``node1``..``nodeN``) are put in force on the hosts and recorded in
        the reservation; on a reattach they replace the recorded ones (None keeps those). A new
        cluster whose bring-up fails is released again, so a failed reserve leaves nothing behind.
        """
        if options:
            raise UsageError(f"local provider: unknown option(s) {', '.join(sorted(options))}")
        _require_root()
        nodes = 3 if nodes is None else nodes
        if not (1 <= nodes <= MAX_NODES):
            raise UsageError(f"local provider: --nodes must be between 1 and {MAX_NODES}, not {nodes}")
        _check_name(name)
        _check_capacities(capacities, node_names(nodes))
        require(check_machine(capacities=(capacities or Capacities()).hosts.values()), f"local reserve {name}")
        _ensure_packages()
        base = state_base()
        base.mkdir(parents=True, exist_ok=True)
        with open(base / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            sdir = base / name
            if (sdir / "reservation.yaml").exists():
                res = load_reservation(sdir / "reservation.yaml")
                if len(res.nodes) != nodes:
                    raise UsageError(f"local cluster {name!r} already exists with {len(res.nodes)} nodes; "
                                     f"release it first ('metareserve release --reservation "
                                     f"{sdir / 'reservation.yaml'}') or ask for {len(res.nodes)}")
                if capacities is not None:
                    _record_capacities(res, capacities)
                changed = self._bring_up(res)
                res.provider_state["reattached"] = True
                if not changed:
                    node_log(None, "local reserve", f"local cluster {name!r} already up: reattached, nothing changed")
                return res
            res = self._create(name, nodes, sdir, capacities or Capacities())
            # Saved before the lock is released: the file claims the subnet for concurrent reserves
            # (and lets 'release' clean up if bring-up fails).
            res.save(sdir / "reservation.yaml")
            try:
                self._bring_up(res)
            except BaseException:
                node_log(None, "local reserve", f"bring-up of {name!r} failed: releasing what was made")
                self.release(res)
                raise
        return res

    def shape(self, reservation: Reservation, capacities: Capacities) -> bool:
        """Put ``capacities`` in force on a live local cluster (cores, quota, memory, link rates;
        hosts not named become unlimited) and record them; True if anything changed."""
        _require_root()
        _check_name(reservation.name)
        _check_capacities(capacities, [n.name for n in reservation.nodes])
        record = state_base() / reservation.name / "reservation.yaml"
        if not record.exists():
            raise UsageError(f"[local shape] local cluster {reservation.name!r} is not up; reserve it first")
        with open(state_base() / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            res = load_reservation(record)
            _check_recorded_names(res.name, res.provider_state)
            _record_capacities(res, capacities)
            changed = False
            for node in res.nodes:
                changed |= self._apply(res, node, capacities.of(node.name))
        for key in ("capacities", "enforced"):
            reservation.provider_state[key] = res.provider_state.get(key, {})
        return changed

    def _apply(self, res: Reservation, node: Node, cap: HostCapacity) -> bool:
        info = res.provider_state["nodes"][node.name]
        h = hierarchy(res.provider_state)
        agents = cgroups.members_of(h, agents_cgroup(res.name))
        changed, how = cgroups.apply(h, info["cgroup"], cap, pids=_netns_pids(info) - agents)
        changed |= apply_link(node.name, info["netns"], info["veth"], cap.link_rate)
        enforced = res.provider_state.setdefault("enforced", {})
        if enforced.get(node.name) != how.by:
            enforced[node.name] = how.by
            res.save(state_base() / res.name / "reservation.yaml")
        if changed:
            node_log(node.name, "local shape", cap.describe() + (f" ({how.text()})" if how.by else ""))
        for what, why in how.missing.items():
            node_log(node.name, "local shape", f"declared {what} {why}")
        return changed

    def _create(self, name: str, count: int, sdir: Path, capacities: Capacities) -> Reservation:
        k = _free_subnet_index(state_base())
        h = cgroups.detect()
        net = ipaddress.ip_network(f"10.77.{k}.0/24")
        ssh_dir = sdir / "ssh"
        ssh_dir.mkdir(parents=True, exist_ok=True)
        key = ssh_dir / "id_ed25519"
        if not key.exists():
            _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"sae-{name}", "-f", str(key))
        shutil.copy(f"{key}.pub", ssh_dir / "authorized_keys")
        os.chmod(ssh_dir / "authorized_keys", 0o600)
        nodes, netns = [], {}
        config = ["Host *", "  User root", f"  IdentityFile {key}", "  IdentitiesOnly yes",
                  f"  UserKnownHostsFile {ssh_dir / 'known_hosts'}", "  StrictHostKeyChecking accept-new",
                  "  BatchMode yes", "  ConnectTimeout 10", "  LogLevel ERROR"]
        for i, node_name in enumerate(node_names(count), 1):
            ip = str(net.network_address + 10 + i)
            nodes.append(Node(name=node_name, host=ip, port=22, user="root", identity=str(key),
                              address=ip, labels={"provider": "local", "cluster": name}))
            netns[node_name] = {"netns": f"sae-{name}-{node_name}", "veth": f"sae{k}v{i}",
                                "cgroup": f"sae-{name}-{node_name}",
                                "cpu_usage_file": h.usage_file(f"sae-{name}-{node_name}")}
        (ssh_dir / "ssh_config").write_text("\n".join(config) + "\n")
        state = {"state_dir": str(sdir), "state_root": str(sdir / "nodes"), "subnet": str(net),
                 "gateway": str(net.network_address + 1), "bridge": f"saebr{k}", "nodes": netns,
                 "cgroup_mode": h.mode, "capacities": capacities.to_dict()}
        return Reservation(name=name, provider="local", nodes=nodes, provider_state=state,
                           ssh_config=str(ssh_dir / "ssh_config"))

    def _bring_up(self, res: Reservation) -> bool:
        """Create whatever is missing (bridge, namespaces, cgroups, sshd); True if anything changed."""
        st = res.provider_state
        changed = False
        bridge, prefixlen = st["bridge"], ipaddress.ip_network(st["subnet"]).prefixlen
        if _sh("ip", "link", "show", bridge, check=False).returncode != 0:
            _sh("ip", "link", "add", bridge, "type", "bridge")
            _sh("ip", "addr", "add", f"{st['gateway']}/{prefixlen}", "dev", bridge)
            changed = True
        _sh("ip", "link", "set", bridge, "up")
        Path("/run/sshd").mkdir(exist_ok=True)
        capacities = res.capacities
        for node in res.nodes:
            info = st["nodes"][node.name]
            changed |= self._node_up(res, node, info, bridge, prefixlen, capacities.of(node.name))
        return changed

    def _node_up(self, res: Reservation, node: Node, info: dict, bridge: str, prefixlen: int,
                 cap: HostCapacity) -> bool:
        changed = False
        ns, veth = info["netns"], info["veth"]
        if ns not in _sh("ip", "netns", "list").stdout.split():
            _sh("ip", "netns", "add", ns, node=node.name, stage="netns")
            changed = True
        if _sh("ip", "link", "show", veth, check=False).returncode != 0:
            _sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
                node=node.name, stage="netns")
            _sh("ip", "link", "set", veth, "master", bridge, "up")
            _sh("ip", "-n", ns, "addr", "add", f"{node.address}/{prefixlen}", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            changed = True
        changed |= self._apply(res, node, cap)
        ndir = Path(res.node_dir(node, "sshd"))
        pid = read_pid(ndir / "sshd.pid")
        if pid and pid_alive(pid) and node_agent.port_open(node.address, 22):
            return changed
        self._start_sshd(res, node, info, ndir)
        return True

    def _start_sshd(self, res: Reservation, node: Node, info: dict, ndir: Path) -> None:
        ndir.mkdir(parents=True, exist_ok=True)
        hostkey = ndir / "ssh_host_ed25519_key"
        if not hostkey.exists():
            _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey))
        ssh_dir = Path(res.ssh_config).parent
        cfg = ndir / "sshd_config"
        cfg.write_text("\n".join([
            f"ListenAddress {node.address}", "Port 22", f"HostKey {hostkey}", f"PidFile {ndir / 'sshd.pid'}",
            f"AuthorizedKeysFile {ssh_dir / 'authorized_keys'}", "PermitRootLogin prohibit-password",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            "Subsystem sftp internal-sftp", "MaxStartups 100:30:200", "MaxSessions 100",
            "AcceptEnv LANG LC_*", "PrintMotd no", ""]))
        _sh(SSHD, "-t", "-f", str(cfg), node=node.name, stage="sshd")
        h = hierarchy(res.provider_state)
        cap = res.capacities.of(node.name)
        cpus = (cap.cpus.cpus if cap.cpus else None) if cgroups.cores_by_affinity(h) else None
        script = (f"hostname {shlex.quote(node.name)} && exec {SSHD} -f {shlex.quote(str(cfg))} "
                  f"-E {shlex.quote(str(ndir / 'sshd.log'))}")
        subprocess.run(["ip", "netns", "exec", info["netns"], "unshare", "--uts", "sh", "-c", script],
                       preexec_fn=lambda: cgroups.join(h, info["cgroup"], cpus), check=True, capture_output=True, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if node_agent.port_open(node.address, 22):
                node_log(node.name, "local reserve", f"sshd up on {node.address}")
                return
            time.sleep(0.1)
        raise OperationalError(f"[{node.name} sshd] sshd did not start listening on {node.address}:22; "
                               f"see {ndir / 'sshd.log'}")

    def release(self, reservation: Reservation) -> str:
        """Kill every process of every host, remove namespaces, bridge, cgroups and state.

        Acts only on what the provider recorded when it created the cluster (its own copy of the
        reservation under the state root), never on names or paths a reservation file states."""
        _require_root()
        _check_name(reservation.name)
        sdir = state_base() / reservation.name
        record = sdir / "reservation.yaml"
        if not record.exists():
            ours = [ns for ns in _sh("ip", "netns", "list").stdout.split() if ns.startswith(f"sae-{reservation.name}-node")]
            if not ours:
                raise NothingToDo(f"local cluster {reservation.name!r} is already released")
            raise OperationalError(f"[local release] {record} is missing but namespaces {', '.join(ours)} exist; "
                                   f"remove them with 'ip netns del'")
        st = load_reservation(record).provider_state
        given = {k: v for k, v in reservation.provider_state.items() if k not in _MUTABLE_STATE}
        if given != {k: v for k, v in st.items() if k not in _MUTABLE_STATE}:
            raise UsageError(f"{reservation.path or reservation.name}: provider_state differs from the local "
                             f"provider's record {record}; release with that file")
        _check_recorded_names(reservation.name, st)
        killed, h = 0, hierarchy(st)
        for name, info in st.get("nodes", {}).items():
            killed += _kill_node_processes(h, info)
        agents = sorted(cgroups.members_of(h, agents_cgroup(reservation.name)))   # none, but for a straggler
        stop_pids(agents, 0.0, signal.SIGKILL)
        killed += len(agents)
        for name, info in st.get("nodes", {}).items():
            _sh("ip", "netns", "del", info["netns"], check=False)
            _sh("ip", "link", "del", info["veth"], check=False)
            cgroups.remove(h, info["cgroup"])
        cgroups.remove(h, agents_cgroup(reservation.name))
        _sh("ip", "link", "del", st["bridge"], check=False)
        shutil.rmtree(sdir, ignore_errors=True)
        return (f"released local cluster {reservation.name!r}: {len(st.get('nodes', {}))} hosts, "
                f"{killed} processes stopped, namespaces, bridge, cgroups and {sdir} removed")


_MUTABLE_STATE = ("reattached", "capacities", "enforced")
"""provider_state keys that change while a cluster lives (release compares the others)."""


def node_names(count: int) -> list[str]:
    """The names of a local cluster's hosts."""
    return [f"node{i}" for i in range(1, count + 1)]


def _check_capacities(capacities: Capacities | None, nodes: list[str]) -> None:
    if capacities is None:
        return
    if not isinstance(capacities, Capacities):
        raise UsageError(f"local provider: capacities must be a metareserve Capacities, not {capacities!r}")
    unknown = sorted(set(capacities.hosts) - set(nodes))
    if unknown:
        raise UsageError(f"local provider: capacities name host(s) {', '.join(unknown)}; the cluster has "
                         f"{', '.join(nodes)}")


def _record_capacities(res: Reservation, capacities: Capacities) -> None:
    """Make ``capacities`` the reservation's and save its record."""
    res.provider_state["capacities"] = capacities.to_dict()
    res.save(state_base() / res.name / "reservation.yaml")


def _check_name(name) -> None:
    if not isinstance(name, str) or not name or len(name) > 20 or not name.replace("-", "").isalnum() \
            or not name.isascii() or name.startswith("-"):
        raise UsageError(f"local provider: name {name!r} must be 1-20 ASCII letters, digits or '-'")


def _check_recorded_names(name: str, st: dict) -> None:
    """Every name in the provider's record follows the provider's own patterns (so even a record
    edited by hand cannot point release at another interface, namespace, cgroup or directory)."""
    k = ipaddress.ip_network(st["subnet"]).network_address.packed[2]
    expected_dir = str(state_base() / name)
    ok = (st.get("state_dir") == expected_dir and st.get("state_root") == f"{expected_dir}/nodes"
          and st.get("bridge") == f"saebr{k}"
          and all(info.get("netns") == f"sae-{name}-{node}" and info.get("cgroup") == f"sae-{name}-{node}"
                  and re.fullmatch(rf"sae{k}v[0-9]+", str(info.get("veth"))) and re.fullmatch(r"node[0-9]+", node)
                  for node, info in st.get("nodes", {}).items()))
    if not ok:
        raise UsageError(f"[local release] the record of {name!r} names resources that are not the local "
                         f"provider's (sae-{name}-nodeN, saebr{k}, {expected_dir}); nothing was touched")


def _require_root() -> None:
    if os.geteuid() != 0:
        raise OperationalError("[local reserve] the local provider needs root (namespaces, cgroups, "
                               "sshd): run as root or with sudo")


def _ensure_packages() -> None:
    missing = node_agent.missing_packages(PACKAGES)
    if missing:
        node_log(None, "local install", f"installing {' '.join(missing)}")
        try:
            node_agent.apt_install(missing)
        except RuntimeError as e:
            raise OperationalError(f"[local install] {e}") from None


def _free_subnet_index(base: Path) -> int:
    used = set()
    for f in base.glob("*/reservation.yaml"):
        try:
            used.add(int(ipaddress.ip_network(load_reservation(f).provider_state["subnet"]).network_address.packed[2]))
        except Exception:
            continue
    addrs = _sh("ip", "-4", "-o", "addr").stdout
    for k in range(1, 255):
        if k not in used and f"10.77.{k}." not in addrs:
            return k
    raise OperationalError("[local reserve] no free 10.77.K.0/24 subnet left; release old local clusters")


def agents_cgroup(name: str) -> str:
    """The cgroup of local cluster ``name``'s monitoring agents (see :func:`exempt_agents`)."""
    return f"sae-{name}-agents"


def exempt_agents(name: str, pids) -> int:
    """Move ``pids``, monitoring agents running on hosts of local cluster ``name``, out of their
    hosts' cgroups into the cluster's agents cgroup: on a real machine they would take a sliver of
    its cores, not a share of a host's quota, and their CPU, memory and I/O are not the host's work.
    How many moved (0: all had moved already); UsageError, nothing moved, for a pid that is not a
    process of the cluster's hosts."""
    _require_root()
    _check_name(name)
    record = state_base() / name / "reservation.yaml"
    if not record.exists():
        raise UsageError(f"[local exempt] local cluster {name!r} is not up; reserve it first")
    st = load_reservation(record).provider_state
    _check_recorded_names(name, st)
    namespaces = {_netns_inode(f"/run/netns/{info['netns']}") for info in st["nodes"].values()} - {None}
    pids = {int(p) for p in pids if os.path.exists(f"/proc/{int(p)}")}    # one exited meanwhile is left
    strangers = sorted(p for p in pids if _netns_inode(f"/proc/{p}/ns/net") not in namespaces)
    if strangers:
        raise UsageError(f"[local exempt] pid(s) {', '.join(map(str, strangers))} are not processes of "
                         f"local cluster {name!r}'s hosts; nothing moved")
    return cgroups.exempt(hierarchy(st), agents_cgroup(name), pids)


def hierarchy(state: dict) -> cgroups.Hierarchy:
    """The cgroup hierarchy a local cluster was made on (its record's ``cgroup_mode``)."""
    return cgroups.detect(state.get("cgroup_mode"))


def _netns_inode(path: str) -> tuple[int, int] | None:
    """The network namespace a ``/proc/<pid>/ns/net`` or ``/run/netns/<name>`` file stands for."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _netns_pids(info: dict) -> set[int]:
    r = _sh("ip", "netns", "pids", info["netns"], check=False)
    return {int(p) for p in r.stdout.split() if p.isdigit()}


def _node_pids(h: cgroups.Hierarchy, info: dict) -> set[int]:
    pids = _netns_pids(info)
    for d in h.dirs(info["cgroup"]):
        try:
            pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        except OSError:
            pass
    pids.discard(os.getpid())
    return pids


def _kill_node_processes(h: cgroups.Hierarchy, info: dict, grace: float = 10.0) -> int:
    """Stop every process of the host (SIGTERM, SIGKILL after ``grace``), then SIGKILL any started
    meanwhile; returns how many there were."""
    pids = sorted(p for p in _node_pids(h, info) if pid_alive(p))
    stop_pids(pids, grace)
    stop_pids(_node_pids(h, info), 0.0, signal.SIGKILL)
    return len(pids)
