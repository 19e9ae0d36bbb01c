"""Least-privilege cephx users: each client role may do what it needs and nothing else, as real
OSDs, mons and the MDS decide (EPERM/EACCES), and the ceph-fuse mount for readers is read-only."""
from __future__ import annotations

import os

import pytest

from fixtures.ceph import client_python
from metareserve import RemoteError
from rados_deploy import CephUser

NODE = "node2"
DIR = "/sae-users"
OID = "sae-users-probe"

SETUP = f"""
import os, rados, cephfs
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect()
io = r.open_ioctx("cephfs_data"); io.set_namespace("sae-users"); io.write_full("{OID}", b"sae")
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
try:
    fs.mkdir("{DIR}", 0o755)
except cephfs.ObjectExists:
    pass
fd = fs.open("{DIR}/hello.txt", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
fs.write(fd, b"read me", 0); fs.close(fd); fs.shutdown(); r.shutdown()
print("0")
"""

# Tries every operation as one user; prints {operation: "ok" or the errno's name}.
ATTEMPTS = f"""
import errno, json, os, sys, rados, cephfs
user = sys.argv[1]

def outcome(fn):
    try:
        ret = fn()
    except (rados.Error, cephfs.Error, OSError) as e:
        return errno.errorcode.get(abs(getattr(e, "errno", 0) or 0), type(e).__name__)
    if isinstance(ret, tuple) and isinstance(ret[0], int) and ret[0] < 0:   # mon_command's (ret, out, err)
        return errno.errorcode.get(-ret[0], str(ret[0]))
    return "ok"

r = rados.Rados(conffile=os.environ["CEPH_CONF"], rados_id=user, conf={{"rados_osd_op_timeout": "30"}})
r.connect(timeout=30)
data = r.open_ioctx("cephfs_data"); data.set_namespace("sae-users")
meta = r.open_ioctx("cephfs_metadata")
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"], auth_id=user); fs.mount()

def read_file():
    fd = fs.open("{DIR}/hello.txt", os.O_RDONLY, 0)
    try:
        assert fs.read(fd, 0, 64) == b"read me"
    finally:
        fs.close(fd)

def layout_file():   # a layout of its own (the connector's writes: ceph_open_layout), which MDS cap p allows
    path = "{DIR}/" + user + ".layout"
    fd = fs.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    fs.close(fd)
    try:
        fs.setxattr(path, "ceph.file.layout", b"stripe_unit=8388608 stripe_count=1 object_size=8388608", 0)
    finally:
        fs.unlink(path)

def write_file():
    fd = fs.open("{DIR}/" + user + ".txt", os.O_CREAT | os.O_WRONLY, 0o644)
    fs.close(fd)
    fs.unlink("{DIR}/" + user + ".txt")

out = {{
    "call sae.version": outcome(lambda: data.execute("{OID}", "sae", "version", b"", length=65536)),
    "call another class": outcome(lambda: data.execute("{OID}", "lock", "get_info", b"", length=65536)),
    "read object": outcome(lambda: data.read("{OID}")),
    "write object": outcome(lambda: data.write_full("{OID}-" + user, b"x")),
    "remove object": outcome(lambda: data.remove_object("{OID}-" + user)),
    "read metadata pool": outcome(lambda: meta.stat("mds0_inotable")),
    "mon write": outcome(lambda: r.mon_command(json.dumps({{"prefix": "osd pool create", "pool": "sae-users-x",
                                                          "pg_num": 8}}), b"", timeout=30)),
    "list cephfs": outcome(lambda: fs.stat("{DIR}/hello.txt")),
    "read cephfs file": outcome(read_file),
    "write cephfs file": outcome(write_file),
    "set a file's layout": outcome(layout_file),
}}
fs.shutdown(); r.shutdown()
print(json.dumps(out))
"""

ALLOWED = {
    # the offloading connector: list CephFS, call the sae class and read objects (mode auto's
    # pushback reads some whole), so files' data too; no writes, no other pool or class
    "scan": {"call sae.version", "read object", "list cephfs", "read cephfs file"},
    # vanilla readers' mount: read CephFS and its data objects, nothing else
    "fs_read": {"read object", "list cephfs", "read cephfs file"},
    # data deployment: read and write CephFS and the data pool's objects
    "fs_write": {"read object", "write object", "remove object", "list cephfs", "read cephfs file",
                 "write cephfs file", "set a file's layout"},
    # the connector's writes: fs_write's file and object work without the MDS's "allow *", and
    # the class calls of scan (a write's schema is checked against the directory's files)
    "write": {"call sae.version", "read object", "write object", "remove object", "list cephfs", "read cephfs file",
              "write cephfs file", "set a file's layout"},
}


@pytest.fixture(scope="module")
def data(ceph_cluster):
    client_python(ceph_cluster, "node1", SETUP)
    yield
    client_python(ceph_cluster, "node1", f"""
import os, cephfs
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
fs.unlink("{DIR}/hello.txt"); fs.rmdir("{DIR}"); fs.shutdown()
""")


def attempts(ceph, user_id: str) -> dict:
    return client_python(ceph, NODE, ATTEMPTS, user_id)


@pytest.mark.parametrize("role", sorted(ALLOWED))
def test_each_user_may_do_what_its_role_needs_and_nothing_else(ceph_cluster, data, role):
    user = getattr(ceph_cluster.users, role)
    got = attempts(ceph_cluster, user.id)
    assert {op for op, o in got.items() if o == "ok"} == ALLOWED[role], got
    refused = {op: o for op, o in got.items() if o != "ok"}
    assert refused["mon write"] == "EACCES", got   # the mon refuses
    # the OSDs refuse with EPERM (an operation a role may do never fails for another reason)
    osd_ops = {"call sae.version", "read object", "write object", "read metadata pool"} & set(refused)
    assert {refused[op] for op in osd_ops} <= {"EPERM"}, got


def test_admin_still_may_do_everything(ceph_cluster, data):
    got = attempts(ceph_cluster, "admin")
    assert got.pop("mon write") == "ok" and got.pop("call another class") in ("ok", "EINVAL", "ENOENT")
    assert set(got.values()) == {"ok"}, got
    client_python(ceph_cluster, "node1", """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect()
ret = r.mon_command(json.dumps({"prefix": "osd pool rm", "pool": "sae-users-x", "pool2": "sae-users-x",
                                "yes_i_really_really_mean_it": True}), b"")[0]
r.shutdown(); print(ret)
""")


def test_users_exist_with_their_caps_and_private_keyrings(ceph_cluster, cluster):
    for user in ceph_cluster.users.made:
        got = client_python(ceph_cluster, "node1", f"""
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect()
out = r.mon_command(json.dumps({{"prefix": "auth get", "entity": "{user.entity}", "format": "json"}}), b"")[1]
r.shutdown(); print(out.decode())
""")
        assert got[0]["caps"] == user.caps
        for node in ceph_cluster.topology.clients:
            path = ceph_cluster.keyring_path(node, user)
            modes = cluster.run(["stat", "-c", "%a", path, os.path.dirname(path)], nodes=[node],
                                stage="test")[node]["stdout"].split()
            assert modes == ["600", "700"], (node, path, modes)
            text = cluster.run(["cat", path], nodes=[node], stage="test")[node]["stdout"]
            assert f"[{user.entity}]" in text and got[0]["key"] in text and "client.admin" not in text


def test_a_user_whose_caps_drifted_is_set_back_by_start(ceph_cluster):
    scan = ceph_cluster.users.scan
    drift = client_python(ceph_cluster, "node1", f"""
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect()
ret = r.mon_command(json.dumps({{"prefix": "auth caps", "entity": "{scan.entity}",
                                 "caps": ["mon", "allow r", "osd", "allow *"]}}), b"")
r.shutdown(); print(json.dumps([ret[0], ret[2]]))
""")
    assert drift[0] == 0, drift
    report = ceph_cluster.start()
    assert f"users {scan.entity} created or their caps set" in report.nodes["node1"].message, report.nodes
    assert [n for n, o in report.nodes.items() if o.changed] == ["node1"], report.nodes
    assert not ceph_cluster.start().changed
    assert attempts(ceph_cluster, scan.id)["write object"] == "EPERM"


def test_a_conf_from_before_users_is_rewritten_once_by_start(ceph_cluster, cluster):
    conf = ceph_cluster.conf_path("node3")
    text = cluster.run(["cat", conf], nodes=["node3"], stage="test")["node3"]["stdout"]
    old = "\n".join(l for l in text.splitlines()[1:] if "$name.keyring" not in l) + "\n"
    cluster.write(conf, "# Generated by rados_deploy for node node3\n" + old, nodes=["node3"], stage="test")
    report = ceph_cluster.start()
    assert report.nodes["node3"].changed and "rewritten in format 2 (it was format 1)" in report.nodes["node3"].message
    assert cluster.run(["cat", conf], nodes=["node3"], stage="test")["node3"]["stdout"] == text
    assert not ceph_cluster.start().changed


def test_the_readers_mount_is_read_only(ceph_cluster, cluster, data):
    report = ceph_cluster.mount([NODE])
    mp = ceph_cluster.mountpoint
    try:
        assert report.details["user"] == ceph_cluster.users.fs_read.entity
        assert cluster.run(["cat", f"{mp}{DIR}/hello.txt"], nodes=[NODE], stage="test")[NODE]["stdout"] == "read me"
        for argv in (["touch", f"{mp}{DIR}/new.txt"], ["mkdir", f"{mp}{DIR}/new"],
                     ["rm", f"{mp}{DIR}/hello.txt"], ["sh", "-c", f"echo x >> {mp}{DIR}/hello.txt"]):
            r = cluster.run(argv, nodes=[NODE], stage="test", check=False)[NODE]
            assert r["rc"] != 0 and "Permission denied" in r["stderr"], (argv, r)
        assert cluster.run(["cat", f"{mp}{DIR}/hello.txt"], nodes=[NODE], stage="test")[NODE]["stdout"] == "read me"
    finally:
        ceph_cluster.unmount([NODE])



def test_a_mount_that_fails_leaves_no_mount_point(ceph_cluster, cluster):
    def exists() -> bool:
        return cluster.run(["test", "-e", ceph_cluster.mountpoint], nodes=[NODE], stage="test",
                           check=False)[NODE]["rc"] == 0
    mounted = cluster.run(["mountpoint", "-q", ceph_cluster.mountpoint], stage="test", check=False)
    assert all(r["rc"] != 0 for r in mounted.values())
    cluster.run(["rmdir", ceph_cluster.mountpoint], nodes=[NODE], stage="test", check=False)   # an earlier mount's
    assert not exists()
    nobody = CephUser("sae-nobody", {})   # no such user, no keyring
    with pytest.raises(RemoteError) as e:
        ceph_cluster.mount([NODE], user=nobody)
    assert str(e.value).startswith(f"[{NODE} ceph-fuse mount]") and "\n" not in str(e.value)
    assert not exists()
