"""Other shapes than the shared cluster, each with its own state and mon port on the same hosts:
memstore with every role on one node and two OSDs, and a client timing out on a dead OSD."""
import pytest

from fixtures.ceph import client_python, kill_daemon, running_daemons, sibling
from metareserve import Layout, OperationalError
from rados_deploy import CephCluster, CephOptions

WRITE = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
io = r.open_ioctx("{pool}"); io.write_full("mem-obj", b"m" * 4096)
print(json.dumps(io.stat("mem-obj")[0]))
"""
STAT = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
print(json.dumps(r.open_ioctx("{pool}").stat("mem-obj")[0]))
"""


@pytest.fixture(scope="module")
def memstore(local_cluster, cluster):
    res = sibling(local_cluster, "m")
    layout = Layout({r: ["node2"] for r in ("ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd", "ceph-client")})
    ceph = CephCluster(res, layout, CephOptions(store="memstore", osd_size="1GiB", osds_per_node=2, mon_port=3400,
                                                mon_v1_port=None, max_object_size="256MiB", op_timeout=5),
                       cluster=cluster)
    try:
        yield ceph
    finally:
        ceph.uninstall()


def test_memstore_one_node_every_role(memstore):
    report = memstore.start()
    assert report.nodes["node2"].changed and report.details["health"] == "HEALTH_OK"
    st = memstore.status()
    assert st.ok and sorted(d.name for d in st.daemons) == ["mds.node2", "mgr.node2", "mon.node2", "osd.0", "osd.1"]
    assert st.detail["pools"][memstore.data_pool]["pg_num"] == 32
    assert client_python(memstore, "node2", WRITE.format(pool=memstore.data_pool)) == 4096
    assert not memstore.start().changed


def test_memstore_keeps_data_through_a_clean_stop(memstore):
    report = memstore.stop()
    assert "memstore" in report.nodes["node2"].message
    assert running_daemons(memstore) == []
    memstore.start()
    assert client_python(memstore, "node2", STAT.format(pool=memstore.data_pool)) == 4096


READ_VIA_DEAD_OSD = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
io = r.open_ioctx("{pool}")
try:
    io.read("mem-obj"); error = None
except rados.Error as e:
    error = type(e).__name__
print(json.dumps(error), flush=True)
os._exit(0)   # librados may crash tearing down with an op to a dead OSD still queued
"""
PRIMARY = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
ret, out, _ = r.mon_command(json.dumps({{"prefix": "osd map", "pool": "{pool}", "object": "mem-obj",
                                         "format": "json"}}), b"")
print(json.dumps(json.loads(out)["acting_primary"]))
"""


def test_client_op_on_a_killed_osd_times_out_instead_of_hanging(memstore):
    """rados_osd_op_timeout from client_conf (5 s here): memstore data of the killed OSD is lost."""
    primary = client_python(memstore, "node2", PRIMARY.format(pool=memstore.data_pool))
    victim = next(d for d in memstore.status().daemons if d.name == f"osd.{primary}")
    kill_daemon(victim.pid)
    assert [(d.name, d.host) for d in memstore.status().down] == [(victim.name, "node2")]
    assert client_python(memstore, "node2", READ_VIA_DEAD_OSD.format(pool=memstore.data_pool)) == "TimedOut"
    with pytest.raises(OperationalError, match=rf"^\[node2 ceph-osd start\] {victim.name} \(memstore\) crashed"):
        memstore.start()


def test_uninstall_removes_state(memstore, cluster):
    state = memstore.state_dir("node2")
    assert memstore.uninstall().changed
    assert cluster.run(["test", "-e", state], nodes=["node2"], stage="test", check=False)["node2"]["rc"] == 1
    assert not memstore.uninstall().changed


def test_three_mons_two_mgrs_two_mds(local_cluster, cluster):
    layout = Layout({"ceph-mon": ["node1", "node2", "node3"], "ceph-mgr": ["node1", "node2"],
                     "ceph-mds": ["node1", "node3"], "ceph-osd": ["node2", "node3"], "ceph-client": ["node1"]})
    ceph = CephCluster(sibling(local_cluster, "q"), layout,
                       CephOptions(store="memstore", osd_size="1GiB", mon_port=3600, mon_v1_port=None,
                                   mgr_prometheus=False), cluster=cluster)
    try:
        assert ceph.start().details["health"] == "HEALTH_OK"
        st = ceph.status()
        assert st.ok and len(st.daemons) == 9
        assert st.detail["mds"] == ["up:active"]
    finally:
        ceph.uninstall()
