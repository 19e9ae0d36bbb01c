"""Pure decisions: options, sizes, PG counts, topology validation, ceph.conf, keyrings."""
import base64
import configparser

import pytest

from metareserve import Layout, Node, Reservation, UsageError
from rados_deploy import CephOptions, CephStatus, DaemonStatus
from rados_deploy.cluster import describe
from rados_deploy.config import Topology, keyring, mon_addrs, new_key, pg_counts, render_conf


def reservation(n=3):
    nodes = [Node(name=f"node{i}", host=f"10.0.0.{i}", address=f"10.0.0.{i}") for i in range(1, n + 1)]
    return Reservation(name="t", provider="local", nodes=nodes)


@pytest.mark.parametrize("text,value", [("4GiB", 4 << 30), ("512MiB", 512 << 20), ("1g", 1 << 30),
                                        (1073741824, 1 << 30), ("2 MB", 2_000_000), ("1.5GB", 1_500_000_000)])
def test_option_sizes(text, value):
    o = CephOptions(osd_size=text, max_object_size=text)
    assert o.osd_size == o.max_object_size == value


@pytest.mark.parametrize("bad", ["", "-1", "4 parsecs", "GiB", "0.3B", True, 0, "0GiB"])
@pytest.mark.parametrize("field", ["osd_size", "max_object_size"])
def test_option_sizes_reject(field, bad):
    with pytest.raises(UsageError, match=rf"^CephOptions.{field}: .* is (not a|below the minimum) .*\(examples: "):
        CephOptions(**{field: bad})


def test_options_validate():
    with pytest.raises(UsageError, match="store must be"):
        CephOptions(store="filestore")
    with pytest.raises(UsageError, match="osds_per_node=1"):
        CephOptions(bluestore_device="/dev/sdb", osds_per_node=2)
    with pytest.raises(UsageError, match="op_timeout"):
        CephOptions(op_timeout=0)
    with pytest.raises(UsageError, match="daemon_ports"):
        CephOptions(daemon_ports=(7000, 6800))
    assert CephOptions(store="memstore", osd_size="1GiB").osd_size == 1 << 30


@pytest.mark.parametrize("osds,replicas,data,meta", [(1, 1, 16, 8), (3, 1, 32, 8), (8, 1, 128, 32),
                                                     (3, 3, 16, 8), (100, 3, 512, 128)])
def test_pg_counts(osds, replicas, data, meta):
    assert pg_counts(osds, replicas=replicas, pgs_per_osd=16) == (data, meta)


def test_layout_needs_mon_and_osd():
    res = reservation()
    with pytest.raises(UsageError, match="no ceph-mon node"):
        Topology.from_layout(res, Layout({"ceph-osd": ["node1"]}), CephOptions())
    with pytest.raises(UsageError, match="no ceph-osd node"):
        Topology.from_layout(res, Layout({"ceph-mon": ["node1"]}), CephOptions())
    with pytest.raises(UsageError, match="node9"):
        Topology.from_layout(res, Layout({"ceph-mon": ["node9"], "ceph-osd": ["node1"]}), CephOptions())


HEAD_AND_OSDS = Layout({"ceph-mon": ["node1"], "ceph-mgr": ["node1"], "ceph-mds": ["node1"],
                        "ceph-osd": ["node2", "node3"], "ceph-client": ["node1", "node2", "node3"]})


def test_topology_defaults_and_ids():
    res = reservation()
    topo = Topology.from_layout(res, HEAD_AND_OSDS, CephOptions(osds_per_node=2))
    assert topo.mgrs == topo.mdss == ["node1"]
    assert topo.osd_ids("node2") == [0, 1] and topo.osd_ids("node3") == [2, 3] and topo.num_osds == 4
    assert topo.daemons("node1") == ["mon.node1", "mgr.node1", "mds.node1"]
    assert topo.nodes == ["node1", "node2", "node3"] and topo.server_nodes == topo.nodes


def test_one_node_every_role():
    res = reservation(1)
    topo = Topology.from_layout(res, Layout.default(res), CephOptions())
    assert topo.daemons("node1") == ["mon.node1", "mgr.node1", "osd.0", "mds.node1"]


def _conf(options, node="node2"):
    res = reservation()
    topo = Topology.from_layout(res, HEAD_AND_OSDS, options)
    text = render_conf(node=node, state="/s", address="10.0.0.2", fsid="f", topo=topo, options=options,
                       mon_host=",".join(a for _, a in mon_addrs(res, topo, options)))
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.read_string(text)
    return parser


def test_conf_memstore():
    c = _conf(CephOptions(store="memstore", osd_size="2GiB", max_object_size="256MiB", op_timeout=7))
    assert c["global"]["mon host"] == "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]"
    assert c["global"]["public addr"] == "10.0.0.2"
    assert (c["global"]["ms bind port min"], c["global"]["ms bind port max"]) == ("6800", "7000")
    assert c["global"]["osd pool default pg autoscale mode"] == "off"
    assert c["osd"]["osd fast shutdown"] == "false"
    assert c["osd"]["memstore device bytes"] == str(2 << 30)
    assert c["osd"]["osd max object size"] == str(256 << 20)
    assert c["osd"]["osd class dir"] == "/s/classes"
    assert c["client"]["rados osd op timeout"] == "7"
    assert c["mgr"]["keyring"] == "/s/data/$name/keyring"


def test_conf_bluestore_device_and_no_cephx():
    c = _conf(CephOptions(bluestore_device="/dev/sdb", cephx=False, mon_v1_port=None))
    assert c["global"]["auth cluster required"] == "none" and "keyring" not in c["global"]
    assert c["global"]["mon host"] == "[v2:10.0.0.1:3300]"
    assert c["osd"]["bluestore block create"] == "false"
    assert c["osd.0"]["bluestore block path"] == "/dev/sdb"


def test_keys_and_keyring():
    raw = base64.b64decode(new_key())
    assert len(raw) == 28 and raw[:2] == b"\x01\x00"
    text = keyring({"client.admin": ("KEY", {"mon": "allow *"})})
    assert text == '[client.admin]\n\tkey = KEY\n\tcaps mon = "allow *"\n'


def test_status_lines_and_down():
    st = CephStatus([DaemonStatus("mon", "node1", "node1", 10, True), DaemonStatus("osd", "1", "node2", None, False)],
                    "HEALTH_WARN", {"checks": ["OSD_DOWN"], "pgs_expected": 41, "pgs_clean": 30})
    assert [d.name for d in st.down] == ["osd.1"] and not st.ok
    assert st.lines()[1].split() == ["node2", "osd.1", "DOWN", "pid", "-"]
    assert st.lines()[-1] == "health HEALTH_WARN (OSD_DOWN); 30/41 PGs active+clean"


def test_describe_probe_state():
    state = {"health": "HEALTH_WARN", "checks": ["PG_AVAILABILITY"], "osds_up": [0], "pgs_clean": 8,
             "pgs_expected": 41, "mds": ["up:creating"]}
    assert describe(state) == ("HEALTH_WARN ['PG_AVAILABILITY'], 1 OSDs up, 8/41 PGs active+clean, "
                               "MDS ['up:creating']")
    assert describe({"error": "ceph pg stat failed"}) == "ceph pg stat failed"
