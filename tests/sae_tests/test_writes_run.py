"""Real local cluster: ``sae run experiments/writes.py`` cut by ``--set`` on the shared sae cluster
(tests/fixtures/sae.py): a one-object write, a copy of the dataset and a read-only count of a copy,
through sae-ceph (the connector: objects at their final names, one manifest), Spark's
FileOutputCommitter v1 over the CephFS mount and S3A's rename committer on the RADOS Gateway (which
the run's start stage starts on the running stack). Every output read back has its input's rows
and checksum; every job's storage operations are counted by type; the commit protocols show in
them (the S3A rename committer copies and deletes, sae-ceph renames nothing). Left to the README's
command: teragen, the query job and repetitions; CephFS v2 and S3A's magic and directory
committers, each against a gateway beside the session's Ceph: tests/sae_tests/test_writers.py."""
import subprocess
import sys
from pathlib import Path

import pytest

import sae

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
CUT = [f"--set={s}" for s in (
    "repetitions=1", "warmup=0", "drift=false", "cluster.cores=shared", "spark.jit=quick", "data.rows=200000",
    "sweep.cartesian.writer=[sae-ceph, cephfs-v1, s3a-classic]", "sweep.cartesian.write=[one-object, copy, read-only]")]
"""The tiny profile cut to answers and counts, not times: one repetition, no warm-up or drift check,
every host on every core, C1-only JVMs, 200 K trips stored once (test_indexed_run's dataset); three
jobs through three writers, 9 jobs in one Spark application."""


@pytest.fixture(scope="module")
def run(sae_cluster):
    root, _ = sae_cluster
    r = subprocess.run([SAE, "run", "experiments/writes.py", "--reservation", str(root / "reservation.yaml"),
                        "--out", str(root / "writes-out"), *CUT], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    return run, sae.load_results(run)


def test_every_output_read_back_is_its_input(run):
    _, df = run
    assert len(df) == 9 and set(df["writer"]) == {"sae-ceph", "cephfs-v1", "s3a-classic"}
    assert (df["rows_out"] == df["input_rows"]).all() and (df["checksum"] == df["input_checksum"]).all(), \
        df[["writer", "write", "rows_out", "input_rows", "checksum", "input_checksum"]]
    assert set(df.loc[df["write"] == "one-object", "rows_out"]) == {1}
    assert set(df.loc[df["write"] != "one-object", "rows_out"]) == {200_000}
    assert (df["output_bytes"] > 0).all()


def test_every_jobs_operations_are_counted_by_type_and_show_its_commit(run, figure):
    path, df = run
    assert df["storage_ops"].notna().all() and (df["storage_ops"] > 0).all(), df[["writer", "write", "storage_ops"]]
    written = df[df["write"] != "read-only"].set_index(["writer", "write"]).fillna(0)   # a type not asked: no column
    renames = written["ops_mds_rename"] if "ops_mds_rename" in written else written["storage_ops"] * 0
    s3a = written.loc["s3a-classic"]
    assert (s3a["ops_rgw_copy_obj"] > 0).all() and (s3a["ops_rgw_delete_obj"] > 0).all()   # rename = COPY + DELETE
    assert (renames.loc["sae-ceph"] == 0).all() and (renames.loc["cephfs-v1"] > 0).all()   # commit renames
    # the copy's bytes: sae-ceph's OSDs are sent them about once
    copy = df[df["write"] == "copy"].set_index("writer")
    assert copy.loc["sae-ceph", "storage_bytes_written"] < 1.5 * copy.loc["sae-ceph", "output_bytes"]
    assert (path / "report" / "writes.png").stat().st_size > 10_000
    table = df.pivot_table(index="writer", columns="write", values="storage_ops")
    figure("storage operations per job:\n" + table.to_string())
