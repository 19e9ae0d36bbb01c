"""ceph-fuse mounts made by :meth:`CephCluster.mount` read what CephFS holds, are idempotent, are
made again where their ceph-fuse died (as with a stack replaced under them) or where they were
made as another cephx user (the least-privilege writer and reader take turns), and never outlive
the cluster: ``stop`` unmounts them on every node first."""
from __future__ import annotations

from fixtures.ceph import client_python, sibling
from metareserve import Layout
from rados_deploy import CephCluster, CephOptions

WRITE = """
import os, cephfs
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
fd = fs.open("/mounted.txt", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
fs.write(fd, b"through the mount", 0); fs.close(fd); fs.shutdown()
print("0")
"""

FUSE_HERE = """for p in $(pgrep -x ceph-fuse); do
  [ "$(readlink /proc/$p/ns/mnt)" = "$(readlink /proc/self/ns/mnt)" ] && echo $p; done; true"""
"""The pids of ceph-fuse processes in this node's mount namespace (a constant script)."""
KILL_FUSE = f"""for p in $({FUSE_HERE}); do
  kill -9 $p; i=0; while [ -e /proc/$p/ns ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; done"""
"""Kill -9 those, and wait until each is gone: the mount stays, dead."""


def test_mount_reads_cephfs_and_stop_unmounts_everywhere(local_cluster, cluster):
    res = sibling(local_cluster, "u")
    roles = {r: ["node1"] for r in ("ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd")}
    ceph = CephCluster(res, Layout(dict(roles, **{"ceph-client": ["node2", "node3"]})),
                       CephOptions(store="memstore", osd_size="512MiB", mon_port=3600, mon_v1_port=None,
                                       mgr_prometheus=False),
                       cluster=cluster)
    readers = ["node2", "node3"]
    try:
        ceph.install()
        ceph.start()
        client_python(ceph, "node1", WRITE)
        first = ceph.mount(readers)
        assert {n: o.changed for n, o in first.nodes.items()} == {"node2": True, "node3": True}
        assert not ceph.mount(readers).changed
        for node in readers:
            text = cluster.run(["cat", f"{ceph.mountpoint}/mounted.txt"], nodes=[node], stage="test read")
            assert text[node]["stdout"] == "through the mount"
        # as the writer on node2: replaced there, then kept; read-only again: writes are refused
        writable = ceph.mount(["node2"], user=ceph.users.fs_write).nodes["node2"]
        assert writable.changed and writable.message.startswith("CephFS remounted at") \
            and writable.message.endswith(ceph.users.fs_write.entity), writable.message
        assert not ceph.mount(["node2"], user=ceph.users.fs_write).changed
        cluster.run(["sh", "-c", 'echo w > "$1"', "sh", f"{ceph.mountpoint}/written.txt"], nodes=["node2"],
                    stage="test write")
        assert ceph.mount(["node2"]).changed
        refused = cluster.run(["sh", "-c", 'echo w > "$1"', "sh", f"{ceph.mountpoint}/refused.txt"], nodes=["node2"],
                              stage="test write", check=False)["node2"]
        assert refused["rc"] != 0, refused
        cluster.run(["sh", "-c", KILL_FUSE], nodes=["node3"], stage="test kill ceph-fuse")
        dead = cluster.run(["stat", ceph.mountpoint], nodes=["node3"], stage="test", check=False)["node3"]
        assert dead["rc"] != 0 and "not connected" in dead["stderr"], dead
        again = ceph.mount(readers)
        assert {n: o.changed for n, o in again.nodes.items()} == {"node2": False, "node3": True}
        text = cluster.run(["cat", f"{ceph.mountpoint}/mounted.txt"], nodes=["node3"], stage="test read")
        assert text["node3"]["stdout"] == "through the mount"
        stopped = ceph.stop()
        for node in readers:
            assert stopped.nodes[node].message == f"unmounted {ceph.mountpoint}"
            probe = cluster.run(["mountpoint", "-q", ceph.mountpoint], nodes=[node], stage="test", check=False)
            assert probe[node]["rc"] != 0
        assert "stopped" in stopped.nodes["node1"].message
        assert not ceph.unmount().changed
    finally:
        ceph.unmount()
        ceph.uninstall()


def test_uninstall_unmounts_first(local_cluster, cluster):
    """A stack replaced under its clients (sae's install of a different stack uninstalls the old
    one) leaves no mount and no ceph-fuse behind."""
    res = sibling(local_cluster, "v")
    ceph = CephCluster(res, Layout({"ceph-mon": ["node1"], "ceph-mgr": ["node1"], "ceph-mds": ["node1"],
                                    "ceph-osd": ["node1"], "ceph-client": ["node2"]}),
                       CephOptions(store="memstore", osd_size="512MiB", mon_port=3600, mon_v1_port=None,
                                   mgr_prometheus=False),
                       cluster=cluster)
    try:
        ceph.install()
        ceph.start()
        assert ceph.mount(["node2"]).changed
        gone = ceph.uninstall()
        assert gone.nodes["node2"].message.startswith(f"unmounted {ceph.mountpoint}")
        assert gone.nodes["node1"].message.startswith("stopped daemons and removed")
        probe = cluster.run(["mountpoint", "-q", ceph.mountpoint], nodes=["node2"], stage="test", check=False)
        assert probe["node2"]["rc"] != 0
        left = cluster.run(["sh", "-c", FUSE_HERE], nodes=["node2"], stage="test")["node2"]["stdout"]
        assert left == "", left
    finally:
        ceph.unmount()
        ceph.uninstall()
