"""``start``: bootstrap a new cluster by hand (no ceph-deploy, no cephadm), or restart a stopped one.

Fresh bootstrap, in order: keys and fsid made here → state dirs, ceph.conf and keyrings on every
node → monmap + ``ceph-mon --mkfs`` → mons, quorum → pools and CephFS (PG autoscaler off) →
in parallel per node: mgr, MDS, ``ceph osd new`` + ``ceph-osd --mkfs`` + OSDs → ready. A failure
stops every daemon it started and removes the state it made but the logs its error points to.
On a bootstrapped cluster: start what is not running. Either way the CephFS pools' autoscaler
mode is then put in force (``CephOptions.pg_autoscale``; off puts the computed PG counts back),
the client users made, and the RADOS Gateways started (:mod:`rados_deploy.rgw`).
"""
from __future__ import annotations

import json
import time
import uuid

from metareserve import OperationalError, RemoteError, SaeError, StageReport, UsageError

from . import remote
from .config import (ADMIN_CAPS, CONF_FORMAT, KEYRINGS, MDS_CAPS, MGR_CAPS, keyring, mon_addrs, new_key,
                     render_conf)
from .sessions import evict_dead_clients

STAGE = "ceph start"


def start(cc) -> StageReport:
    """See :meth:`CephCluster.start`."""
    t0 = time.monotonic()
    topo = cc.topology
    report = StageReport(STAGE)
    facts = cc.daemon_facts(stage=STAGE)
    for node in topo.nodes:
        if facts[node]["missing"]:
            raise RemoteError(node, STAGE, f"{', '.join(facts[node]['missing'])} not installed",
                              hint="run 'rados-deploy install' first")
    fsid = facts[topo.mons[0]]["fsid"]
    if fsid:
        state = _restart(cc, facts, fsid, report)
    else:
        state = _bootstrap(cc, report)
    cluster_fsid = fsid or state["fsid"]
    state = _pools_in_force(cc, state, report)
    if cc.options.cephx:
        _ensure_users(cc, report)
    if topo.rgws:
        from .rgw import ensure_gateways
        ensure_gateways(cc, report, cluster_fsid)
    if fsid:   # a cluster that ran before may hold sessions of clients killed since
        for node, evicted in evict_dead_clients(cc).items():
            add_outcome(report, node, True, f"evicted the CephFS sessions of dead clients: {', '.join(map(str, evicted))}")
    report.details.update(bringup_seconds=round(time.monotonic() - t0, 2), fsid=cluster_fsid,
                          pgs=state.get("pgs_expected"), health=state.get("health"))
    return report


def _bootstrap(cc, report: StageReport) -> dict:
    topo, opts, res = cc.topology, cc.options, cc.reservation
    t0, phases = time.monotonic(), {}
    report.details["phases"] = phases
    fsid = str(uuid.uuid4())
    _check_device(cc)
    cc.cluster.call(remote, "wipe", nodes=topo.nodes, stage=STAGE,
                    per_node=lambda n: {"state": cc.state_dir(n.name)})
    bound = list(dict.fromkeys(topo.mons + topo.mgrs + topo.rgws))
    facts = cc.daemon_facts(bound, stage=STAGE, ports=True)
    for node in bound:
        for addr, port in facts[node]["busy_ports"]:
            daemon, option = (("ceph-mgr", "mgr_prometheus_port") if port == opts.mgr_prometheus_port
                              and node in topo.mgrs else ("ceph-rgw", "rgw_port / rgw_tls_port")
                              if port in (opts.rgw_port, opts.rgw_tls_port) and node in topo.rgws else ("ceph-mon", "mon_port / mon_v1_port"))
            raise RemoteError(node, f"{daemon} start", f"port {port} on {addr} is in use by another process",
                              hint=f"stop that process, or choose CephOptions.{option}")
    mons = mon_addrs(res, topo, opts)
    keys = {"admin": new_key(), "mon": new_key(), **{f"mgr.{n}": new_key() for n in topo.mgrs},
            **{f"mds.{n}": new_key() for n in topo.mdss}}
    files = _files(cc, fsid, mons, keys)
    try:
        cc.cluster.call(remote, "prepare", nodes=topo.nodes, stage=STAGE,
                        per_node=lambda n: {"state": cc.state_dir(n.name), "files": files[n.name],
                                            "daemon_dirs": [d for d in topo.daemons(n.name)
                                                            if not d.startswith("osd.")]})
        cc.cluster.call(remote, "mon_mkfs", nodes=topo.mons, stage="ceph-mon mkfs",
                        per_node=lambda n: {"state": cc.state_dir(n.name), "conf": cc.conf_path(n.name),
                                            "mon_id": n.name, "fsid": fsid, "mons": [list(m) for m in mons]})
        phases["mkfs"] = round(time.monotonic() - t0, 2)
        osds = {i: (str(uuid.uuid4()), new_key() if opts.cephx else None) for i in range(topo.num_osds)}
        _start_mons(cc, topo.mons, commands=_commands(cc, osds))
        phases["quorum"] = round(time.monotonic() - t0, 2)
        expected = {n: topo.daemons(n) for n in topo.server_nodes}
        cc.cluster.each(lambda n: _bring_up_node(cc, n.name, osds), nodes=topo.server_nodes, stage=STAGE)
        phases["daemons"] = round(time.monotonic() - t0, 2)
        state = cc.wait_ready(stage="ceph ready", expected=expected)
        phases["ready"] = round(time.monotonic() - t0, 2)
    except (SaeError, KeyboardInterrupt):   # nothing of the failed bootstrap stays but the logs its error names
        cc.cluster.call(remote, "wipe", nodes=topo.nodes, stage="ceph start cleanup", check=False,
                        per_node=lambda n: {"state": cc.state_dir(n.name), "keep": ["log"]})
        raise
    cc.cluster.call(remote, "prepare", nodes=topo.nodes, stage=STAGE,
                    per_node=lambda n: {"state": cc.state_dir(n.name), "files": {"bootstrapped": [fsid, 0o644]}})
    for node in topo.nodes:
        names = topo.daemons(node)
        report.add(node, True, f"bootstrapped {', '.join(names)}" if names else "client config written")
    return dict(state, fsid=fsid)


def _check_device(cc) -> None:
    """UsageError, before anything is made, if the bluestore device is missing on an OSD node."""
    device = cc.options.bluestore_device
    if not device:
        return
    found = cc.cluster.run(["test", "-e", device], nodes=cc.topology.osd_nodes, stage="ceph-osd mkfs", check=False)
    for node in cc.topology.osd_nodes:
        if found[node]["rc"] != 0:
            raise UsageError(f"[{node} ceph-osd mkfs] bluestore device {device} does not exist on this node; give "
                             f"an existing block device or file (CephOptions.bluestore_device, --bluestore-device)")


def _files(cc, fsid: str, mons, keys: dict) -> dict[str, dict]:
    """Per node {relpath: [text, mode]}: ceph.conf, admin keyring, mon/mgr/mds keyrings."""
    topo, opts, res = cc.topology, cc.options, cc.reservation
    mon_host = ",".join(addrs for _, addrs in mons)
    admin = keyring({"client.admin": (keys["admin"], ADMIN_CAPS)})
    out = {}
    for name in topo.nodes:
        node = res.node(name)
        files = {"ceph.conf": [render_conf(node=name, state=cc.state_dir(name), address=node.cluster_address,
                                           fsid=fsid, mon_host=mon_host, topo=topo, options=opts), 0o644]}
        if opts.cephx:
            files["keyring"] = [admin, 0o600]
            if name in topo.mons:
                entries = {"mon.": (keys["mon"], {"mon": "allow *"}),
                           "client.admin": (keys["admin"], ADMIN_CAPS)}
                entries.update({f"mgr.{m}": (keys[f"mgr.{m}"], MGR_CAPS) for m in topo.mgrs})
                entries.update({f"mds.{m}": (keys[f"mds.{m}"], MDS_CAPS) for m in topo.mdss})
                files["mon.keyring"] = [keyring(entries), 0o600]
            for kind in ("mgr", "mds"):
                if name in getattr(topo, kind + "s"):
                    files[f"data/{kind}.{name}/keyring"] = [keyring({f"{kind}.{name}": (keys[f"{kind}.{name}"], {})}),
                                                            0o600]
        out[name] = files
    return out


def _commands(cc, osds: dict) -> list[dict]:
    """Mon commands after quorum: register the OSDs ({id: (uuid, secret)}), CephFS pools (computed
    pg_num, the autoscaler as the options say), the file system, and the prometheus module's
    address per mgr."""
    topo, opts = cc.topology, cc.options
    cmds = []
    for osd, (osd_uuid, secret) in osds.items():
        cmd = {"prefix": "osd new", "uuid": osd_uuid, "id": osd}
        if secret:
            cmd["_inbuf"] = json.dumps({"cephx_secret": secret})
        cmds.append(cmd)
    for pool, pgs in cc.pg_nums().items():
        cmds.append({"prefix": "osd pool create", "pool": pool, "pg_num": pgs, "pgp_num": pgs,
                     "autoscale_mode": _autoscale_mode(opts)})
    cmds.append({"prefix": "fs new", "fs_name": cc.fs_name, "metadata": cc.metadata_pool, "data": cc.data_pool})
    if opts.mgr_prometheus:
        for m in topo.mgrs:
            addr = cc.reservation.node(m).cluster_address
            cmds.append({"prefix": "config set", "who": f"mgr.{m}", "name": "mgr/prometheus/server_addr",
                         "value": addr, "force": True})
            cmds.append({"prefix": "config set", "who": f"mgr.{m}", "name": "mgr/prometheus/server_port",
                         "value": str(opts.mgr_prometheus_port), "force": True})
    return cmds


def _autoscale_mode(opts) -> str:
    return "on" if opts.pg_autoscale else "off"


def _pools_in_force(cc, state: dict, report: StageReport) -> dict:
    """Set the CephFS pools' autoscaler mode where ``state`` (a ready probe's) shows another;
    turning it off also puts back the computed pg_num and waits until the PGs have merged or
    split to it. Returns the state after."""
    mode, pools = _autoscale_mode(cc.options), cc.pg_nums()
    now = state.get("pools", {})
    wrong = {p: pgs for p, pgs in pools.items() if now.get(p, {}).get("autoscale") != mode
             or (mode == "off" and {now.get(p, {}).get("pg_num"), now.get(p, {}).get("pg_num_target")} != {pgs})}
    mon = cc.topology.mons[0]
    if not wrong:
        add_outcome(report, mon, False, f"PG autoscaler {mode} for {', '.join(pools)}")
        return state

    def was(pool: dict) -> str:
        pgs, target = pool.get("pg_num"), pool.get("pg_num_target")
        return f"{pool.get('autoscale')} pg_num {pgs}" + (f" (going to {target})" if target != pgs else "")
    before = ", ".join(f"{p} {was(now.get(p, {}))}" for p in wrong)
    cc.probe("pools", stage="ceph pools", pools=wrong, autoscale=cc.options.pg_autoscale)
    after = cc.wait_ready(stage="ceph pools")
    add_outcome(report, mon, True, f"PG autoscaler turned {mode} for {', '.join(wrong)} (was: {before})")
    return after


def _start_mons(cc, mons: list[str], commands=()) -> None:
    """Start the mons in ``mons`` (others already run), wait until all mons form a quorum, then run
    the mon ``commands``."""
    cc.cluster.each(lambda n: cc.start_daemon(n.name, f"mon.{n.name}", stage="ceph-mon start"), nodes=mons,
                    stage="ceph-mon start")
    mons = cc.topology.mons
    state = cc.probe("quorum", stage="ceph-mon quorum", mons=mons, wait=60, commands=list(commands))
    if not state["ready"]:
        cc.check_alive({n: [f"mon.{n}"] for n in mons}, stage="ceph-mon quorum")
        raise OperationalError(f"[{mons[0]} ceph-mon quorum] mons {mons} not in quorum after 60s "
                               f"(quorum: {state['quorum']}); see {cc.state_dir(mons[0])}/log")


def _bring_up_node(cc, node: str, osds: dict) -> None:
    """mgr, MDS, then each OSD of ``node`` (registered already): mkfs, start."""
    topo, opts = cc.topology, cc.options
    for kind, members in (("mgr", topo.mgrs), ("mds", topo.mdss)):
        if node in members:
            cc.start_daemon(node, f"{kind}.{node}", stage=f"ceph-{kind} start")
    for osd in topo.osd_ids(node):
        osd_uuid, secret = osds[osd]
        cc.cluster.call(remote, "osd_mkfs", cc.state_dir(node), cc.conf_path(node), osd, osd_uuid, secret,
                        opts.bluestore_device, nodes=[node], stage="ceph-osd mkfs")
        cc.start_daemon(node, f"osd.{osd}", stage="ceph-osd start")


def _restart(cc, facts: dict, fsid: str, report: StageReport) -> dict:
    """Start the daemons of a bootstrapped cluster that are not running; no-op when all are."""
    topo = cc.topology
    for node in topo.server_nodes:
        if facts[node]["fsid"] != fsid:
            raise UsageError(f"[{node} {STAGE}] node has no state of cluster {fsid} (layout changed?); "
                             "run 'rados-deploy uninstall' and start again")
    for node in [n for n in topo.nodes if n not in topo.server_nodes]:   # clients, gateway-only nodes
        if facts[node]["fsid"] != fsid:
            _copy_client_files(cc, node, fsid)
            report.add(node, True, "client config written")
    for node in topo.nodes:
        if node not in report.nodes and facts[node]["conf_format"] != CONF_FORMAT:
            cc.cluster.call(remote, "prepare", cc.state_dir(node), {"ceph.conf": [node_conf(cc, node, fsid), 0o644]},
                            nodes=[node], stage=STAGE)
            report.add(node, True, f"ceph.conf rewritten in format {CONF_FORMAT} (it was format "
                                   f"{facts[node]['conf_format']})")
    dead = {n: [d for d in topo.daemons(n) if not facts[n]["daemons"][d]["alive"]] for n in topo.server_nodes}
    if cc.options.store == "memstore":   # a pid file left behind = killed or crashed, not stopped
        for node in topo.osd_nodes:
            lost = [d for d in dead[node] if d.startswith("osd.") and facts[node]["daemons"][d]["pid"]]
            if lost:
                raise OperationalError(f"[{node} ceph-osd start] {', '.join(lost)} (memstore) crashed or was killed, "
                                       "so its data is gone; run 'rados-deploy uninstall' and start again")
    if not any(dead.values()):
        for node in topo.nodes:
            if node not in report.nodes:
                names = topo.daemons(node)
                report.add(node, False, f"{', '.join(names)} running" if names else "client config in place")
        return cc.probe("ready", stage="ceph ready", fs_name=cc.fs_name, osds=topo.num_osds, wait=0)
    expected = {n: topo.daemons(n) for n in topo.server_nodes}
    dead_mons = [n for n in topo.mons if f"mon.{n}" in dead[n]]
    if dead_mons:
        _start_mons(cc, dead_mons)
    cc.mark_down([d for n in topo.osd_nodes for d in dead[n] if d.startswith("osd.")], stage="ceph-osd start")
    cc.cluster.each(lambda n: [cc.start_daemon(n.name, d, stage=f"ceph-{d.split('.')[0]} start")
                               for d in dead[n.name] if not d.startswith("mon.")],
                    nodes=[n for n in topo.server_nodes if dead[n]], stage=STAGE)
    state = cc.wait_ready(stage="ceph ready", expected=expected)
    for node in topo.nodes:
        if node in report.nodes:
            continue
        if dead.get(node):
            report.add(node, True, f"started {', '.join(dead[node])}")
        else:
            names = topo.daemons(node)
            report.add(node, False, f"{', '.join(names)} running" if names else "client config in place")
    return state


def node_conf(cc, node: str, fsid: str) -> str:
    """``node``'s ceph.conf for a bootstrapped cluster (mon addresses as the first mon's conf has them)."""
    mon = cc.topology.mons[0]
    conf = cc.cluster.run(["cat", cc.conf_path(mon)], nodes=[mon], stage=STAGE)[mon]["stdout"]
    mon_host = next(l.split("=", 1)[1].strip() for l in conf.splitlines() if l.startswith("mon host"))
    return render_conf(node=node, state=cc.state_dir(node), address=cc.reservation.node(node).cluster_address,
                       fsid=fsid, mon_host=mon_host, topo=cc.topology, options=cc.options)


def _copy_client_files(cc, node: str, fsid: str) -> None:
    """Give a client added after bootstrap the cluster's ceph.conf and admin keyring."""
    mon = cc.topology.mons[0]
    files = {"ceph.conf": [node_conf(cc, node, fsid), 0o644]}
    if cc.options.cephx:
        files["keyring"] = [cc.cluster.run(["cat", f"{cc.state_dir(mon)}/keyring"], nodes=[mon],
                                           stage=STAGE)[mon]["stdout"], 0o600]
    files["bootstrapped"] = [fsid, 0o644]
    cc.cluster.call(remote, "prepare", cc.state_dir(node), files, nodes=[node], stage=STAGE)


def _ensure_users(cc, report: StageReport) -> None:
    """Create the least-privilege client users (:class:`ClientUsers`) on the mons, or set their
    caps, and write each one's keyring (0600, in the 0700 ``keyrings`` dir) on every client node."""
    made = cc.users.made
    keys = cc.probe("users", stage="ceph users", users={u.entity: u.caps for u in made})
    files = {f"{KEYRINGS}/{u.entity}.keyring": [keyring({u.entity: (keys[u.entity]["key"], u.caps)}), 0o600]
             for u in made}
    changed = cc.cluster.call(remote, "prepare", nodes=cc.topology.clients, stage="ceph users",
                              per_node=lambda n: {"state": cc.state_dir(n.name), "files": files})
    made_now = [e for e, k in keys.items() if k["changed"]]
    if made_now:
        add_outcome(report, cc.topology.mons[0], True, f"users {', '.join(made_now)} created or their caps set")
    for node in cc.topology.clients:
        written = [f.split("/", 1)[1].removesuffix(".keyring") for f in changed[node]]
        add_outcome(report, node, bool(written), f"keyrings of {', '.join(written)} written" if written
             else f"keyrings of {', '.join(u.entity for u in made)} current")


def add_outcome(report: StageReport, node: str, changed: bool, message: str) -> None:
    """Add an outcome to ``node``'s in ``report``: changed if either is, messages joined."""
    prev = report.nodes.get(node)
    if prev:
        report.add(node, prev.changed or changed, f"{prev.message}; {message}", log=changed)
    else:
        report.add(node, changed, message)
