"""The ``sae`` object class: build once per source hash and Arrow version (``CephOptions.class_arrow``:
the pyarrow release whose Arrow C++ it links), install into every OSD's class dir beside the three
Arrow libraries of that release, restart OSDs that loaded another copy, verify. And its scan as a
client library (``libsae_scan.so``: the class's ``scan_*`` core behind ``scanlib/local.cc``'s C
call), built on client nodes, for readers that scan an object they read whole themselves."""
from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

from metareserve import OperationalError, StageReport, UsageError
from metareserve.runtime import SOFTWARE_ROOT, PythonEnv, provision_python_env

from . import remote, scan_protocol

FLAGS = {"output": "libcls_sae.so", "cxxflags": ["-std=c++20", "-O2", "-fPIC"],
         "ldflags": ["-Wl,-rpath,$ORIGIN"]}
LIBRARY_FLAGS = dict(FLAGS, output="libsae_scan.so")
PROBE_NAMESPACE = "sae-probe"


def _package_dir(name: str) -> Path:
    return Path(str(resources.files(__package__).joinpath(name)))


def sources(source_dir=None) -> dict[str, str]:
    """``{file name: text}`` of every ``*.cc`` and ``*.h`` in the class source dir, plus
    ``protocol.h`` rendered from the scan protocol spec (:mod:`rados_deploy.scan_protocol`)."""
    base = Path(source_dir) if source_dir else _package_dir("cls")
    files = {p.name: p.read_text() for p in sorted(base.iterdir()) if p.suffix in (".cc", ".h")}
    if not any(n.endswith(".cc") for n in files):
        raise UsageError(f"{base}: no *.cc sources of the object class")
    files[scan_protocol.HEADER_NAME] = scan_protocol.cxx_header(scan_protocol.SPEC)
    return dict(sorted(files.items()))


def arrow_libs(arrow: str) -> list[str]:
    """The Arrow libraries the class links, as pyarrow ``arrow`` (``26.0.1``) ships them:
    ``libarrow.so.2600``, ``libarrow_compute.so.2600``, ``libparquet.so.2600``."""
    major, minor = arrow.split(".")[:2]
    so = f"{int(major)}{int(minor):02d}"
    return [f"libarrow.so.{so}", f"libarrow_compute.so.{so}", f"libparquet.so.{so}"]


def core_sources() -> dict[str, str]:
    """The class's scan core, which needs no Ceph: its ``scan_*`` files and ``protocol.h``."""
    return {n: t for n, t in sources().items() if n.startswith("scan_") or n == scan_protocol.HEADER_NAME}


def library_sources() -> dict[str, str]:
    """The client library's sources: the scan core (:func:`core_sources`) and ``scanlib/*.cc``,
    the C call in place of the OSD's glue."""
    files = core_sources()
    files.update({p.name: p.read_text() for p in sorted(_package_dir("scanlib").iterdir()) if p.suffix == ".cc"})
    return dict(sorted(files.items()))


def build_key(files: dict[str, str], arrow: str, flags: dict = FLAGS) -> str:
    """Hash of sources, pyarrow pin, libraries and flags: the build directory's name."""
    h = hashlib.sha256(repr((sorted(files.items()), f"pyarrow=={arrow}", arrow_libs(arrow), flags)).encode())
    return h.hexdigest()[:16]


def build_runtime(cc, nodes: list[str], *, stage: str) -> dict[str, PythonEnv]:
    """The venv with pyarrow ``class_arrow`` that builds link against, on ``nodes``."""
    return provision_python_env(cc.cluster, [f"pyarrow=={cc.options.class_arrow}"], nodes=nodes, stage=stage)


def _build(cc, root: str, files: dict[str, str], flags: dict, nodes: list[str], stage: str) -> dict[str, bool]:
    """Build ``files`` into ``root`` on ``nodes`` against pyarrow ``class_arrow`` (once per build
    dir: shared disks build once); ``{node: whether it built}``."""
    pythons = {n: env.python for n, env in build_runtime(cc, nodes, stage=f"{stage} runtime").items()}
    built = {}
    for group in (nodes[:1], nodes[1:]):   # a compile error shows once, from the first node
        built.update(cc.cluster.call(remote, "build_class", root, files, libs=arrow_libs(cc.options.class_arrow),
                                     flags=flags, nodes=group, stage=f"{stage} build",
                                     per_node=lambda n: {"python": pythons[n.name]}))
    return built


def install_class(cc, *, source_dir=None) -> StageReport:
    """See :meth:`CephCluster.install_class`."""
    topo = cc.topology
    osd_nodes = topo.osd_nodes
    report = StageReport("sae class install")
    files = sources(source_dir)
    arrow = cc.options.class_arrow
    libs = arrow_libs(arrow)
    key = build_key(files, arrow)
    root = f"{SOFTWARE_ROOT}/cls/{key}"
    facts = cc.daemon_facts(osd_nodes, stage="sae class install")
    for node in osd_nodes:
        down = [d for d, st in facts[node]["daemons"].items() if not st["alive"]]
        if down:
            raise OperationalError(f"[{node} sae class install] {', '.join(down)} not running; "
                                   "run 'rados-deploy start' first")
    cc.cluster.apt_install(cc.options.class_build_packages, nodes=osd_nodes, stage="sae class apt")
    built = _build(cc, root, files, FLAGS, osd_nodes, "sae class")
    placed = cc.cluster.call(
        remote, "install_class", root, files=[FLAGS["output"], *libs], nodes=osd_nodes,
        stage="sae class install",
        per_node=lambda n: {"classdir": f"{cc.state_dir(n.name)}/classes",
                            "osd_pids": {d: st["pid"] for d, st in facts[n.name]["daemons"].items()
                                         if d.startswith("osd.") and st["alive"]}})
    stale = {n: placed[n]["stale"] for n in osd_nodes if placed[n]["stale"]}
    if stale:
        cc.cluster.each(lambda n: [cc.stop_daemon(n.name, d, stage="ceph-osd restart") for d in stale[n.name]],
                        nodes=list(stale), stage="ceph-osd restart")
        cc.mark_down([d for ds in stale.values() for d in ds], stage="ceph-osd restart")
        cc.cluster.each(lambda n: [cc.start_daemon(n.name, d, stage="ceph-osd restart") for d in stale[n.name]],
                        nodes=list(stale), stage="ceph-osd restart")
        cc.wait_ready(stage="ceph ready", expected={n: topo.daemons(n) for n in topo.server_nodes})
    versions = class_version(cc)
    for node in osd_nodes:
        answered = sorted(k.split("/", 1)[1] for k in versions if k.startswith(node + "/"))
        what = []
        if built[node]:
            what.append(f"built class {key}")
        if placed[node]["changed"]:
            what.append(f"installed {', '.join(placed[node]['changed'])}")
        if stale.get(node):
            what.append(f"restarted {', '.join(stale[node])}")
        verified = f"version answers through {', '.join(answered)}"
        if what:
            report.add(node, True, "; ".join(what) + "; " + verified)
        else:
            report.add(node, False, f"class {key} installed; {verified}")
    report.details.update(key=key, arrow=arrow, build_dir=root, versions=versions)
    return report


def class_version(cc) -> dict:
    """See :meth:`CephCluster.class_version`."""
    topo = cc.topology
    where = {i: n for n in topo.osd_nodes for i in topo.osd_ids(n)}
    replies = cc.probe("class_version", stage="sae class verify", pool=cc.data_pool, nspace=PROBE_NAMESPACE,
                       cls=cc.class_name, osds=sorted(where))
    out = {f"{where[int(osd)]}/osd.{osd}": reply for osd, reply in sorted(replies.items(), key=lambda kv: int(kv[0]))}
    wrong = [k for k, v in out.items() if v.get("class") != cc.class_name]
    if wrong:
        raise OperationalError(f"[{topo.mons[0]} sae class verify] unexpected version reply from {wrong}")
    return out


def install_scan_library(cc, nodes: list[str]) -> StageReport:
    """See :meth:`CephCluster.install_scan_library`."""
    if not nodes:
        raise UsageError("[sae scan library] no nodes to build on: name Ceph nodes or ceph-clients of the layout")
    for node in nodes:
        cc.client_conf(node)   # a node of the layout's Ceph nodes or ceph-clients, else UsageError
    report = StageReport("sae scan library")
    files = library_sources()
    key = build_key(files, cc.options.class_arrow, LIBRARY_FLAGS)
    root = f"{SOFTWARE_ROOT}/scanlib/{key}"
    cc.cluster.apt_install(cc.options.library_build_packages, nodes=nodes, stage=f"{report.stage} apt")
    built = _build(cc, root, files, LIBRARY_FLAGS, nodes, report.stage)
    for node in nodes:
        report.add(node, built[node], f"built scan library {key}" if built[node] else f"scan library {key} up to date")
    report.details.update(key=key, path=f"{root}/{LIBRARY_FLAGS['output']}")
    return report
