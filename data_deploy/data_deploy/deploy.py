"""Deploy a split dataset onto nodes through a plugin, verify it, clean it.

The controller checks the files, pushes them once to a staging directory on each writing node
(``reservation.node_dir(node, "data_deploy")/staging/<dataset>``), and the node-side
:mod:`data_deploy.remote` writes them next to the data, with copies and hard links there.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import time

import pyarrow as pa

from metareserve import Cluster, Layout, Reservation, StageReport, format_size, load_reservation, validate
from metareserve.errors import OperationalError, RemoteError, SaeError, UsageError, last_line

from . import remote
from .files import expand
from .formats import LABELS, PATTERNS, format_of
from .plugins import Plugin, get_plugin
from .sizes import check_object_size
from .split import file_entry

STAGE = "data-deploy"
OPS_METHOD = "sum of the OSDs' client-op perf counters (osd.op) before and after the deploy"


@dataclasses.dataclass
class DeployReport:
    """Outcome of :func:`deploy`. ``files``/``rows``/``bytes`` count every final name (copies ×
    links); ``physical_bytes`` counts real data (copies only); ``written``/``linked``/``kept``
    count this run's work on the first target node, ``node_seconds`` its node-side writing time
    (of which ``link_seconds`` making hard links); ``rados_ops`` follows :data:`OPS_METHOD`
    (None for ``local``, when nothing was written, or when the Ceph user may not read OSD perf
    counters); ``seconds`` is end to end."""

    plugin: str
    dest: str
    dataset: str
    nodes: list[str]
    files: int
    rows: int
    bytes: int
    physical_bytes: int
    written: int
    linked: int
    kept: int
    rados_ops: int | None
    node_seconds: float
    link_seconds: float
    manifest: str
    changed: bool
    seconds: float
    stage: StageReport

    def summary(self) -> str:
        head = "deployed" if self.changed else "no changes: already deployed and verified:"
        ops = f", {self.rados_ops} RADOS ops" if self.rados_ops is not None else ""
        return (f"{head} {self.files} files, {self.rows} rows, {format_size(self.bytes)} logical / "
                f"{format_size(self.physical_bytes)} physical at {self.plugin}:{self.dest} on "
                f"{', '.join(self.nodes)} ({self.written} written, {self.linked} linked, "
                f"{self.kept} kept{ops}, {self.seconds:.1f}s); manifest {self.manifest}")


@dataclasses.dataclass
class VerifyReport:
    """Outcome of :func:`verify`; ``problems`` are ``[node] what`` lines (at most 50 per node)."""

    plugin: str
    dest: str
    ok: bool
    files: int
    objects: int
    rows: int
    problems: list[str]
    nodes: dict

    def summary(self) -> str:
        if self.ok:
            objs = f", {self.objects} RADOS objects each of its file's size" if self.plugin == "cephfs" else ""
            return f"verified {self.plugin}:{self.dest}: {self.files} files, {self.rows} rows{objs}"
        return (f"verify {self.plugin}:{self.dest} failed: {len(self.problems)} problem(s): "
                + "; ".join(self.problems[:3]))


def _reservation(reservation) -> Reservation:
    return reservation if isinstance(reservation, Reservation) else load_reservation(reservation)


@contextlib.contextmanager
def _connected(res: Reservation, cluster):
    if cluster is not None:
        yield cluster
    else:
        with Cluster(res) as c:
            yield c


def _call(c, fn: str, *args, node: str, stage: str, **kwargs):
    """``remote.fn`` on one node; a node-side DeployError becomes a one-line OperationalError."""
    try:
        return c.call(remote, fn, *args, nodes=[node], stage=stage, **kwargs)[node]
    except RemoteError as e:
        marker = f"{remote.DeployError.__name__}: "
        last = last_line(e.stderr_tail)
        if marker in last:
            raise OperationalError(f"[{node} {stage}] {last.split(marker, 1)[1]}") from None
        raise


def describe(src, object_size: int) -> list[dict]:
    """File entries (name, size, rows, sha256) of a split dataset (Parquet or Arrow IPC files);
    UsageError naming the file if one has several row groups (record batches) or exceeds
    ``object_size``, or two files share a name."""
    entries, seen = [], {}
    for path in expand(src, PATTERNS):
        try:
            e = file_entry(path)
        except (pa.ArrowInvalid, OSError) as err:
            raise UsageError(f"{path}: not a readable {LABELS[format_of(path)]} file ({str(err).splitlines()[0]}); "
                             f"deploy the output of 'data-deploy split'") from None
        if e["row_groups"] != 1:
            raise UsageError(f"{path}: {e['row_groups']} row groups (record batches), deploy needs exactly one "
                             f"per file; run 'data-deploy split' first")
        if e["size"] > object_size:
            want = format_size(object_size)
            raise UsageError(f"{path}: {format_size(e['size'])} does not fit the object size {want}; "
                             f"re-split with --object-size {want} or deploy with a larger one")
        if e["name"] in seen:
            raise UsageError(f"{path}: same file name as {seen[e['name']]}; deploy one dataset directory")
        seen[e["name"]] = path
        e["dir"] = str(path.parent)
        entries.append(e)
    return entries


def dataset_id(entries: list[dict]) -> str:
    """Content id of a dataset: sha256 over its files' names and checksums."""
    text = "\n".join(f"{e['name']} {e['sha256']}" for e in sorted(entries, key=lambda e: e["name"]))
    return hashlib.sha256(text.encode()).hexdigest()


CEPH_DEFAULT_CONF = "/etc/ceph/ceph.conf"
"""Where Ceph's tools look for a cluster's conf when none is named."""


MAX_MULTIPLIER = 10**6
"""The most names (links) or copies per physical file a deploy makes."""


def check_target(dest, *, what: str = "dest", ceph_conf=None, ceph_user=None) -> None:
    """Refuse, before any node is reached, a dataset directory that is not an absolute path
    below the root (``what`` names it in the message), a ceph.conf path that is not absolute, or a
    Ceph user that is not a plain name."""
    try:
        validate.path(dest, what)
    except UsageError as e:
        raise UsageError(f"{e}; give the dataset's directory, e.g. /data/taxi") from None
    if not dest.startswith("/") or dest.rstrip("/") == "":
        raise UsageError(f"{what} {dest!r} is not allowed: give an absolute directory below /, e.g. /data/taxi")
    if ceph_conf is not None and (not validate.path(ceph_conf, "--ceph-conf").startswith("/")):
        raise UsageError(f"--ceph-conf {ceph_conf!r} is not allowed: give the absolute path of the client "
                         f"conf on the nodes, e.g. {CEPH_DEFAULT_CONF}")
    if ceph_user is not None:
        validate.name(ceph_user, "--ceph-user")


def _check_multipliers(**multipliers) -> None:
    for name, value in multipliers.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MULTIPLIER:
            raise UsageError(f"{name.replace('_', ' ')} (--{name.replace('_', '-')}) must be a whole number "
                             f"from 1 to {MAX_MULTIPLIER}, not {value!r}")


def _prepare(cluster, plugin: Plugin, res: Reservation, nodes: list[str], ceph_conf, ceph_user) -> dict:
    """Install what the plugin needs on ``nodes``; return the Ceph client the node functions take
    (``ceph_conf``, ``ceph_user``; empty without Ceph) after checking the conf is readable there."""
    if plugin.apt_packages:
        cluster.apt_install(plugin.apt_packages, nodes=nodes, stage=f"{STAGE} install")
    if not plugin.needs_ceph:
        return {}
    if ceph_user is not None:
        validate.name(ceph_user, "ceph user")
    conf = ceph_conf or CEPH_DEFAULT_CONF
    r = cluster.run(["test", "-r", conf], nodes=nodes, stage=STAGE, check=False)
    missing = [n for n, out in r.items() if out["rc"] != 0]
    if missing:
        given = "" if ceph_conf else " (Ceph's default)"
        raise UsageError(f"[{missing[0]} {STAGE}] no readable ceph.conf at {conf}{given}; pass --ceph-conf PATH, "
                         f"the client conf on that node (for a rados-deploy cluster 'rados-deploy status' "
                         f"prints it as CEPH_CONF=...)")
    return {"ceph_conf": conf, "ceph_user": ceph_user}


def deploy(reservation, src, *, plugin: str = "cephfs", dest: str = "/data/taxi", object_size,
           link_multiplier: int = 1, copy_multiplier: int = 1, node=None, layout: Layout | None = None,
           ceph_conf: str | None = None, ceph_user: str | None = None, cluster=None) -> DeployReport:
    """Deploy the single-row-group Parquet files of ``src`` to ``dest`` through ``plugin``.

    Args:
        reservation: a Reservation or the path of a reservation file.
        src: the split dataset (directory or files), each file ≤ ``object_size``.
        plugin: a name registered under ``data_deploy.plugins`` (``cephfs``, ``local``).
        dest: dataset directory (in CephFS, or on each node for ``local``).
        object_size: bytes or a size string (``16MiB``); a multiple of 64 KiB in 4–256 MiB.
        link_multiplier: names per physical file (hard links, no new data).
        copy_multiplier: physical copies of every file (new inodes and objects).
        node: writing node(s); default from the plugin and ``layout`` (default layout if None).
        ceph_conf: path of a client ceph.conf on the node (cephfs; default Ceph's own
            :data:`CEPH_DEFAULT_CONF`).
        ceph_user: the cephx client id to write as (``fs-write`` for ``client.fs-write``; its
            keyring must be the one the conf names for it); default ``admin``.
        cluster: an open :class:`metareserve.Cluster` to reuse.
    Returns:
        A :class:`DeployReport`; ``changed`` is False when the same dataset and layout were
        already deployed (then only verified).
    Raises:
        UsageError for bad sizes, multipliers, files, plugins or conf paths; RemoteError /
        OperationalError when writing or verification fails on a node.
    """
    size = check_object_size(object_size)
    check_target(dest, ceph_conf=ceph_conf, ceph_user=ceph_user)
    _check_multipliers(link_multiplier=link_multiplier, copy_multiplier=copy_multiplier)
    p = get_plugin(plugin)
    res = _reservation(reservation)
    layout = (layout or Layout.default(res)).validate(res)
    nodes = p.nodes(res, layout, node)
    entries = describe(src, size)
    ident = dataset_id(entries)
    meta = {"dataset": ident, "plugin": p.name, "object_size": size, "link_multiplier": link_multiplier,
            "copy_multiplier": copy_multiplier}
    files = [{k: e[k] for k in ("name", "size", "rows", "sha256")} for e in entries]
    stage = StageReport(f"{STAGE} {p.name}")
    start = time.time()
    with _connected(res, cluster) as c:
        client = _prepare(c, p, res, nodes, ceph_conf, ceph_user)
        out = c.each(lambda n: _deploy_node(c, res, n.name, p, dest, entries, files, meta, client, stage),
                     nodes=nodes, stage=stage.stage)
    first = out[nodes[0]]
    m = first["manifest"]
    return DeployReport(plugin=p.name, dest=dest, dataset=ident, nodes=nodes, files=m["file_count"],
                        rows=m["rows"], bytes=m["logical_bytes"], physical_bytes=m["physical_bytes"],
                        written=first.get("written", 0), linked=first.get("linked", 0),
                        kept=first.get("kept", 0), rados_ops=first.get("rados_ops"),
                        node_seconds=first.get("seconds", 0.0), link_seconds=first.get("link_seconds", 0.0),
                        manifest=f"{dest}/{remote.MANIFEST}", changed=stage.changed,
                        seconds=round(time.time() - start, 3), stage=stage)


def _deploy_node(c, res, name, p, dest, entries, files, meta, client, stage) -> dict:
    pidfile = f"{res.node_dir(name, 'data_deploy')}/writer.json"
    st = _call(c, "status", p.backend, dest, **client, pidfile=pidfile, node=name, stage=stage.stage)
    current = st["manifest"]
    if current is not None and all(current.get(k) == v for k, v in meta.items()):
        _check(c, name, p, dest, client, stage.stage)
        stage.add(name, False, f"dataset {meta['dataset'][:12]} already at {dest} ({current['file_count']} "
                               f"files); verified")
        return {"manifest": current}
    staging = f"{res.node_dir(name, 'data_deploy')}/staging/{meta['dataset'][:16]}"
    try:
        for d in sorted({e["dir"] for e in entries}):
            c.put(f"{d}/", f"{staging}/", nodes=[name], stage=f"{stage.stage} push")
        r = _call(c, "deploy", p.backend, dest, staging, files, meta, **client,
                  pidfile=pidfile, node=name,
                  stage=stage.stage, timeout=None)
    except SaeError:   # the staged copy is the deploy's own: a failed deploy takes it back (a rerun pushes again)
        c.run(["rm", "-rf", "--", staging], nodes=[name], stage=f"{stage.stage} cleanup", check=False)
        raise
    if r["changed"]:
        ops = f", {r['rados_ops']} RADOS ops" if r.get("rados_ops") is not None else ""
        stage.add(name, True, f"{r['written']} files written, {r['linked']} linked, {r['kept']} kept "
                              f"in {r['seconds']}s{ops}; manifest {dest}/{remote.MANIFEST}")
    else:
        stage.add(name, False, f"dataset {meta['dataset'][:12]} already at {dest}")
    return r


def _check(c, name, p, dest, client, stage):
    v = _call(c, "verify", p.backend, dest, **client, node=name, stage=f"{stage} verify")
    if not v["ok"]:
        raise OperationalError(f"[{name} {stage} verify] {dest} is deployed but fails verification: "
                               f"{v['problems'][0]}; run 'data-deploy clean' and deploy again")


def verify(reservation, dest: str = "/data/taxi", *, plugin: str = "cephfs", node=None,
           layout: Layout | None = None, ceph_conf: str | None = None, ceph_user: str | None = None,
           cluster=None) -> VerifyReport:
    """Check a deployed dataset against its manifest on every target node (see
    :func:`data_deploy.remote.verify`). Returns a :class:`VerifyReport`; does not raise on
    mismatches (``ok`` is False and ``problems`` says what)."""
    check_target(dest, ceph_conf=ceph_conf, ceph_user=ceph_user)
    p = get_plugin(plugin)
    res = _reservation(reservation)
    nodes = p.nodes(res, (layout or Layout.default(res)).validate(res), node)
    with _connected(res, cluster) as c:
        client = _prepare(c, p, res, nodes, ceph_conf, ceph_user)
        out = c.each(lambda n: _call(c, "verify", p.backend, dest, **client, node=n.name,
                                     stage=f"{STAGE} verify"), nodes=nodes, stage=f"{STAGE} verify")
    first = out[nodes[0]]
    problems = [f"[{n}] {msg}" for n in nodes for msg in out[n]["problems"]]
    return VerifyReport(plugin=p.name, dest=dest, ok=not problems, files=first["files"],
                        objects=first["objects"], rows=first.get("rows", 0), problems=problems,
                        nodes=dict(out))


def clean(reservation, dest: str = "/data/taxi", *, plugin: str = "cephfs", node=None,
          layout: Layout | None = None, ceph_conf: str | None = None, ceph_user: str | None = None,
          cluster=None) -> StageReport:
    """Remove the dataset at ``dest`` (manifest first, so a half-removed dataset never looks
    complete) and the nodes' staging areas. Per node "no changes" when nothing was there."""
    check_target(dest, ceph_conf=ceph_conf, ceph_user=ceph_user)
    p = get_plugin(plugin)
    res = _reservation(reservation)
    nodes = p.nodes(res, (layout or Layout.default(res)).validate(res), node)
    stage = StageReport(f"{STAGE} clean")
    with _connected(res, cluster) as c:
        client = _prepare(c, p, res, nodes, ceph_conf, ceph_user)
        out = c.each(lambda n: _call(c, "clean", p.backend, dest, **client, node=n.name, stage=stage.stage,
                                     staging=f"{res.node_dir(n, 'data_deploy')}/staging"),
                     nodes=nodes, stage=stage.stage)
    for n in nodes:
        if out[n]["existed"]:
            stage.add(n, True, f"removed {dest} ({out[n]['removed']} files)")
        else:
            stage.add(n, False, f"{dest} does not exist")
    return stage
