"""The public API: :class:`CephCluster`, one Ceph cluster over a reservation and a layout."""
from __future__ import annotations

import signal
import time
from importlib import resources

from metareserve import (Cluster, Layout, OperationalError, RemoteError, Reservation, Service, StageReport, UsageError,
                         node_agent)

from . import counters, ops, remote, rgw
from .config import KEYRINGS, OPS_LOG, Topology, pg_counts
from .counters import CounterSnapshot
from .ops import OpCounts
from .options import CephOptions
from .rgw import S3Credentials, S3User, S3Users
from .status import CephStatus, DaemonStatus
from .users import CephUser, ClientUsers


class CephCluster(Service):
    """A Ceph cluster (mon, mgr, OSDs, MDS, CephFS and the ``sae`` object class) on a reservation.

    Each method runs its stage on every node concerned in parallel and is idempotent. All state
    lives under ``reservation.node_dir(node, "ceph")`` on each node. ``cluster`` (an open
    :class:`metareserve.Cluster`) is reused when given; otherwise one is opened lazily and closed by
    :meth:`close` (or the ``with`` block).
    """

    class_name = "sae"

    def __init__(self, reservation: Reservation, layout: Layout | None = None,
                 options: CephOptions | None = None, *, cluster=None):
        super().__init__(reservation, layout, cluster=cluster)
        self.options = options or CephOptions()
        self.topology = Topology.from_layout(reservation, self.layout, self.options)

    @property
    def fs_name(self) -> str:
        return self.options.fs_name

    @property
    def data_pool(self) -> str:
        return f"{self.options.fs_name}_data"

    @property
    def metadata_pool(self) -> str:
        return f"{self.options.fs_name}_metadata"

    def pg_nums(self) -> dict[str, int]:
        """The CephFS pools' computed pg_num (:func:`config.pg_counts`), metadata pool first."""
        o = self.options
        data, meta = pg_counts(self.topology.num_osds, replicas=o.replicas, pgs_per_osd=o.pgs_per_osd)
        return {self.metadata_pool: meta, self.data_pool: data}

    @property
    def users(self) -> ClientUsers:
        """The cephx client users and their caps (``users.scan.id``, ``users.fs_read``, ...); with
        cephx each one's keyring is at :meth:`keyring_path` on every ceph-client node, and the
        client ceph.conf names it, so ``--id``/``rados_create(id)`` alone selects the user."""
        return ClientUsers.of(self.data_pool, self.class_name)

    def keyring_path(self, node: str, user: CephUser) -> str:
        """Path on ``node`` of ``user``'s keyring (0600; ``client.admin``'s is the state dir's ``keyring``)."""
        if user.id == "admin":
            return f"{self.state_dir(node)}/keyring"
        return f"{self.state_dir(node)}/{KEYRINGS}/{user.entity}.keyring"

    @property
    def s3_users(self) -> S3Users:
        """The gateway's S3 users (``s3_users.writer``, ``s3_users.reader``); with a gateway each
        one's credentials file is at :meth:`s3_credentials_path` on the gateway and client nodes."""
        return S3Users()

    def s3_credentials_path(self, node: str, user: S3User) -> str:
        """Path on ``node`` of ``user``'s S3 credentials (0600, AWS shared-credentials format: a
        process there sets ``AWS_SHARED_CREDENTIALS_FILE`` to it; the keys never go on a command line)."""
        return f"{self.state_dir(node)}/{rgw.S3_DIR}/{user.id}.credentials"

    def shared_s3_credentials(self, user: S3User) -> str:
        """One path that names ``user``'s credentials file on every node
        :meth:`link_s3_credentials` was given (e.g. ``AWS_SHARED_CREDENTIALS_FILE`` for Spark
        executors wherever they run)."""
        return f"{self.reservation.state_root}/s3-{user.id}.credentials"

    def link_s3_credentials(self, nodes: list[str], user: S3User | None = None) -> StageReport:
        """Point :meth:`shared_s3_credentials` at each node's :meth:`s3_credentials_path` of
        ``user`` (default ``s3_users.writer``; gateway or client nodes; idempotent)."""
        user = user or self.s3_users.writer
        if not self.topology.rgws:
            raise UsageError("this Ceph runs no RADOS Gateway: set CephOptions.rgw (or a 'ceph-rgw' layout role) and start")
        link = self.shared_s3_credentials(user)
        report = StageReport("ceph-rgw credentials link", details={"path": link})
        valid = sorted({self.s3_credentials_path(n, user) for n in nodes})
        for node in nodes:   # one by one: local-cluster nodes share the link
            now = self.cluster.call(remote, "link_conf", link, self.s3_credentials_path(node, user), valid,
                                    nodes=[node], stage=report.stage)[node]
            report.add(node, now, f"linked {link}" if now else f"{link} current")
        return report

    def s3_credentials(self, user: S3User) -> S3Credentials:
        """``user``'s keys and the gateway's endpoint, read from the first gateway node (held in
        memory here, never written on the controller)."""
        return rgw.credentials(self, user)

    def s3_endpoint_of(self, node: str) -> str:
        """The S3 endpoint of ``node``'s gateway: ``http://<cluster address>:<rgw_port>``."""
        return f"http://{self.reservation.node(node).cluster_address}:{self.options.rgw_port}"

    @property
    def s3_tls_endpoint(self) -> str:
        """The first gateway's S3 endpoint over TLS: ``https://<cluster address>:<rgw_tls_port>``,
        with the certificate :meth:`s3_certificate` (UsageError without a gateway)."""
        self.s3_endpoint   # UsageError without a gateway
        return f"https://{self.reservation.node(self.topology.rgws[0]).cluster_address}:{self.options.rgw_tls_port}"

    def s3_certificate(self) -> str:
        """The first gateway's self-signed TLS certificate (PEM; public), for clients to trust."""
        return rgw.certificate(self)

    @property
    def s3_endpoint(self) -> str:
        """The first gateway's S3 endpoint (UsageError without a gateway)."""
        if not self.topology.rgws:
            raise UsageError("this Ceph runs no RADOS Gateway: set CephOptions.rgw (or a 'ceph-rgw' layout role)")
        return self.s3_endpoint_of(self.topology.rgws[0])

    def create_bucket(self, name: str, user: S3User | None = None, *,
                      readers: list[S3User] | None = None) -> StageReport:
        """Make S3 bucket ``name`` owned by ``user`` (default ``s3_users.writer``) unless it is,
        and let ``readers`` (default ``[s3_users.reader]``) get, head and list it (a bucket
        policy); "no changes" when both hold. A bad name is a UsageError before anything is sent."""
        users = self.s3_users
        return rgw.create_bucket(self, name, user or users.writer, [users.reader] if readers is None else readers)

    def remove_bucket(self, name: str) -> StageReport:
        """Remove S3 bucket ``name`` with its objects and incomplete multipart uploads (as
        client.admin, on the first mon: no gateway need run); "no changes" when there is none.
        A bad name is a UsageError before anything is sent."""
        rgw.check_bucket(name)
        report = StageReport("ceph-rgw bucket removal", details={"bucket": name})
        got = self.probe("remove_bucket", stage=report.stage, bucket=name)
        report.add(self.topology.mons[0], got["existed"],
                   f"bucket {name} removed ({_listed(got['objects'], got['named'], 'objects')})"
                   if got["existed"] else f"no bucket {name}")
        return report

    def remove_tree(self, path: str) -> StageReport:
        """Remove CephFS directory ``path`` (absolute, not the root) and everything under it, as
        client.admin on the first mon; "no changes" when it is not there."""
        if not isinstance(path, str) or not path.startswith("/") or not path.strip("/") \
                or any(part in (".", "..") for part in path.split("/")):
            raise UsageError(f"CephFS path {path!r}: give an absolute directory below the root, without '.' or '..'")
        report = StageReport("cephfs removal", details={"path": path})
        got = self.probe("remove_tree", stage=report.stage, fs_name=self.fs_name, path=path)
        report.add(self.topology.mons[0], got["existed"],
                   f"removed CephFS {path} ({_listed(got['files'], got['named'], 'files')})"
                   if got["existed"] else f"no CephFS {path}")
        return report

    def state_dir(self, node: str) -> str:
        """Where this cluster's state lives on ``node``."""
        return self.reservation.node_dir(node, "ceph")

    def conf_path(self, node: str) -> str:
        return f"{self.state_dir(node)}/ceph.conf"

    def client_conf(self, node: str) -> str:
        """Path on ``node`` of a ceph.conf usable by librados, libcephfs, ``ceph``, ``rados`` and
        ceph-fuse there (every user's keyring referenced, ``rados_osd_op_timeout`` set).

        Raises UsageError if ``node`` has no Ceph role or client role in the layout.
        """
        if node not in self.topology.nodes:
            raise UsageError(f"node {node!r} is neither a Ceph daemon node nor a ceph-client in the layout; "
                             "add it under 'ceph-client'")
        return self.conf_path(node)

    @property
    def client_python(self) -> str:
        """The Python on every node with Ceph's packages (servers and clients) that imports
        Debian's ``rados`` and ``cephfs`` modules."""
        return remote.SYSTEM_PYTHON

    @property
    def shared_client_conf(self) -> str:
        """One path that names a client ceph.conf on every node :meth:`link_client_conf` was
        given (e.g. one ``CEPH_CONF`` for Spark executors wherever they run)."""
        return f"{self.reservation.state_root}/ceph-client.conf"

    def link_client_conf(self, nodes: list[str]) -> StageReport:
        """Point :attr:`shared_client_conf` at each node's :meth:`client_conf` (idempotent)."""
        report = StageReport("ceph client conf", details={"path": self.shared_client_conf})
        valid = sorted({self.client_conf(n) for n in nodes})
        for node in nodes:   # one by one: local-cluster nodes share the link
            now = self.cluster.call(remote, "link_conf", self.shared_client_conf, self.client_conf(node), valid,
                                    nodes=[node], stage=report.stage)[node]
            report.add(node, now, f"linked {self.shared_client_conf}" if now else f"{self.shared_client_conf} current")
        return report

    def ops_log_path(self, node: str) -> str:
        """The ops log of ``node``'s gateway: one JSON entry per S3 request (:mod:`rados_deploy.ops`)."""
        return f"{self.state_dir(node)}/log/{OPS_LOG}"

    def log_path(self, node: str, daemon: str) -> str:
        return f"{self.state_dir(node)}/log/ceph-{daemon}.log"

    def probe(self, fn: str, *, node: str | None = None, stage: str, timeout: float = 600, **kwargs):
        """Run a :mod:`rados_deploy.probe` query on ``node`` (default: the first mon)."""
        node = node or self.topology.mons[0]
        script = resources.files(__package__).joinpath("probe.py").read_text()
        kwargs.setdefault("conf", self.conf_path(node))
        return self.cluster.call(remote, "probe", script, fn, kwargs, timeout, nodes=[node], stage=stage,
                                 timeout=timeout + 60)[node]

    def daemon_facts(self, nodes=None, *, stage: str, ports: bool = False) -> dict:
        """Per node: remote.facts (pids of the layout's daemons, bootstrap marker, OSD ids, ...)."""
        topo = self.topology
        nodes = nodes or topo.nodes

        def kwargs(n):
            daemons = topo.daemons(n.name) + topo.gateways(n.name)
            binaries = sorted({binary(d) for d in daemons} | {"ceph"})
            return {"daemons": daemons, "binaries": binaries,
                    "ports": [[n.cluster_address, p] for p in self.fixed_ports(n.name)] if ports else []}
        return self.cluster.call(remote, "facts", nodes=nodes, stage=stage,
                                 per_node=lambda n: dict(kwargs(n), state=self.state_dir(n.name)))

    def fixed_ports(self, node: str) -> list[int]:
        """The fixed ports ``node``'s daemons bind (mon v2/v1, the mgr's prometheus module, the gateway's two)."""
        o, topo = self.options, self.topology
        mon = [o.mon_port, o.mon_v1_port] if node in topo.mons else []
        mgr = [o.mgr_prometheus_port] if node in topo.mgrs and o.mgr_prometheus else []
        return [p for p in mon + mgr + ([o.rgw_port, o.rgw_tls_port] if node in topo.rgws else []) if p]

    def start_daemon(self, node: str, daemon: str, *, stage: str) -> dict:
        """Start one daemon (``osd.3``, ``rgw.node1``) on ``node`` unless running; foreground
        (``-f``), by pid."""
        kind, ident = daemon.split(".", 1)
        state = self.state_dir(node)
        env = {"CEPH_CONF": self.conf_path(node)}
        if kind == "osd":
            env["ARROW_DEFAULT_MEMORY_POOL"] = "system"
        who = ["-n", f"client.rgw.{ident}"] if kind == "rgw" else ["-i", ident]
        argv = [binary(daemon), "-f", "-c", self.conf_path(node), *who]
        return self.cluster.call(node_agent, "start_daemon", argv, f"{state}/run/ceph-{daemon}.pid",
                                 f"{state}/log/{daemon}.out", env=env, nodes=[node], stage=stage)[node]

    def stop_daemon(self, node: str, daemon: str, *, stage: str, kill: bool = False) -> dict:
        """SIGTERM one daemon by pid (SIGKILL after 30 s, or at once with ``kill``)."""
        pidfile = f"{self.state_dir(node)}/run/ceph-{daemon}.pid"
        return self.cluster.call(node_agent, "stop_daemon", pidfile, 30.0, signal.SIGKILL if kill else signal.SIGTERM,
                                 nodes=[node], stage=stage)[node]

    def mark_down(self, osds: list[str], *, stage: str) -> None:
        """Mark OSDs (``["osd.1"]``) down in the osdmap now, so failure reports about their old
        instance cannot mark a restarted one down after the cluster looked ready."""
        if osds:
            self.probe("quorum", stage=stage, mons=self.topology.mons, wait=60,
                       commands=[{"prefix": "osd down", "ids": [d.split(".", 1)[1] for d in osds]}])

    def check_alive(self, expected: dict[str, list[str]], *, stage: str) -> None:
        """Raise a RemoteError naming host, daemon and its last log line for any of ``expected``
        ({node: [daemon]}) whose process is gone."""
        facts = self.daemon_facts(list(expected), stage=stage)
        for node, names in expected.items():
            for name in names:
                if not facts[node]["daemons"][name]["alive"]:
                    raise self.daemon_error(node, name)

    def daemon_error(self, node: str, daemon: str) -> RemoteError:
        """The error for a daemon that exited: its last log line and where the log is."""
        state = self.state_dir(node)
        tail = []
        for path in (f"{state}/log/{daemon}.out", self.log_path(node, daemon)):
            tail = self.cluster.call(remote, "log_tail", path, 2, nodes=[node], stage="log")[node]
            if tail:
                break
        return RemoteError(node, f"ceph-{daemon.split('.')[0]} start", f"{daemon} exited",
                           stderr_tail="\n".join(tail),
                           hint=f"see {self.log_path(node, daemon)}")

    # -- stages -------------------------------------------------------------------------------
    def install(self) -> StageReport:
        """Install the Debian packages each node needs: server packages on daemon nodes, build
        headers, a compiler and the venv of the class's pyarrow on OSD nodes (for the object
        class), client packages on clients. Runs on every Ceph node in parallel under a
        machine-wide dpkg lock."""
        from .stages import install
        return install(self)

    def start(self) -> StageReport:
        """Bootstrap the cluster (first time) or start whatever daemon is not running, then wait for
        HEALTH_OK with every PG active+clean. ``details["bringup_seconds"]`` is the time taken."""
        from .bootstrap import start
        return start(self)

    def install_class(self, *, source_dir=None) -> StageReport:
        """Build the ``sae`` object class (all ``cls/*.cc``, or ``source_dir``) against pyarrow's Arrow
        on the OSD nodes, install it into every OSD's class dir, restart OSDs that loaded an older
        copy, and verify ``version`` answers through every OSD."""
        from .objclass import install_class
        return install_class(self, source_dir=source_dir)

    def install_scan_library(self, nodes: list[str]) -> StageReport:
        """Build the class's scan as a client library on ``nodes`` (Ceph nodes or ceph-clients of
        the layout): ``libsae_scan.so``, whose C call ``sae_scan_local`` scans an object in memory
        as the class scans it in an OSD and returns the class's reply (scanlib/local.cc). One
        path on every node, ``details["path"]``; built once per source hash and ``class_arrow``."""
        from .objclass import install_scan_library
        return install_scan_library(self, nodes)

    def versions(self) -> dict[str, dict]:
        """``{node: {"ceph": "ceph version ..."}}`` on every Ceph node, for a run's provenance
        (``"unavailable: ..."`` where the command fails; never raises for a node)."""
        nodes = self.layout.all_names("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-rgw", "ceph-client")
        r = self.cluster.run(["ceph", "--version"], nodes=nodes, stage="ceph versions", check=False, timeout=60)
        return {n: {"ceph": f"unavailable: {o}" if isinstance(o, BaseException) else o["stdout"].strip()
                    if o.get("rc") == 0 else f"unavailable: {(o.get('stderr') or '').strip()[:200]}"}
                for n, o in r.items()}

    def evict_dead_clients(self) -> list[str]:
        """End the CephFS sessions of library clients whose process is gone (a killed Spark
        driver's, :mod:`rados_deploy.sessions`), so that no client needing what they held waits
        for the MDS to time them out (~60 s); returns them as ``client.<id> (pid <pid> on <node>)``."""
        from .sessions import evict_dead_clients
        return [str(s) for evicted in evict_dead_clients(self).values() for s in evicted]

    def placement(self, path: str, *, suffixes: tuple[str, ...] = (),
                  stage: str = "ceph placement") -> dict[str, dict]:
        """Where the data under CephFS ``path`` lives: ``{"osd.<id>": {"objects", "bytes", "pgs"}}``
        for every OSD, counting each RADOS object once (hard links share it) at its primary OSD,
        and the data pool's placement groups each OSD is primary of. With ``suffixes``, only files
        whose names end in one of them count."""
        got = self.probe("placement", stage=stage, pool=self.data_pool, fs_name=self.fs_name, path=path,
                         suffixes=list(suffixes))
        ids = [i for n in self.topology.osd_nodes for i in self.topology.osd_ids(n)]
        empty = {"objects": 0, "bytes": 0, "pgs": 0}
        return {f"osd.{i}": got.get(str(i), empty) for i in sorted(ids)}

    def index(self, path: str, column: str) -> "IndexReport":
        """Index ``column`` of the objects behind the Parquet files under CephFS ``path``, each in
        its own omap, for scans with the index flag (:mod:`rados_deploy.osd_index`); an object
        whose index is up to date is left as it is."""
        from .osd_index import build
        return build(self, path, column)

    def class_version(self) -> dict:
        """``{"<node>/osd.<id>": reply of sae.version}`` for every OSD."""
        from .objclass import class_version
        return class_version(self)

    def osd_counters(self, *, stage: str = "ceph counters") -> CounterSnapshot:
        """Every OSD's operation counters now, from its admin socket (:mod:`rados_deploy.counters`):
        read ops (object-class calls included), reply bytes, reads from the store and their bytes.
        Subtract two snapshots (:meth:`CounterSnapshot.delta`) for what happened in between."""
        return counters.snapshot(self, stage=stage)

    def op_counters(self, *, stage: str = "ceph op counters") -> OpCounts:
        """Storage operations by type so far (:mod:`rados_deploy.ops`): S3 requests at the
        gateways, MDS requests, RADOS ops the gateways sent, client ops and bytes at the OSDs.
        Subtract two (:meth:`OpCounts.delta`) for what a job did in between."""
        return ops.snapshot(self, stage=stage)

    def daemons(self, *, stage: str = "ceph status") -> list[DaemonStatus]:
        """Every daemon of the layout per host: pid and whether its process runs (no mon asked,
        so a watcher can poll it cheaply while queries run)."""
        nodes = list(dict.fromkeys(self.topology.server_nodes + self.topology.rgws))
        facts = self.daemon_facts(nodes, stage=stage)
        return [DaemonStatus(*name.split(".", 1), node, st["pid"], st["alive"])
                for node in nodes for name, st in facts[node]["daemons"].items()]

    def on_own_connections(self) -> "CephCluster":
        """This cluster over connections of its own, for a thread that polls while others stream
        on the shared ones; close its ``cluster`` when done."""
        return CephCluster(self.reservation, self.layout, self.options, cluster=Cluster(self.reservation))

    def status(self) -> CephStatus:
        """Every daemon of the layout per host (pid, up) plus the cluster's health."""
        daemons = self.daemons()
        mons_up = [d.host for d in daemons if d.role == "mon" and d.up]
        detail, health = {"error": "no mon running"}, "unreachable"
        if mons_up:
            try:
                detail = self.probe("health", node=mons_up[0], stage="ceph status", timeout=30, fs_name=self.fs_name)
                health = detail.get("health", "?")
            except OperationalError as e:
                detail = {"error": str(e)}
        return CephStatus(daemons=daemons, health=health, detail=detail)

    def stop(self, *, discard: bool = False) -> StageReport:
        """Unmount CephFS (:meth:`mount`) on every node, then stop every daemon by pid, in the order
        mds, osd, mgr, mon. Bluestore keeps its data; memstore keeps it only through this clean
        stop (a crash or kill loses it). ``discard``, for a stop before the hosts are released: the
        OSDs are killed (a memstore OSD would first write everything it holds to disk)."""
        from .stages import stop
        return stop(self, discard=discard)

    @property
    def mountpoint(self) -> str:
        """Where :meth:`mount` mounts CephFS on a node: one path, mounted separately in every node."""
        return f"{self.reservation.state_root}/cephfs"

    def mount(self, nodes: list[str], *, cache: bool = False, user: CephUser | None = None) -> StageReport:
        """Mount CephFS with ceph-fuse at :attr:`mountpoint` on ``nodes`` (ceph-clients; idempotent)
        as ``user``, by default :attr:`users` ``.fs_read``: a read-only mount. Without ``cache`` the
        client keeps no data cache, so every read reaches the OSDs. A node's mount as another user
        or cache mode is replaced (one mount per node serves every client of it). :meth:`stop` and
        :meth:`unmount` undo it."""
        user = user or self.users.fs_read
        report = StageReport("ceph-fuse mount", details={"mountpoint": self.mountpoint, "user": user.entity})
        self.cluster.apt_install(self.options.client_packages, nodes=nodes, stage=f"{report.stage} apt")
        for node in nodes:   # one by one: local-cluster nodes share the mountpoint directory
            now = self.cluster.call(remote, "fuse_mount", self.client_conf(node), self.mountpoint, user.id, cache,
                                    nodes=[node], stage=report.stage)[node]
            report.add(node, bool(now), f"CephFS {now or 'already mounted'} at {self.mountpoint} as {user.entity}")
        return report

    def unmount(self, nodes: list[str] | None = None) -> StageReport:
        """Unmount what :meth:`mount` mounted on ``nodes`` (default: every node of the reservation)."""
        report = StageReport("ceph-fuse unmount", details={"mountpoint": self.mountpoint})
        for node in nodes or [n.name for n in self.reservation.nodes]:   # one by one: shared directory
            was = self.cluster.call(remote, "fuse_unmount", self.mountpoint, nodes=[node], stage=report.stage)[node]
            report.add(node, was, f"unmounted {self.mountpoint}" if was else f"{self.mountpoint} not mounted")
        return report

    def uninstall(self) -> StageReport:
        """Unmount CephFS (:meth:`unmount`), stop every daemon and remove the cluster's state on
        every node (packages stay): a stack replaced under its clients leaves no mount behind."""
        from .stages import uninstall
        return uninstall(self)

    def wait_ready(self, *, stage: str, expected: dict[str, list[str]] | None = None) -> dict:
        """Poll until HEALTH_OK, all OSDs up, every PG active+clean and an active MDS; between
        polls check that the ``expected`` daemons still run. Returns the last probe state."""
        deadline = time.monotonic() + self.options.ready_timeout
        while True:
            state = self.probe("ready", stage=stage, fs_name=self.fs_name, osds=self.topology.num_osds, wait=15)
            if state.get("ready"):
                return state
            if expected:
                self.check_alive(expected, stage=stage)
            if time.monotonic() > deadline:
                raise OperationalError(f"[{self.topology.mons[0]} {stage}] cluster not ready after "
                                       f"{self.options.ready_timeout:.0f}s: {describe(state)}; "
                                       f"see the logs under {self.state_dir(self.topology.mons[0])}/log")


def _listed(count: int, named: list[str], what: str) -> str:
    """``3 files: a, b, c``; ``250 files: a, ... and 230 more`` (a removal's probe names the first few)."""
    if not count:
        return f"no {what}"
    more = f" and {count - len(named)} more" if count > len(named) else ""
    return f"{count} {what}: {', '.join(named)}{more}"


def binary(daemon: str) -> str:
    """The program of a daemon (``osd.3`` → ``ceph-osd``, ``rgw.node1`` → ``radosgw``)."""
    kind = daemon.split(".", 1)[0]
    return "radosgw" if kind == "rgw" else f"ceph-{kind}"


def describe(state: dict) -> str:
    """One line for a probe state: health, OSDs up, PGs clean, MDS states."""
    if "error" in state:
        return state["error"]
    return (f"{state.get('health')} {state.get('checks')}, {len(state.get('osds_up', []))} OSDs up, "
            f"{state.get('pgs_clean')}/{state.get('pgs_expected')} PGs active+clean, MDS {state.get('mds')}")
