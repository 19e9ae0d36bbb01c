"""Real local cluster: ``sae run experiments/writes.py`` cut by ``--set`` on the shared sae cluster
(tests/fixtures/sae.py): a one-object write and a copy of the dataset through every writer, in one
Spark application: sae-ceph (the connector: objects at their final names, one manifest), Spark's
FileOutputCommitter v1 and v2 over the CephFS mount, and S3A's rename (classic), magic and
directory committers on the RADOS Gateway, which the run's start stage starts on the running stack
with S3A's jars from Maven Central on the Spark nodes. Every output read back has its input's rows
and checksum; every job's storage operations are counted by type, and what each commit protocol's
design implies shows in them: the classic committer renames by COPY + DELETE, magic and directory
complete multipart uploads and copy nothing, the FileOutputCommitter renames at the MDS (v1 more
than v2) and never reaches the gateway, sae-ceph renames nothing. The writer's S3 secret is in no
file of the run, and what the run wrote is gone from CephFS once it ends; what a crashed job would
leave, ``sae clean`` removes. Left to the README's command: teragen, the query and read-only jobs,
repetitions."""
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sae
from metareserve import load_reservation
from metareserve import Cluster, Layout
from rados_deploy import CephCluster, CephOptions
from sae.planning import writers
from sae.planning.writers import MOUNT_DIR
from sae.running.clean import remove_writes
from sae.running.context import WriteRecord
from sae.running.writer import BUCKET, OUTPUT

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
WRITERS = list(writers.WRITERS)
JOBS = ["one-object", "copy"]
CUT = [f"--set={s}" for s in (
    "repetitions=1", "warmup=0", "drift=false", "cluster.cores=shared", "spark.jit=quick", "data.rows=200000",
    f"sweep.cartesian.writer=[{', '.join(WRITERS)}]", f"sweep.cartesian.write=[{', '.join(JOBS)}]")]
"""The tiny profile cut to answers and counts, not times: one repetition, no warm-up or drift check,
every host on every core, C1-only JVMs, 200 K trips stored once (test_indexed_run's dataset); two
jobs through every writer, 12 jobs in one Spark application."""


@pytest.fixture(scope="module")
def run(sae_cluster):
    root, _ = sae_cluster
    r = subprocess.run([SAE, "run", "experiments/writes.py", "--reservation", str(root / "reservation.yaml"),
                        "--out", str(root / "writes-out"), *CUT], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = len(WRITERS) * len(JOBS)   # the run checks each output read back against its input itself
    assert f"every output read back ({jobs} jobs) had its input's rows and checksum" in r.stderr, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    return run, sae.load_results(run), root


def test_every_output_read_back_is_its_input(run):
    _, df, _ = run
    assert len(df) == len(WRITERS) * len(JOBS) and set(df["writer"]) == set(WRITERS)
    assert (df["rows_out"] == df["input_rows"]).all() and (df["checksum"] == df["input_checksum"]).all(), \
        df[["writer", "write", "rows_out", "input_rows", "checksum", "input_checksum"]]
    assert set(df.loc[df["write"] == "one-object", "rows_out"]) == {1}
    assert set(df.loc[df["write"] == "copy", "rows_out"]) == {200_000}
    assert (df["output_bytes"] > 0).all()


def _ops(df, kind: str, op: str):
    """Column ``ops_<kind>_<op>`` per (writer, job); 0 where no job asked for that type."""
    jobs = df.set_index(["writer", "write"])
    return jobs.get(f"ops_{kind}_{op}", jobs["storage_ops"] * 0).fillna(0)


def test_every_jobs_operations_are_counted_by_type_and_show_its_commit(run, figure):
    path, df, _ = run
    assert df["storage_ops"].notna().all() and (df["storage_ops"] > 0).all(), df[["writer", "write", "storage_ops"]]
    copies, deletes, uploads = _ops(df, "rgw", "copy_obj"), _ops(df, "rgw", "delete_obj"), \
        _ops(df, "rgw", "complete_multipart")
    renames, creates = _ops(df, "mds", "rename"), _ops(df, "mds", "create")
    rgw = df.set_index(["writer", "write"])[[c for c in df if c.startswith("ops_rgw_")]].fillna(0).sum(axis=1)
    assert (copies.loc["s3a-classic"] > 0).all() and (deletes.loc["s3a-classic"] > 0).all()   # rename = COPY + DELETE
    for name in ("s3a-magic", "s3a-directory"):
        assert (copies.loc[name] == 0).all() and (uploads.loc[name] > 0).all(), (copies.loc[name], uploads.loc[name])
    for name in ("cephfs-v1", "cephfs-v2"):
        assert (renames.loc[name] > 0).all() and (creates.loc[name] > 0).all() and (rgw.loc[name] == 0).all()
    assert (renames.loc["cephfs-v1"] > renames.loc["cephfs-v2"]).all()   # v1 renames at task and at job commit
    assert (renames.loc["sae-ceph"] == 0).all() and (rgw.loc["sae-ceph"] == 0).all()
    # behind each S3 request, the gateway's own RADOS ops (its data and bucket index), by type
    rados = df.set_index(["writer", "write"])[[c for c in df if c.startswith("ops_rados_rgw_")]].fillna(0).sum(axis=1)
    assert all((rados.loc[w] > 0).all() for w in WRITERS if writers.get(w).interface == "s3"), rados
    # the copy's bytes: sae-ceph's OSDs are sent them about once
    copy = df[df["write"] == "copy"].set_index("writer")
    assert copy.loc["sae-ceph", "storage_bytes_written"] < 1.5 * copy.loc["sae-ceph", "output_bytes"]
    assert (path / "report" / "writes.png").stat().st_size > 10_000
    table = df.pivot_table(index="writer", columns="write", values="storage_ops")
    figure("storage operations per job:\n" + table.to_string())


def test_the_writers_s3_secret_is_in_no_file_of_the_run(run):
    path, _, root = run
    state = Path(load_reservation(root / "reservation.yaml").state_root)
    secrets = [line.split("=", 1)[1].strip().encode() for f in state.glob("s3-*.credentials")
               for line in f.read_text().splitlines() if line.startswith("aws_secret_access_key")]
    assert secrets, f"no S3 credentials under {state}"
    for f in (p for p in path.rglob("*") if p.is_file()):
        data = f.read_bytes()
        assert not any(s in data for s in secrets), f"{f} holds the writer's S3 secret"


def test_what_the_run_wrote_is_removed_after_its_points(run):
    """sae-ceph's directory (the connector's delete) and the FileOutputCommitter's (Hadoop's), seen
    through a Spark node's CephFS mount: no file of the run is left."""
    path, df, root = run
    ceph = CephCluster(load_reservation(root / "reservation.yaml"))
    node = ceph.reservation.nodes[-1].name   # a Spark worker: the build mounted CephFS there
    dirs = [f"{ceph.mountpoint}{OUTPUT}", *(f"{ceph.mountpoint}/{MOUNT_DIR}/{w}" for w in ("cephfs-v1", "cephfs-v2"))]
    try:
        found = ceph.cluster.run(["find", *dirs, "-type", "f"], nodes=[node], stage="test", check=False)[node]
    finally:
        ceph.cluster.close()
    assert found["rc"] == 0 and found["stdout"].strip() == "", found   # the directories are there, empty of files


LEAVE = 'for f; do mkdir -p "${f%/*}" && echo left > "$f"; done'
"""Writes each file named after it (making its directory): a constant script, the paths its arguments."""
PLANT = """import sys, cephfs
conf, fs_name, path = sys.argv[1:]
fs = cephfs.LibCephFS(conffile=conf)
fs.mount(filesystem_name=fs_name.encode())
fs.mkdirs(path.rsplit("/", 1)[0].encode(), 0o755)
fd = fs.open(path.encode(), "w", 0o644)
fs.write(fd, b"left", 0)
fs.close(fd)
fs.shutdown()
"""
"""Writes a file into CephFS as client.admin (argv: the client conf, the file system, the path)."""


def test_what_a_crashed_write_leaves_sae_clean_removes(run):
    """A file a killed sae-ceph task left, one a killed FileOutputCommitter job left in its
    _temporary directory, an object and an incomplete multipart upload a killed S3A job left in
    the bucket: ``sae clean``'s first step (:func:`~sae.running.clean.remove_writes`) removes each
    write root the build recorded, one line each naming what it held, and forgets the record, so
    a second clean has nothing of the writes to remove."""
    import botocore.config
    import botocore.exceptions
    import botocore.session
    _, _, root = run
    res = load_reservation(root / "reservation.yaml")
    assert WriteRecord.load(res.name) == WriteRecord([OUTPUT, f"/{MOUNT_DIR}"], [BUCKET])
    with Cluster(res) as cluster:
        ceph = CephCluster(res, Layout.default(res), CephOptions(rgw=True), cluster=cluster)
        node = res.nodes[-1].name   # a Spark worker, CephFS mounted writable there for the FileOutputCommitter
        left = f"{ceph.mountpoint}/{MOUNT_DIR}/cephfs-v1/crashed/_temporary/0/part-00000.parquet"
        cluster.run(["sh", "-c", LEAVE, "sh", left], nodes=[node], stage="test")
        creds = ceph.s3_credentials(ceph.s3_users.writer)
        s3 = botocore.session.get_session().create_client(
            "s3", endpoint_url=creds.endpoint, region_name="us-east-1", aws_access_key_id=creds.access_key,
            aws_secret_access_key=creds.secret_key, config=botocore.config.Config(s3={"addressing_style": "path"}))
        part = f"{OUTPUT}/crashed/point/r0/part-{'0' * 32}-0-0-0-0.parquet"   # a killed sae-ceph task's file
        cluster.run([ceph.client_python, "-c", PLANT, ceph.client_conf(res.nodes[0].name), ceph.fs_name, part],
                    nodes=[res.nodes[0].name], stage="test")
        s3.put_object(Bucket=BUCKET, Key="crashed/part-00000.parquet", Body=b"left")
        upload = s3.create_multipart_upload(Bucket=BUCKET, Key="crashed/part-00001.parquet")["UploadId"]
        s3.upload_part(Bucket=BUCKET, Key="crashed/part-00001.parquet", UploadId=upload, PartNumber=1,
                       Body=b"x" * 1000)
        lines = remove_writes(res, Layout.default(res), cluster)
        assert len(lines) == 3, lines   # each leftover named
        assert f"{res.name} cephfs removal: removed CephFS /{MOUNT_DIR} (1 files: {left[len(ceph.mountpoint):]})" \
            in lines, lines
        assert f"{res.name} cephfs removal: removed CephFS {OUTPUT} (1 files: {part})" in lines, lines
        assert any(line.startswith(f"{res.name} ceph-rgw bucket removal: bucket {BUCKET} removed (")
                   and "crashed/part-00000.parquet" in line for line in lines), lines
        for _ in range(50):   # the mount learns of another client's removal when its capabilities are revoked
            gone = cluster.run(["ls", f"{ceph.mountpoint}/{MOUNT_DIR}", f"{ceph.mountpoint}{OUTPUT}"], nodes=[node],
                               stage="test", check=False)[node]
            if gone["stderr"].count("No such file or directory") == 2:
                break
            time.sleep(0.2)
        assert gone["rc"] != 0 and gone["stderr"].count("No such file or directory") == 2, gone
        with pytest.raises(botocore.exceptions.ClientError) as missing:
            s3.head_bucket(Bucket=BUCKET)
        assert missing.value.response["Error"]["Code"] in ("404", "NoSuchBucket"), missing.value.response
        assert WriteRecord.load(res.name) is None and remove_writes(res, Layout.default(res), cluster) == []
