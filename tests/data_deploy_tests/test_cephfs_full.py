"""Fault: CephFS runs full during ``data_deploy.deploy`` (cephfs plugin).

The CephFS data pool of a small memstore cluster gets a 4 MiB quota and an 8 MiB filler object,
so it is full (POOL_FULL) as CephFS sees it; the deploy then fails in one line naming host and stage, readers see nothing of the half-written dataset (no
manifest, no visible file, once CephFS can be mounted again), and after the space is freed (quota lifted) the same deploy completes
and verifies.
"""
from __future__ import annotations

import time

import pytest

import data_deploy
from fixtures.ceph import client_python, every_role_on, sibling, started
from metareserve import OperationalError
from rados_deploy import CephCluster, CephOptions

NODE, DEST, OBJECT_SIZE = "node3", "/full/taxi", "4MiB"
QUOTA = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
ret, _, err = r.mon_command(json.dumps({{"prefix": "osd pool set-quota", "pool": "{pool}", "field": "max_bytes",
                                        "val": "{bytes}"}}), b"")
assert ret == 0, err
if {fill}:
    r.open_ioctx("{pool}").write_full("filler", b"f" * (8 << 20))
print("0", flush=True)
os._exit(0)   # librados may crash tearing down
"""
HEALTH = """
import json, os, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect(timeout=30)
ret, out, _ = r.mon_command(json.dumps({"prefix": "health", "format": "json"}), b"")
print(json.dumps(sorted(json.loads(out).get("checks", {}))), flush=True)
os._exit(0)   # librados may crash tearing down
"""
LIST = """
import json, os, cephfs
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
try:
    d = fs.opendir("{dest}"); names = []
    while (e := fs.readdir(d)) is not None:
        names.append(e.d_name.decode())
    fs.closedir(d)
except cephfs.ObjectNotFound:
    names = None
print(json.dumps(names))
"""


@pytest.fixture(scope="module")
def small_ceph(local_cluster, cluster):
    """Every Ceph role on node3, one 256 MiB memstore OSD, its own state and mon port."""
    options = CephOptions(store="memstore", osd_size="256MiB", mon_port=3500, mon_v1_port=None, op_timeout=20)
    with started(CephCluster(sibling(local_cluster, "f"), every_role_on(NODE), options, cluster=cluster)) as ceph:
        yield ceph


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A split taxi dataset of about 40 MB (ten 4 MiB objects)."""
    root = tmp_path_factory.mktemp("full")
    data_deploy.generate(1_000_000, out=root / "source")
    data_deploy.split(sorted((root / "source").glob("*.parquet")), out=root / "split", object_size=OBJECT_SIZE)
    return root / "split"


def _wait_health(ceph, ok, timeout=120):
    """Wait until the monitor's health checks satisfy ``ok``."""
    deadline = time.monotonic() + timeout
    while not ok(checks := client_python(ceph, NODE, HEALTH)):
        assert time.monotonic() < deadline, f"health checks still {checks}"
        time.sleep(1)


def _deploy(ceph, split, copies):
    return data_deploy.deploy(ceph.reservation, split, plugin="cephfs", dest=DEST, object_size=OBJECT_SIZE,
                              copy_multiplier=copies, node=NODE, layout=ceph.layout,
                              ceph_conf=ceph.client_conf(NODE), cluster=ceph.cluster)


def test_full_cephfs_fails_in_one_line_shows_nothing_and_resumes(small_ceph, dataset, figure):
    client_python(small_ceph, NODE, QUOTA.format(pool=small_ceph.data_pool, bytes=4 << 20, fill=True))
    _wait_health(small_ceph, lambda checks: "POOL_FULL" in checks)
    start = time.monotonic()
    with pytest.raises(OperationalError) as e:
        _deploy(small_ceph, dataset, copies=3)
    failed_after = time.monotonic() - start
    text = str(e.value)
    assert "\n" not in text and text.startswith(f"[{NODE} data-deploy"), text
    assert "space" in text.lower() or "full" in text.lower(), text

    client_python(small_ceph, NODE, QUOTA.format(pool=small_ceph.data_pool, bytes=0, fill=False))
    _wait_health(small_ceph, lambda checks: "POOL_FULL" not in checks)
    visible = client_python(small_ceph, NODE, LIST.format(dest=DEST))
    assert visible is None or not [n for n in visible if not n.startswith(".")], visible
    report = _deploy(small_ceph, dataset, copies=3)
    assert report.changed and report.files > 0
    check = data_deploy.verify(small_ceph.reservation, DEST, plugin="cephfs", node=NODE, layout=small_ceph.layout,
                               ceph_conf=small_ceph.client_conf(NODE), cluster=small_ceph.cluster)
    assert check.ok, check
    figure(f"CephFS full: {text}; failed after {failed_after:.1f}s; once space was freed the deploy "
           f"resumed in {time.monotonic() - start - failed_after:.1f}s, nothing half-visible")
