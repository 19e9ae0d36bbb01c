"""The RADOS Gateway (S3): started by pid after the cluster is ready, its S3 users (least
privilege, keys only in 0600 files on the nodes) and their buckets.

The gateway of node ``n`` is the Ceph entity ``client.rgw.n`` (its cephx key made by the mons
like the client users', kept in ``data/rgw.n/keyring``), serves S3 on the node's cluster address
at ``CephOptions.rgw_port`` and, over TLS with a self-signed certificate for that address,
``CephOptions.rgw_tls_port`` (path-style addressing: no DNS names) and writes one JSON entry per
request into its ops log (``log/rgw-ops.log``), which :mod:`rados_deploy.ops` counts.
"""
from __future__ import annotations

import configparser
import dataclasses
import re

from metareserve import OperationalError, StageReport, UsageError

from . import remote
from .bootstrap import add_outcome, node_conf
from .config import RGW_CAPS, TLS_CERT, TLS_KEY, keyring

STAGE = "ceph-rgw start"
S3_DIR = "s3"
"""Directory (0700) in a node's state dir holding each S3 user's credentials file (0600)."""
FENCE_PREFIX = "sae-fence-"
"""Buckets named so are the ops log's fences (:mod:`rados_deploy.ops`): no user bucket may be."""
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@dataclasses.dataclass(frozen=True)
class S3User:
    """An S3 user of the gateway: ``id`` (its radosgw uid) and ``max_buckets`` (radosgw's limit on
    the buckets it may create; -1: none)."""

    id: str
    max_buckets: int


@dataclasses.dataclass(frozen=True)
class S3Users:
    """Who may do what through the gateway:

    - ``writer``: puts, gets and deletes objects in the buckets it owns, which
      :meth:`CephCluster.create_bucket` makes for it; it creates none itself (``max_buckets`` -1
      but for that one creation);
    - ``reader``: creates no bucket and writes nothing; reads (get, head, list) the buckets
      :meth:`CephCluster.create_bucket` grants it.
    """

    writer: S3User = S3User("sae-writer", -1)
    reader: S3User = S3User("sae-reader", -1)

    @property
    def all(self) -> list[S3User]:
        return [self.writer, self.reader]


@dataclasses.dataclass(frozen=True)
class S3Credentials:
    """What an S3 client needs to act as ``user``: its keys and the gateway's ``endpoint``
    (``http://address:port``; path-style addressing). ``secret_key`` stays out of ``repr``."""

    user: str
    access_key: str
    secret_key: str = dataclasses.field(repr=False)
    endpoint: str


def credentials_text(access_key: str, secret_key: str) -> str:
    """A credentials file in the AWS shared-credentials format (``AWS_SHARED_CREDENTIALS_FILE``,
    botocore, Hadoop's profile provider), the keys under ``[default]``."""
    return f"[default]\naws_access_key_id = {access_key}\naws_secret_access_key = {secret_key}\n"


def parse_credentials(text: str, *, where: str) -> tuple[str, str]:
    """(access key, secret key) of a :func:`credentials_text` file."""
    parser = configparser.ConfigParser()
    parser.read_string(text)
    try:
        return parser["default"]["aws_access_key_id"], parser["default"]["aws_secret_access_key"]
    except KeyError:
        raise OperationalError(f"{where} holds no S3 keys; run 'rados-deploy start' again") from None


def check_bucket(name) -> str:
    """``name`` if it is an S3 bucket name the gateway takes (3-63 lowercase letters, digits,
    '.', '-', starting and ending with a letter or digit, no '..', not an IP address) and not a
    fence's; UsageError otherwise."""
    if not isinstance(name, str) or not _BUCKET.fullmatch(name) or ".." in name \
            or re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name) or name.startswith(FENCE_PREFIX):
        raise UsageError(f"bucket name {name!r} is not a valid S3 bucket name: use 3-63 lowercase letters, digits, "
                         f"'.' or '-', starting and ending with a letter or digit (not {FENCE_PREFIX}...)")
    return name


def ensure_gateways(cc, report: StageReport, fsid: str) -> None:
    """Give each gateway node its cephx key and ceph.conf section, start the gateways that do
    not run and wait until each answers S3 and the cluster is ready again (the gateway makes its
    pools), then make the S3 users and write their credentials on the client and gateway nodes."""
    topo, o = cc.topology, cc.options
    facts = cc.daemon_facts(topo.rgws, stage=STAGE)
    dead = [n for n in topo.rgws if not facts[n]["daemons"][f"rgw.{n}"]["alive"]]
    if dead:
        keys = cc.probe("users", stage=STAGE, users={f"client.rgw.{n}": RGW_CAPS for n in dead}) if o.cephx else {}
        for node in dead:
            files = {"ceph.conf": [node_conf(cc, node, fsid), 0o644]}
            if o.cephx:
                entity = f"client.rgw.{node}"
                files[f"data/rgw.{node}/keyring"] = [keyring({entity: (keys[entity]["key"], RGW_CAPS)}), 0o600]
            cc.cluster.call(remote, "prepare", cc.state_dir(node), files, [f"rgw.{node}"], nodes=[node], stage=STAGE)
            cc.cluster.call(remote, "tls_pair", f"{cc.state_dir(node)}/data/rgw.{node}",
                            cc.reservation.node(node).cluster_address, TLS_CERT, TLS_KEY, nodes=[node], stage=STAGE)
        cc.cluster.each(lambda n: _start(cc, n.name), nodes=dead, stage=STAGE)
        cc.wait_ready(stage="ceph ready")
    for node in topo.rgws:
        add_outcome(report, node, node in dead, f"started rgw.{node}, S3 at {cc.s3_endpoint_of(node)}" if node in dead
                    else f"rgw.{node} running")
    _ensure_s3_users(cc, report)


def _start(cc, node: str) -> None:
    """Start ``node``'s gateway and wait until its endpoint answers HTTP (or it exits)."""
    cc.start_daemon(node, f"rgw.{node}", stage=STAGE)
    pidfile = f"{cc.state_dir(node)}/run/ceph-rgw.{node}.pid"
    answered = cc.cluster.call(remote, "wait_http", f"{cc.s3_endpoint_of(node)}/", pidfile, cc.options.ready_timeout,
                               nodes=[node], stage=STAGE, timeout=cc.options.ready_timeout + 60)[node]
    if answered is None:
        raise cc.daemon_error(node, f"rgw.{node}")


def _ensure_s3_users(cc, report: StageReport) -> None:
    """Create the S3 users (:class:`S3Users`) or set their bucket limit, and write each one's
    credentials (0600, in the 0700 ``s3`` dir) on the gateway and client nodes."""
    gateway, users = cc.topology.rgws[0], cc.s3_users.all
    keys = cc.probe("s3_users", node=gateway, stage="ceph-rgw users", users={u.id: u.max_buckets for u in users})
    files = {f"{S3_DIR}/{u.id}.credentials": [credentials_text(keys[u.id]["access_key"], keys[u.id]["secret_key"]),
                                             0o600] for u in users}
    nodes = list(dict.fromkeys(cc.topology.rgws + cc.topology.clients))
    changed = cc.cluster.call(remote, "prepare", nodes=nodes, stage="ceph-rgw users",
                              per_node=lambda n: {"state": cc.state_dir(n.name), "files": files})
    made = [uid for uid, k in keys.items() if k["changed"]]
    if made:
        add_outcome(report, gateway, True, f"S3 users {', '.join(made)} created or their bucket limit set")
    for node in nodes:
        written = [f.split("/", 1)[1].removesuffix(".credentials") for f in changed[node]]
        add_outcome(report, node, bool(written), f"S3 credentials of {', '.join(written)} written" if written
                    else f"S3 credentials of {', '.join(u.id for u in users)} current")


def create_bucket(cc, name: str, user: S3User, readers: list[S3User]) -> StageReport:
    """See :meth:`CephCluster.create_bucket`."""
    check_bucket(name)
    report = StageReport("ceph-rgw bucket", details={"bucket": name, "owner": user.id})
    if not cc.topology.rgws:
        raise UsageError("this Ceph runs no RADOS Gateway: set CephOptions.rgw (or a 'ceph-rgw' layout role) and start")
    gateway = cc.topology.rgws[0]
    got = cc.probe("s3_bucket", node=gateway, stage=report.stage, endpoint=cc.s3_endpoint_of(gateway),
                   credentials=cc.s3_credentials_path(gateway, user), bucket=name, readers=[r.id for r in readers],
                   owner=user.id, max_buckets=user.max_buckets)
    what = (["created"] if got["created"] else []) + (["read access set"] if got["policy"] else [])
    report.add(gateway, bool(what), f"bucket {name} of {user.id}: {', '.join(what)}" if what
               else f"bucket {name} of {user.id} in place")
    return report


def certificate(cc) -> str:
    """See :meth:`CephCluster.s3_certificate`."""
    if not cc.topology.rgws:
        raise UsageError("this Ceph runs no RADOS Gateway: set CephOptions.rgw (or a 'ceph-rgw' layout role) and start")
    node = cc.topology.rgws[0]
    return cc.cluster.call(remote, "tls_pair", f"{cc.state_dir(node)}/data/rgw.{node}",
                           cc.reservation.node(node).cluster_address, TLS_CERT, TLS_KEY, nodes=[node],
                           stage="ceph-rgw certificate")[node]


def credentials(cc, user: S3User) -> S3Credentials:
    """See :meth:`CephCluster.s3_credentials`."""
    if not cc.topology.rgws:
        raise UsageError("this Ceph runs no RADOS Gateway: set CephOptions.rgw (or a 'ceph-rgw' layout role) and start")
    node = cc.topology.rgws[0]
    path = cc.s3_credentials_path(node, user)
    text = cc.cluster.call(remote, "read_private", path, nodes=[node], stage="ceph-rgw credentials")[node]
    if text is None:
        raise OperationalError(f"[{node} ceph-rgw credentials] {path} is missing; run 'rados-deploy start' first")
    access, secret = parse_credentials(text, where=f"[{node}] {path}")
    return S3Credentials(user.id, access, secret, cc.s3_endpoint_of(node))

