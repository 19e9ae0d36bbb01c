"""The shared Ceph cluster (fixtures.ceph): health, librados, libcephfs, the class, idempotent
stages, a killed OSD, and a bluestore restart. Destructive tests restore the cluster before ending."""
import dataclasses
import errno
import os
import time
from importlib import resources

import pytest

from fixtures.ceph import SYSTEM_PYTHON, client_python, kill_daemon
from metareserve import RemoteError, node_agent
from rados_deploy import CephCluster
from rados_deploy.objclass import SOFTWARE_ROOT, build_key, sources
from rados_deploy.scan_protocol import SPEC
from rados_deploy.sessions import library_sessions

RADOS_RW = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
io = r.open_ioctx("{pool}")
data = os.urandom(3 << 20)
io.write_full("{oid}", data)
size, _ = io.stat("{oid}")
back = io.read("{oid}", length=size)
print(json.dumps({{"size": size, "equal": back == data}}))
"""

MOUNT_T = """
import json, os, time, cephfs
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount(filesystem_name=b"{fs}")
try:
    fs.mkdir("/t", 0o755)
except cephfs.ObjectExists:
    pass
"""
"""A libcephfs client's first lines (``.format(fs=...)``): CephFS mounted as ``fs``, ``/t`` made."""

CEPHFS_RW = MOUNT_T + """data = os.urandom(5 << 20)
fd = fs.open("/t/{name}", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644); fs.write(fd, data, 0); fs.fsync(fd, 0); fs.close(fd)
st = fs.stat("/t/{name}")
fd = fs.open("/t/{name}", os.O_RDONLY, 0); back = fs.read(fd, 0, st.st_size); fs.close(fd)
fs.unmount(); fs.shutdown()
print(json.dumps({{"size": st.st_size, "equal": back == data}}))
"""

CLS_ECHO = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
io = r.open_ioctx("{pool}"); io.write_full("echo-probe", b"x")
ret, out = io.execute("echo-probe", "sae", "echo", b"hello sae", length=4096)
print(json.dumps({{"ret": ret, "out": out.decode()}}))
"""


def test_health_ok_and_every_daemon_up(ceph_cluster):
    st = ceph_cluster.status()
    assert st.ok, st.lines()
    assert sorted(d.name for d in st.daemons) == ["mds.node1", "mgr.node1", "mon.node1", "osd.0", "osd.1", "osd.2"]
    assert {d.host for d in st.daemons if d.role == "osd"} == {"node1", "node2", "node3"}
    assert st.detail["pgs_clean"] == st.detail["pgs_expected"] == sum(p["pg_num"] for p in st.detail["pools"].values())


SET_PG_NUM = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
for var in ("pg_num", "pgp_num"):
    ret, _, err = r.mon_command(json.dumps({{"prefix": "osd pool set", "pool": "{pool}", "var": var, "val": "{n}"}}), b"")
    assert ret == 0, err
print(json.dumps(ret))
"""


def test_pools_have_computed_pg_counts_and_the_autoscaler_goes_on_and_off(ceph_cluster):
    """Computed PG counts and no autoscaler by default. ``pg_autoscale`` on a running cluster:
    start turns it on for both CephFS pools (and again changes nothing); off after the PG count
    moved (as the autoscaler would move it) merges the pools back to the computed count; the
    OSDs' own PG gauge agrees with the pools' counts."""
    def pools():
        return ceph_cluster.status().detail["pools"]
    data, meta = ceph_cluster.data_pool, ceph_cluster.metadata_pool
    assert pools()[data]["pg_num"] == 32      # 3 OSDs x 16 / 1 replica -> 32
    assert pools()[meta]["pg_num"] == 8
    assert {p["autoscale"] for p in pools().values()} == {"off"}
    assert ceph_cluster.osd_counters().pgs == sum(p["pg_num"] for p in pools().values())
    mon = ceph_cluster.topology.mons[0]
    for autoscale in (True, False):
        c = CephCluster(ceph_cluster.reservation, ceph_cluster.layout,
                        dataclasses.replace(ceph_cluster.options, pg_autoscale=autoscale), cluster=ceph_cluster.cluster)
        mode = "on" if autoscale else "off"
        if autoscale:
            first = c.start().nodes[mon]
            assert first.changed and f"PG autoscaler turned on for {meta}, {data} (was: {meta} off pg_num 8" in first.message
            client_python(c, "node1", SET_PG_NUM.format(pool=data, n=36))   # the autoscaler's kind of change
            deadline = time.monotonic() + 120
            while pools()[data]["pg_num"] != 36:
                assert time.monotonic() < deadline, pools()[data]
                time.sleep(1)
        else:
            first = c.start().nodes[mon]
            assert first.changed and f"{data} on pg_num 36)" in first.message, first.message
        again = c.start().nodes[mon]
        assert not again.changed and f"PG autoscaler {mode} for {meta}, {data}" in again.message, again.message
        assert {pools()[p]["autoscale"] for p in (data, meta)} == {mode}
    assert pools()[data]["pg_num"] == 32 and pools()[meta]["pg_num"] == 8
    assert ceph_cluster.osd_counters().pgs == sum(p["pg_num"] for p in pools().values())


@pytest.mark.parametrize("node", ["node1", "node3"])
def test_librados_write_and_read(ceph_cluster, node):
    out = client_python(ceph_cluster, node, RADOS_RW.format(pool=ceph_cluster.data_pool, oid=f"t-{node}"))
    assert out == {"size": 3 << 20, "equal": True}


def test_cephfs_file_write_and_read(ceph_cluster):
    out = client_python(ceph_cluster, "node2", CEPHFS_RW.format(fs=ceph_cluster.fs_name, name="f1"))
    assert out == {"size": 5 << 20, "equal": True}


def test_client_conf_sets_op_timeout(ceph_cluster):
    conf = ceph_cluster.client_conf("node3")
    text = ceph_cluster.cluster.run(["cat", conf], nodes=["node3"], stage="test")["node3"]["stdout"]
    assert f"rados osd op timeout = {ceph_cluster.options.op_timeout}" in text


def test_class_version_answers_through_every_osd(ceph_cluster):
    versions = ceph_cluster.class_version()
    assert sorted(versions) == ["node1/osd.0", "node2/osd.1", "node3/osd.2"]
    for reply in versions.values():
        assert reply["class"] == "sae" and reply["protocol"] == SPEC.version and reply["arrow"] == "26.0.1"


def test_class_echo(ceph_cluster):
    out = client_python(ceph_cluster, "node2", CLS_ECHO.format(pool=ceph_cluster.data_pool))
    assert out == {"ret": 9, "out": "hello sae"}


def test_osds_load_arrow_from_their_class_dir(ceph_cluster):
    st = ceph_cluster.status()
    osd = next(d for d in st.daemons if d.role == "osd")
    maps = open(f"/proc/{osd.pid}/maps").read() if os.path.exists(f"/proc/{osd.pid}/maps") else ""
    classdir = f"{ceph_cluster.state_dir(osd.host)}/classes"
    for lib in ("libcls_sae.so", "libarrow.so.2600", "libparquet.so.2600"):
        assert f"{classdir}/{lib}" in maps


def test_mgr_prometheus_module_serves_metrics(ceph_cluster, cluster):
    addr = ceph_cluster.reservation.node("node1").cluster_address
    r = cluster.call(node_agent, "http_get", f"http://{addr}:9283/metrics", nodes=["node1"], stage="test")["node1"]
    assert r["status"] == 200 and "ceph_health_status" in r["body"]


def test_stages_twice_change_nothing(ceph_cluster):
    for stage in (ceph_cluster.install, ceph_cluster.start, ceph_cluster.install_class):
        report = stage()
        assert not report.changed, report.nodes
        assert all(o.message for o in report.nodes.values())


HOLDER = MOUNT_T + """fd = fs.open("/t/held", os.O_CREAT | os.O_WRONLY, 0o644); fs.write(fd, b"held", 0); fs.fsync(fd, 0)
time.sleep(600)   # the file stays open: its capabilities stay with this session
"""


def test_start_evicts_the_cephfs_session_of_a_killed_library_client_only(ceph_cluster):
    """A libcephfs client killed with -9 leaves its MDS session and capabilities behind (another
    client's stat of its file waited ~55 s, measured); start evicts the session once its process
    is gone, and leaves a live client's alone."""
    node, run = "node2", f"{ceph_cluster.state_dir('node2')}/test-holder"
    started = ceph_cluster.cluster.call(node_agent, "start_daemon", [SYSTEM_PYTHON, "-c", HOLDER.format(
        fs=ceph_cluster.fs_name)], f"{run}.pid", f"{run}.log", {"CEPH_CONF": ceph_cluster.client_conf(node)},
        nodes=[node], stage="test holder")[node]
    pid = started["pid"]
    try:
        deadline = time.monotonic() + 60
        while not [s for s in library_sessions(ceph_cluster) if s.pid == pid] and time.monotonic() < deadline:
            time.sleep(0.3)
        held = [s for s in library_sessions(ceph_cluster) if s.pid == pid]
        assert [(s.node, s.mds) for s in held] == [(node, "mds.node1")], held
        assert not ceph_cluster.start().changed   # alive: its session stays
        assert [s.id for s in library_sessions(ceph_cluster) if s.pid == pid] == [held[0].id]
    finally:
        kill_daemon(pid)
    report = ceph_cluster.start()
    assert report.changed and report.nodes["node1"].message.endswith(
        f"evicted the CephFS sessions of dead clients: client.{held[0].id} (pid {pid} on {node})"), report.nodes
    assert not [s for s in library_sessions(ceph_cluster) if s.pid == pid]
    assert client_python(ceph_cluster, "node3", MOUNT_T.format(fs=ceph_cluster.fs_name) +
                         "print(fs.stat('/t/held').st_size)") == 4
    assert not ceph_cluster.start().changed


def test_killed_osd_is_reported_down_with_its_host_then_restarted(ceph_cluster, figure):
    """sae sees the dead process at once; Ceph's own osdmap follows within its heartbeat grace
    (20 s; peers refused a connection to a dead OSD report it at once)."""
    victim = next(d for d in ceph_cluster.status().daemons if d.name == "osd.1")
    try:
        kill_daemon(victim.pid)
        killed = time.monotonic()
        st = ceph_cluster.status()
        assert [(d.name, d.host) for d in st.down] == [("osd.1", "node2")]
        assert not st.ok
        while 1 in st.detail.get("osds_up", [1]) and time.monotonic() - killed < 60:
            time.sleep(0.5)
            st = ceph_cluster.status()
        took = time.monotonic() - killed
        figure(f"osd.1 killed: down in the osdmap after {took:.1f}s")
        assert 1 not in st.detail["osds_up"] and took <= 30, (took, st.detail)
    finally:
        report = ceph_cluster.start()
    assert report.nodes["node2"].changed and "osd.1" in report.nodes["node2"].message
    assert not report.nodes["node1"].changed
    assert ceph_cluster.status().ok
    assert sorted(ceph_cluster.class_version()) == ["node1/osd.0", "node2/osd.1", "node3/osd.2"]


def test_bluestore_stop_start_keeps_objects(ceph_cluster):
    client_python(ceph_cluster, "node1", RADOS_RW.format(pool=ceph_cluster.data_pool, oid="keep-me"))
    try:
        assert ceph_cluster.stop().changed
        st = ceph_cluster.status()
        assert st.health == "unreachable" and not any(d.up for d in st.daemons)
        assert not ceph_cluster.stop().changed
    finally:
        report = ceph_cluster.start()
    assert report.changed and report.details["bringup_seconds"] > 0
    out = client_python(ceph_cluster, "node2", f"""
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
print(json.dumps(r.open_ioctx("{ceph_cluster.data_pool}").stat("keep-me")[0]))""")
    assert out == 3 << 20
    assert ceph_cluster.status().ok


EXTRA_METHODS = r"""
#include <stdexcept>
#include "sae_cls.h"
static cls_method_handle_t h_ping, h_boom;
static int ping(cls_method_context_t, ceph::bufferlist*, ceph::bufferlist* out) { out->append("pong"); return 0; }
static int boom(cls_method_context_t, ceph::bufferlist*, ceph::bufferlist*) { throw std::runtime_error("boom"); }
extern "C" void sae_register_extra_methods(cls_handle_t h) {
  cls_register_cxx_method(h, "ping", CLS_METHOD_RD, sae::guarded<ping>, &h_ping);
  cls_register_cxx_method(h, "boom", CLS_METHOD_RD, sae::guarded<boom>, &h_boom);
}
"""

CALL_EXTRA = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
io = r.open_ioctx("{pool}"); io.write_full("extra-probe", b"x")
ret, out = io.execute("extra-probe", "sae", "ping", b"", length=4096)
try:
    io.execute("extra-probe", "sae", "boom", b"", length=4096); boom = None
except rados.OSError as e:
    boom = e.errno
print(json.dumps({{"ping": out.decode(), "boom": boom}}))
"""


def test_changed_class_restarts_osds_and_picks_up_extra_methods(ceph_cluster, tmp_path):
    """A cls/*.cc defining sae_register_extra_methods is built in; OSDs that loaded the old class
    restart; a throwing method fails the call with EIO instead of killing the OSD."""
    src = resources.files("rados_deploy").joinpath("cls")
    for name in ("sae.cc", "sae_cls.h"):   # protocol.h is rendered from the spec
        (tmp_path / name).write_text(src.joinpath(name).read_text())
    (tmp_path / "extra.cc").write_text(EXTRA_METHODS)
    try:
        report = ceph_cluster.install_class(source_dir=tmp_path)
        assert all("restarted osd." in o.message for o in report.nodes.values()), report.nodes
        out = client_python(ceph_cluster, "node3", CALL_EXTRA.format(pool=ceph_cluster.data_pool))
        assert out == {"ping": "pong", "boom": errno.EIO}
        assert ceph_cluster.status().ok
    finally:
        restored = ceph_cluster.install_class()
    assert all("restarted osd." in o.message for o in restored.nodes.values())
    assert len(ceph_cluster.class_version()) == 3


def test_a_class_that_does_not_compile_is_one_line_and_leaves_no_build(ceph_cluster, tmp_path):
    """The OSDs keep the class they run; the failed build's directory is removed (its lock file,
    shared by concurrent builds, stays)."""
    src = resources.files("rados_deploy").joinpath("cls")
    for name in ("sae.cc", "sae_cls.h"):   # protocol.h is rendered from the spec
        (tmp_path / name).write_text(src.joinpath(name).read_text())
    (tmp_path / "broken.cc").write_text("this is not C++;\n")
    root = f"{SOFTWARE_ROOT}/cls/{build_key(sources(tmp_path), ceph_cluster.options.class_arrow)}"
    with pytest.raises(RemoteError) as e:
        ceph_cluster.install_class(source_dir=tmp_path)
    assert "g++ failed" in str(e.value) and "broken.cc" in str(e.value) and "\n" not in str(e.value)
    assert not os.path.exists(root)
    assert len(ceph_cluster.class_version()) == 3
