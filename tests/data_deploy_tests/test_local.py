"""The ``local`` plugin on real local-cluster hosts: multipliers, idempotence, resume, clean."""
import os

import pyarrow.dataset as pads
import pytest

import data_deploy as dd
from metareserve.errors import OperationalError, UsageError


@pytest.fixture()
def dest(local_cluster, tmp_path):
    path = str(tmp_path / "taxi")
    yield path
    dd.clean(local_cluster, path, plugin="local", node="node2")


def test_local_deploy_links_copies_idempotent(local_cluster, cluster, split_dataset, dest):
    n = len(split_dataset.files)
    r = dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
                  link_multiplier=3, copy_multiplier=2, node="node2", cluster=cluster)
    assert r.changed and r.files == n * 6 and r.written == n * 2 and r.linked == n * 4
    assert r.rows == split_dataset.rows * 6 and r.rados_ops is None
    names = sorted(f for f in os.listdir(dest) if f.endswith(".parquet"))
    assert len(names) == n * 6
    inodes = {os.stat(os.path.join(dest, f)).st_ino for f in names}
    assert len(inodes) == n * 2
    assert all(os.stat(os.path.join(dest, f)).st_nlink == 3 for f in names)
    assert pads.dataset(dest, format="parquet").count_rows() == split_dataset.rows * 6
    again = dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
                      link_multiplier=3, copy_multiplier=2, node="node2", cluster=cluster)
    assert not again.changed and again.written == 0
    assert "no changes" in again.summary()
    assert dd.verify(local_cluster, dest, plugin="local", node="node2", cluster=cluster).ok
    staging = local_cluster.node_dir("node2", "data_deploy") + "/staging"
    before = sorted(os.listdir(staging)) if os.path.isdir(staging) else []
    with pytest.raises(OperationalError, match="already holds dataset"):
        dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
                  link_multiplier=2, node="node2", cluster=cluster)
    after = sorted(os.listdir(staging)) if os.path.isdir(staging) else []
    assert after == before   # the failed deploy took back the copy it staged on the node


def test_local_verify_detects_damage_and_deploy_resumes(local_cluster, cluster, split_dataset, dest):
    dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
              link_multiplier=2, node="node2", cluster=cluster)
    victim = sorted(f for f in os.listdir(dest) if f.endswith("-l1.parquet"))[0]
    os.unlink(os.path.join(dest, victim))
    v = dd.verify(local_cluster, dest, plugin="local", node="node2", cluster=cluster)
    assert not v.ok and any(victim in p for p in v.problems)
    # an interrupted deploy: manifest gone, some files missing -> deploy completes it
    os.unlink(os.path.join(dest, "_manifest.json"))
    assert not dd.verify(local_cluster, dest, plugin="local", node="node2", cluster=cluster).ok
    r = dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
                  link_multiplier=2, node="node2", cluster=cluster)
    assert r.changed and r.written == 0 and r.linked == 1
    assert dd.verify(local_cluster, dest, plugin="local", node="node2", cluster=cluster).ok


def test_local_deploy_to_workers_sharing_a_disk(local_cluster, cluster, split_dataset, dest):
    r = dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
                  cluster=cluster)
    assert r.nodes == ["node2", "node3"]
    assert sorted(o.changed for o in r.stage.nodes.values()) == [False, True]
    assert dd.verify(local_cluster, dest, plugin="local", cluster=cluster).ok


def test_deploy_rejects_bad_input(local_cluster, split_dataset, tmp_path):
    big = dd.split(split_dataset.files, out=tmp_path / "big", object_size="8MiB")
    with pytest.raises(UsageError, match="part-00000.parquet: .* does not fit the object size 4MiB"):
        dd.deploy(local_cluster, big.out, plugin="local", object_size="4MiB")
    with pytest.raises(UsageError, match="unknown deploy plugin 'nfs' \\(known: cephfs, local\\)"):
        dd.deploy(local_cluster, split_dataset.out, plugin="nfs", object_size="4MiB")
    with pytest.raises(UsageError, match="link multiplier"):
        dd.deploy(local_cluster, split_dataset.out, plugin="local", object_size="4MiB", link_multiplier=0)
    gen = dd.generate(70_000, out=tmp_path / "g", rows_per_file=70_000)
    with pytest.raises(UsageError, match="2 row groups"):
        dd.deploy(local_cluster, gen, plugin="local", object_size="4MiB")


def test_disk_full_is_one_line_and_nothing_looks_complete(local_cluster, cluster, split_dataset, tmp_path):
    small = str(tmp_path / "small")
    cluster.run(["mkdir", "-p", small], nodes=["node2"], stage="test")
    cluster.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", small], nodes=["node2"], stage="test")
    try:
        with pytest.raises(OperationalError) as e:
            dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=f"{small}/taxi",
                      object_size="4MiB", node="node2", cluster=cluster)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith("[node2 data-deploy local]") and "storage is full" in msg
        v = dd.verify(local_cluster, f"{small}/taxi", plugin="local", node="node2", cluster=cluster)
        assert not v.ok and "does not exist" in v.problems[0]   # readers see nothing
    finally:
        cluster.run(["umount", small], nodes=["node2"], stage="test")


def test_clean_removes_only_what_a_deploy_recorded(local_cluster, cluster, split_dataset, dest, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("not a dataset")
    with pytest.raises(Exception, match="no data-deploy manifest"):
        dd.clean(local_cluster, str(mine), plugin="local", node="node2", cluster=cluster)
    assert (mine / "notes.txt").read_text() == "not a dataset"
    dd.deploy(local_cluster, split_dataset.out, plugin="local", dest=dest, object_size="4MiB",
              node="node2", cluster=cluster)
    (tmp_path / "taxi" / "added-by-hand.txt").write_text("keep")
    dd.clean(local_cluster, dest, plugin="local", node="node2", cluster=cluster)
    assert os.listdir(dest) == ["added-by-hand.txt"]
    os.unlink(os.path.join(dest, "added-by-hand.txt"))
