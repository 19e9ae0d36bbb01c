"""The ``cephfs`` plugin against a real Ceph cluster (rados_deploy's ``ceph_cluster``):
objects per file, link and copy multipliers, ``ceph df``, resume after a kill, read-back."""
import json
import logging
import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import data_deploy as dd
from data_deploy import remote
from data_deploy.backends import cephfs as cephfs_backend
from metareserve.errors import OperationalError, SaeError, UsageError

NODE = "node1"


@pytest.fixture(scope="module")
def big_split(tmp_path_factory):
    """1.2M trips split into 16 MiB objects (3 files, two of them full)."""
    root = tmp_path_factory.mktemp("dd16")
    generated = dd.generate(1_200_000, seed=3, out=root / "gen")
    return dd.split(generated, out=root / "split", object_size="16MiB")


@pytest.fixture(scope="module")
def conf(ceph_cluster):
    return ceph_cluster.client_conf(NODE)


@pytest.fixture()
def dest(local_cluster, cluster, conf, request):
    path = f"/data/{request.node.name.replace('[', '_').replace(']', '')}"
    yield path
    dd.clean(local_cluster, path, plugin="cephfs", node=NODE, ceph_conf=conf, cluster=cluster)


def _read_back(conf, dest, names) -> pa.Table:
    """Read files straight from CephFS through libcephfs on the controller."""
    cephfs, _ = cephfs_backend._bindings()
    fs = cephfs.LibCephFS(conffile=conf)
    fs.mount()
    try:
        tables = []
        for name in names:
            path = f"{dest}/{name}"
            fd = fs.open(path, os.O_RDONLY, 0)
            data = fs.read(fd, 0, fs.stat(path).st_size)
            fs.close(fd)
            tables.append(pq.read_table(pa.BufferReader(data)))
        return pa.concat_tables(tables)
    finally:
        fs.shutdown()


def _stored(cluster, ceph_cluster, conf) -> int:
    out = cluster.run(["ceph", "-c", conf, "df", "-f", "json"], nodes=[NODE], stage="test ceph df")[NODE]
    pools = {p["name"]: p["stats"] for p in json.loads(out["stdout"])["pools"]}
    return pools[ceph_cluster.data_pool]["stored"]


def _settled(cluster, ceph_cluster, conf) -> int:
    """The pool's stored bytes once they stop moving: files an earlier test of the session removed
    are purged by the MDS in the background (an overwrite's, test_write.py's), and ``ceph df``
    follows the OSDs' reports a few seconds late."""
    last, deadline = _stored(cluster, ceph_cluster, conf), time.time() + 120
    while time.time() < deadline:
        time.sleep(6)
        now = _stored(cluster, ceph_cluster, conf)
        if now == last:
            break
        last = now
    return last


def _wait_stored(cluster, ceph_cluster, conf, at_least: int) -> int:
    """``ceph df`` lags the OSDs' reports: poll until the pool holds ``at_least`` bytes."""
    deadline = time.time() + 180
    while True:
        stored = _stored(cluster, ceph_cluster, conf)
        if stored >= at_least or time.time() > deadline:
            return stored
        time.sleep(2)


def test_deploy_16mib_links_verify_ceph_df_read_back(local_cluster, cluster, ceph_cluster, conf, big_split, dest):
    before = _settled(cluster, ceph_cluster, conf)
    r = dd.deploy(local_cluster, big_split.out, dest=dest, object_size="16MiB", link_multiplier=4,
                  node=NODE, ceph_conf=conf, cluster=cluster)
    n = len(big_split.files)
    assert r.changed and r.files == 4 * n and r.written == n and r.linked == 3 * n
    assert r.bytes == 4 * r.physical_bytes and r.rados_ops >= n
    v = dd.verify(local_cluster, dest, node=NODE, ceph_conf=conf, cluster=cluster)
    assert v.ok, v.problems
    assert v.files == 4 * n and v.objects == n and v.rows == 4 * big_split.rows
    # four names per file, one object each: the pool grows by the physical bytes only
    grown = _wait_stored(cluster, ceph_cluster, conf, before + r.physical_bytes) - before
    assert r.physical_bytes <= grown < 1.5 * r.physical_bytes, (grown, r.physical_bytes)
    manifest = cluster.call(remote, "status", "cephfs", dest, ceph_conf=conf, nodes=[NODE], stage="t")[NODE]["manifest"]
    names = [p for e in manifest["files"] for c in e["copies"] for p in c["paths"]]
    assert len(names) == 4 * n
    back = _read_back(conf, dest, names)
    assert back.num_rows == 4 * big_split.rows
    original = pa.concat_tables(pq.read_table(f) for f in big_split.files)
    first = [f"{e['copies'][0]['paths'][0]}" for e in manifest["files"]]
    assert _read_back(conf, dest, first).equals(original)
    again = dd.deploy(local_cluster, big_split.out, dest=dest, object_size="16MiB", link_multiplier=4,
                      node=NODE, ceph_conf=conf, cluster=cluster)
    assert not again.changed and again.rados_ops is None
    assert again.stage.nodes[NODE].message.endswith("verified")


def test_copy_multiplier_makes_real_copies(local_cluster, cluster, ceph_cluster, conf, taxi_dataset, dest):
    src = taxi_dataset.split_dir
    n = len(taxi_dataset.files)
    r = dd.deploy(local_cluster, src, dest=dest, object_size="4MiB", copy_multiplier=3, link_multiplier=2,
                  node=NODE, ceph_conf=conf, cluster=cluster)
    assert r.files == 6 * n and r.written == 3 * n and r.physical_bytes == 3 * sum(
        e["size"] for e in taxi_dataset.manifest["files"])
    v = dd.verify(local_cluster, dest, node=NODE, ceph_conf=conf, cluster=cluster)
    assert v.ok, v.problems
    assert v.objects == 3 * n and v.rows == 6 * taxi_dataset.rows


def test_taxi_dataset_fixture(local_cluster, cluster, taxi_dataset):
    assert taxi_dataset.manifest["object_size"] == 4 << 20 and len(taxi_dataset.files) >= 4
    assert taxi_dataset.rows == 500_000
    v = dd.verify(local_cluster, taxi_dataset.dest, node=taxi_dataset.node, ceph_conf=taxi_dataset.ceph_conf,
                  cluster=cluster)
    assert v.ok and v.objects == len(taxi_dataset.files)
    assert 0.0 < taxi_dataset.threshold(0.1) < taxi_dataset.threshold(0.5)


def test_killed_deploy_resumes(local_cluster, cluster, ceph_cluster, conf, big_split, dest, caplog):
    """As the least-privilege writer sae uses (client.fs-write): the resumed deploy evicts the
    killed writer's MDS session, keeps its complete files and finishes."""
    record = f"{local_cluster.node_dir(NODE, 'data_deploy')}/writer.json"
    outcome = {}
    user = ceph_cluster.users.fs_write.id

    def run():
        try:
            outcome["report"] = dd.deploy(local_cluster, big_split.out, dest=dest, object_size="16MiB",
                                          copy_multiplier=3, link_multiplier=40, node=NODE, ceph_conf=conf,
                                          ceph_user=user)
        except SaeError as e:
            outcome["error"] = e

    t = threading.Thread(target=run)
    t.start()
    cephfs, _ = cephfs_backend._bindings()
    fs = cephfs.LibCephFS(conffile=conf)
    fs.mount()
    try:
        first = f"{remote.work_dir(dest)}/{remote.final_name(big_split.files[0].name, 0, 1)}"
        deadline = time.time() + 600
        while time.time() < deadline and t.is_alive():
            try:
                fs.stat(first)
                break
            except cephfs.ObjectNotFound:
                time.sleep(0.05)
        pid = json.loads(open(record).read())["pid"]
        os.kill(pid, 9)  # the node-side writer this test started (shared process table)
    finally:
        fs.shutdown()
    t.join()
    assert "error" in outcome, "deploy finished before it could be killed"
    half = dd.verify(local_cluster, dest, node=NODE, ceph_conf=conf, cluster=cluster)
    assert not half.ok and half.problems == [f"[{NODE}] {dest} does not exist"]   # readers see nothing
    with caplog.at_level(logging.INFO):
        r = dd.deploy(local_cluster, big_split.out, dest=dest, object_size="16MiB", copy_multiplier=3,
                      link_multiplier=40, node=NODE, ceph_conf=conf, ceph_user=user, cluster=cluster)
    assert "evicted the MDS session of the interrupted writer" in caplog.text
    assert r.changed and r.kept >= 1 and r.files == 3 * 40 * len(big_split.files)
    assert r.rados_ops is None   # fs-write may not read OSD perf counters
    v = dd.verify(local_cluster, dest, node=NODE, ceph_conf=conf, ceph_user=ceph_cluster.users.fs_read.id,
                  cluster=cluster)
    assert v.ok, v.problems


def test_a_read_only_user_cannot_deploy(local_cluster, cluster, ceph_cluster, conf, big_split, dest):
    with pytest.raises(OperationalError) as e:
        dd.deploy(local_cluster, big_split.out, dest=dest, object_size="16MiB", node=NODE, ceph_conf=conf,
                  ceph_user=ceph_cluster.users.fs_read.id, cluster=cluster)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"[{NODE} data-deploy") and "Permission denied" in msg, msg
    assert not dd.verify(local_cluster, dest, node=NODE, ceph_conf=conf, cluster=cluster).ok


def test_unreachable_cephfs_is_one_line(local_cluster, cluster, conf, big_split, tmp_path):
    addr = local_cluster.node(NODE).cluster_address
    lines = [f"mon host = v2:{addr}:3999" if ln.replace("_", " ").startswith("mon host") else
             "client mount timeout = 3" if ln.replace("_", " ").startswith("client mount timeout") else ln
             for ln in open(conf).read().splitlines()]
    bad = tmp_path / "unreachable.conf"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(OperationalError) as e:
        dd.deploy(local_cluster, big_split.out, dest="/data/never", object_size="16MiB", node=NODE,
                  ceph_conf=str(bad), cluster=cluster)
    msg = str(e.value)
    assert "\n" not in msg and "[node1 data-deploy" in msg and "cannot mount CephFS" in msg


@pytest.mark.parametrize("given", [None, "/nonexistent/ceph.conf"])
def test_missing_ceph_conf_is_one_line_naming_node_and_path(local_cluster, cluster, big_split, given):
    # data_deploy knows no deployer's paths: without --ceph-conf it looks where Ceph does
    assert not Path(dd.CEPH_DEFAULT_CONF).exists()
    with pytest.raises(UsageError) as e:
        dd.deploy(local_cluster, big_split.out, dest="/data/never", object_size="16MiB", node=NODE,
                  ceph_conf=given, cluster=cluster)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"[{NODE} data-deploy]")
    assert f"no readable ceph.conf at {given or '/etc/ceph/ceph.conf (Ceph' }" in msg and "--ceph-conf" in msg
