"""The vanilla baseline's view of the data: CephFS mounted with ceph-fuse on the Spark nodes
(a kernel mount is impossible in the local cluster's namespaces; testbeds may use one instead)."""
from __future__ import annotations

from metareserve import StageReport


def default_mountpoint(ceph) -> str:
    """``<reservation state root>/cephfs``: one path, mounted separately in every node."""
    return f"{ceph.reservation.state_root}/cephfs"


def mount_cephfs(ceph, *, nodes, cluster=None, mountpoint: str | None = None,
                 cache: bool = False) -> StageReport:
    """Mount CephFS with ceph-fuse at ``mountpoint`` on each of ``nodes`` (idempotent).

    Vanilla Spark then reads ``file://<mountpoint><dataset path>``. Without ``cache`` the mount
    keeps no client-side data cache (``client_oc`` and the FUSE page cache off), so every query
    reads from the OSDs as the connector does; otherwise repeated queries measure the client's
    memory. Returns a StageReport whose ``details["mountpoint"]`` is the path.
    """
    c = cluster or ceph.cluster
    mp = mountpoint or default_mountpoint(ceph)
    stage = "ceph-fuse mount"
    report = StageReport(stage, details={"mountpoint": mp})
    c.apt_install(["ceph-fuse"], nodes=nodes, stage=f"{stage} apt")
    opts = "" if cache else "--client_oc=false --fuse_disable_pagecache=true"
    for node in nodes:   # one by one: local-cluster nodes share the mountpoint directory
        conf = ceph.client_conf(node)
        r = c.run(f"set -e; mkdir -p {mp}; if mountpoint -q {mp}; then echo mounted; exit 0; fi; "
                  f"ceph-fuse -c {conf} {opts} {mp} >/dev/null; mountpoint -q {mp}", nodes=[node], stage=stage,
                  hint=f"is the MDS up and /dev/fuse present? see {ceph.log_path(node, 'client.admin')}")
        already = r[node]["stdout"].strip() == "mounted"
        report.add(node, not already, f"CephFS {'already ' if already else ''}mounted at {mp}")
    return report


def unmount_cephfs(ceph, *, nodes, cluster=None, mountpoint: str | None = None) -> StageReport:
    """Unmount what :func:`mount_cephfs` mounted (idempotent)."""
    c = cluster or ceph.cluster
    mp = mountpoint or default_mountpoint(ceph)
    report = StageReport("ceph-fuse unmount", details={"mountpoint": mp})
    for node in nodes:
        r = c.run(f"if mountpoint -q {mp}; then umount {mp} || umount -l {mp}; echo done; fi",
                  nodes=[node], stage=report.stage)
        done = r[node]["stdout"].strip() == "done"
        report.add(node, done, f"unmounted {mp}" if done else f"{mp} not mounted")
    return report
