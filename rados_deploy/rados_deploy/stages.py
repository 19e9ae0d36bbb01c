"""The simple stages of :class:`CephCluster`: install, stop, uninstall."""
from __future__ import annotations

from metareserve import StageReport

from . import remote
from .objclass import build_runtime

STOP_ORDER = ("rgw", "mds", "osd", "mgr", "mon")   # clients first, monitors last


def packages_for(cc, node: str) -> list[str]:
    """Debian packages ``node`` needs for its roles (server, OSD class build, gateway, client and
    its scan library's build)."""
    topo, opts = cc.topology, cc.options
    pkgs = list(opts.packages) if node in topo.server_nodes else []
    if node in topo.osd_nodes:
        pkgs += opts.class_build_packages
    if node in topo.rgws:
        pkgs += opts.rgw_packages
    if node in topo.clients:
        pkgs += opts.client_packages + opts.library_build_packages
    return list(dict.fromkeys(pkgs))


def install(cc) -> StageReport:
    """See :meth:`CephCluster.install`."""
    report = StageReport("ceph install")
    res = cc.cluster.apt_install(stage="ceph install", nodes=cc.topology.nodes,
                                 per_node=lambda n: packages_for(cc, n.name))
    # after the packages (a Spark node env being made on a shared disk holds the venv lock at first):
    # the class's build then finds its runtime (9 s of a new machine's build)
    runtime = build_runtime(cc, cc.topology.osd_nodes, stage="ceph install class runtime")
    for node in cc.topology.nodes:
        r, what = res[node], []
        if r["installed"]:
            what.append(f"installed {len(r['installed'])} packages: {' '.join(r['installed'])}")
        if node in runtime and runtime[node].installed:
            what.append(f"installed the object class's build runtime (pyarrow {cc.options.class_arrow})")
        report.add(node, bool(what), "; ".join(what) or f"{len(r['already'])} packages present")
    return report


def stop(cc, *, discard: bool = False) -> StageReport:
    """See :meth:`CephCluster.stop`."""
    topo = cc.topology
    report = StageReport("ceph stop")
    unmounted = [n for n, o in cc.unmount().nodes.items() if o.changed]
    facts = cc.daemon_facts(stage="ceph stop")
    stopped: dict[str, list[str]] = {n: [] for n in topo.nodes}
    for kind in STOP_ORDER:
        todo = {n: [d for d, st in facts[n]["daemons"].items() if d.startswith(kind + ".") and st["alive"]]
                for n in topo.nodes}
        todo = {n: ds for n, ds in todo.items() if ds}
        if not todo:
            continue
        cc.cluster.each(lambda n: [cc.stop_daemon(n.name, d, stage=f"ceph-{kind} stop", kill=discard and kind == "osd")
                                   for d in todo[n.name]], nodes=list(todo), stage=f"ceph-{kind} stop")
        for n, ds in todo.items():
            stopped[n] += ds
    note = ("; OSDs killed, their data discarded (the hosts are being released)" if discard else
            "; memstore data was dumped to the OSD dirs by this clean stop (a crash or kill would lose it)"
            if cc.options.store == "memstore" else "")
    for node in dict.fromkeys([*topo.nodes, *unmounted]):
        what = [f"unmounted {cc.mountpoint}"] if node in unmounted else []
        if stopped.get(node):
            osd = note if any(d.startswith("osd.") for d in stopped[node]) else ""
            what.append(f"stopped {', '.join(stopped[node])}{osd}")
        report.add(node, bool(what), "; ".join(what) or "nothing running")
    return report


def uninstall(cc) -> StageReport:
    """See :meth:`CephCluster.uninstall`."""
    report = StageReport("ceph uninstall")
    unmounted = [n for n, o in cc.unmount().nodes.items() if o.changed]
    res = cc.cluster.call(remote, "wipe", nodes=cc.topology.nodes, stage="ceph uninstall",
                          per_node=lambda n: {"state": cc.state_dir(n.name)})
    for node in dict.fromkeys([*cc.topology.nodes, *unmounted]):
        what = [f"unmounted {cc.mountpoint}"] if node in unmounted else []
        if res.get(node):
            what.append(f"stopped daemons and removed {cc.state_dir(node)} (packages kept)")
        report.add(node, bool(what), "; ".join(what) or "no state")
    return report
