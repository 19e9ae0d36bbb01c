"""Bad input: one-line errors naming host and stage, and nothing half-started left running."""
import re
from importlib import resources

import pytest

from fixtures.ceph import running_daemons, sibling
from metareserve import Layout, RemoteError, UsageError
from rados_deploy import CephCluster, CephOptions


def one_node(node):
    return Layout({r: [node] for r in ("ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd")})


def test_layout_without_mon_or_osds_is_refused(local_cluster):
    with pytest.raises(UsageError, match="layout has no ceph-mon node"):
        CephCluster(local_cluster, Layout({"ceph-osd": ["node1"]}))
    with pytest.raises(UsageError, match="layout has no ceph-osd node"):
        CephCluster(local_cluster, Layout({"ceph-mon": ["node1"]}))


def test_missing_bluestore_device_is_refused_before_anything_is_made(local_cluster, cluster):
    ceph = CephCluster(sibling(local_cluster, "d"), one_node("node3"),
                       CephOptions(bluestore_device="/nonexistent/sae-dev", mon_port=3500, mon_v1_port=None,
                                   mgr_prometheus=False), cluster=cluster)
    try:
        with pytest.raises(UsageError) as e:
            ceph.start()
        msg = str(e.value)
        assert msg.startswith("[node3 ceph-osd mkfs]") and "/nonexistent/sae-dev does not exist" in msg
        assert "\n" not in msg
        assert running_daemons(ceph) == []
        assert _left(ceph, "node3") is None
    finally:
        ceph.uninstall()


def test_a_bootstrap_failing_midway_leaves_only_the_logs_its_error_names(local_cluster, cluster):
    """A bluestore file too small for an OSD fails after the mons run: every daemon is stopped and
    the state removed but for log/."""
    ceph = CephCluster(sibling(local_cluster, "m"), one_node("node3"),
                       CephOptions(osd_size="16MiB", mon_port=3500, mon_v1_port=None, mgr_prometheus=False),
                       cluster=cluster)
    try:
        with pytest.raises(RemoteError) as e:
            ceph.start()
        assert str(e.value).startswith("[node3 ceph-osd"), str(e.value)
        assert running_daemons(ceph) == []
        assert _left(ceph, "node3") == ["log"]
    finally:
        ceph.uninstall()


def _left(ceph, node):
    """What the node's Ceph state directory holds (None: it does not exist)."""
    r = ceph.cluster.run(["ls", "-A", ceph.state_dir(node)], nodes=[node], stage="test", check=False)[node]
    return r["stdout"].split() if r["rc"] == 0 else None


def test_mon_port_in_use_is_refused_before_starting_anything(ceph_cluster, local_cluster, cluster):
    ceph = CephCluster(sibling(local_cluster, "p"), one_node("node1"), CephOptions(mgr_prometheus=False),
                       cluster=cluster)
    try:
        with pytest.raises(RemoteError, match=r"^\[node1 ceph-mon start\] port 3300 on [\d.]+ is in use"):
            ceph.start()
        assert running_daemons(ceph) == []
        assert ceph_cluster.status().ok
    finally:
        ceph.uninstall()


def test_mgr_prometheus_port_in_use_is_refused_before_starting_anything(ceph_cluster, local_cluster, cluster):
    """The session cluster's mgr serves its prometheus module on node1:9283 already."""
    ceph = CephCluster(sibling(local_cluster, "q"), one_node("node1"),
                       CephOptions(mon_port=3700, mon_v1_port=None), cluster=cluster)
    try:
        with pytest.raises(RemoteError, match=r"^\[node1 ceph-mgr start\] port 9283 on [\d.]+ is in use.*"
                                              r"CephOptions.mgr_prometheus_port"):
            ceph.start()
        assert running_daemons(ceph) == []
        assert ceph_cluster.status().ok
    finally:
        ceph.uninstall()


def test_missing_package_names_host_and_stage(local_cluster, cluster):
    ceph = CephCluster(sibling(local_cluster, "k"), one_node("node2"),
                       CephOptions(packages=["sae-no-such-package"], class_build_packages=[]), cluster=cluster)
    with pytest.raises(RemoteError, match=r"^\[node2 ceph install\] .*sae-no-such-package"):
        ceph.install()


def test_start_without_packages_says_install_first(local_cluster, cluster):
    ceph = CephCluster(sibling(local_cluster, "n"), one_node("node2"), CephOptions(), cluster=cluster)
    real = ceph.daemon_facts

    def facts_with_missing_binary(*a, **kw):
        out = real(*a, **kw)
        out["node2"]["missing"] = ["ceph-osd"]    # as on a node where install never ran
        return out
    ceph.daemon_facts = facts_with_missing_binary
    with pytest.raises(RemoteError, match=r"^\[node2 ceph start\] ceph-osd not installed; run 'rados-deploy install'"):
        ceph.start()


def test_class_build_failure_names_host_and_stage(ceph_cluster, tmp_path):
    src = resources.files("rados_deploy").joinpath("cls")
    for name in ("sae.cc", "sae_cls.h"):   # protocol.h is rendered from the spec
        (tmp_path / name).write_text(src.joinpath(name).read_text())
    (tmp_path / "zz_broken.cc").write_text("int broken( { return 0; }\n")
    with pytest.raises(RemoteError) as e:
        ceph_cluster.install_class(source_dir=tmp_path)
    msg = str(e.value)
    assert re.match(r"\[node1 sae class build\] .*g\+\+ failed: zz_broken\.cc:1", msg) and "\n" not in msg
    assert ceph_cluster.status().ok
    assert len(ceph_cluster.class_version()) == 3
