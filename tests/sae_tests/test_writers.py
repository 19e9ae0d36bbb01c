"""The write baselines (sae.planning.writers) on the shared Ceph and Spark: a RADOS Gateway
started beside the shared Ceph, Hadoop's S3A jars from Maven Central on the Spark nodes, the
writer's S3 keys only in 0600 files, CephFS mounted writable. ONE Spark application writes the same
50k generated rows through every writer and reads each back (same rows, same checksum); Ceph's
operations are counted by type around each write job (rados_deploy's OpCounts) and printed as a
table. Asserted is only what the committers' designs imply: the classic committer's renames are
COPYs and DELETEs, the magic and directory committers complete multipart uploads and copy nothing,
the FileOutputCommitter over CephFS renames at the MDS (v1 more than v2) and never reaches the
gateway. The pure checks (unknown writer, a stack without a gateway, a jar failing its checksum)
need no cluster. S3A talks to the gateway over TLS (over HTTP the SDK's signed aws-chunked PUT of
an empty object is refused by Ceph 16's gateway: XAmzContentSHA256Mismatch)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest

from metareserve.errors import OperationalError, UsageError
from rados_deploy import CephCluster
from sae.planning import writers
from sae.planning.writers import WriteTarget, get as writer
from spark_deploy import SparkCluster, SparkOptions, merged_conf
from spark_deploy.maven import S3A, MavenJar, check_sha1

APP = Path(__file__).with_name("writers_app.py")
ROWS = 50_000
BUCKET = "sae-writes"
TYPES = ("rgw", "mds")
BASELINES = [name for name, w in writers.WRITERS.items() if w.kind != "sae-ceph"]
"""The writers this file deploys (sae-ceph, the connector's: tests/connector/test_write.py)."""


# -- pure ---------------------------------------------------------------------------------------
def test_unknown_writer_and_a_stack_without_what_it_writes_through():
    with pytest.raises(UsageError, match=r"^workload.writer 's3a-bogus' is not one of sae-ceph, cephfs-v1"):
        writer("s3a-bogus")
    with pytest.raises(UsageError, match=r"^writer s3a-magic writes through the RADOS Gateway, which this stack "
                                         r"does not run: set CephOptions.rgw"):
        writer("s3a-magic").conf(WriteTarget(mountpoint="/m"))
    with pytest.raises(UsageError, match=r"^writer cephfs-v1 writes into the CephFS mount"):
        writer("cephfs-v1").conf(WriteTarget(s3_endpoint="http://a:7480", s3_credentials="/c", bucket="b"))


def test_writer_confs_carry_no_secret_and_take_turns_in_one_application():
    target = WriteTarget("http://10.0.0.1:7480", "/state/s3-sae-writer.credentials", "b", "/state/cephfs")
    confs = [writer(n).conf(target) for n in BASELINES]
    assert all(not any("secret" in k or "access.key" in k for k in c.conf) for c in confs)
    apps = [c.app_conf() for c in confs]
    assert all(a[k] == b[k] for a in apps for b in apps for k in a.keys() & b.keys())   # one application for all
    magic = writer("s3a-magic").conf(target)
    assert magic.job_conf()["spark.hadoop.fs.s3a.committer.name"] == "magic" and magic.jars == S3A
    assert magic.output("trips") == "s3a://b/s3a-magic/trips" and magic.env["AWS_SHARED_CREDENTIALS_FILE"] == target.s3_credentials


def test_bad_jar_coordinates_and_a_jar_failing_its_checksum(tmp_path):
    with pytest.raises(UsageError, match=r"^SparkOptions: maven_jars: 'hadoop-aws' is not a Maven jar"):
        SparkOptions(maven_jars=["hadoop-aws"])
    jar = MavenJar.parse("org.example:x:1.0")
    path = tmp_path / "x-1.0.jar"
    path.write_bytes(b"jar bytes")
    Path(f"{path}.sha1").write_text(hashlib.sha1(b"other bytes").hexdigest() + "\n")
    with pytest.raises(OperationalError, match=r"org.example:x:1.0 fails its checksum .* delete .* and install again"):
        check_sha1(jar, path, stage="t")
    Path(f"{path}.sha1").write_text(hashlib.sha1(b"jar bytes").hexdigest() + "  x-1.0.jar\n")
    assert check_sha1(jar, path, stage="t") == hashlib.sha1(b"jar bytes").hexdigest()


# -- on the shared stack ------------------------------------------------------------------------
@dataclasses.dataclass
class Stack:
    ceph: CephCluster
    spark: SparkCluster
    target: WriteTarget


@pytest.fixture(scope="module")
def stack(ceph_cluster, spark_cluster, cluster):
    """The shared Ceph with a gateway on its first mon node and the shared Spark with S3A's jars;
    the bucket made, the writer's credentials linked and CephFS mounted writable on the Spark nodes.
    The gateway is stopped and the mount undone at the end."""
    ceph = CephCluster(ceph_cluster.reservation, ceph_cluster.layout,
                       dataclasses.replace(ceph_cluster.options, rgw=True), cluster=cluster)
    spark = SparkCluster(spark_cluster.reservation, spark_cluster.layout,
                         dataclasses.replace(spark_cluster.options, maven_jars=list(S3A)), cluster=cluster)
    nodes = spark.nodes
    try:
        ceph.install()
        ceph.start()
        spark.install()
        ceph.create_bucket(BUCKET)
        ceph.link_s3_credentials(nodes)
        ceph.unmount(nodes)   # a read-only mount of an earlier test gives way to a writable one
        ceph.mount(nodes, user=ceph.users.fs_write)
        yield Stack(ceph, spark, WriteTarget(ceph.s3_tls_endpoint, ceph.shared_s3_credentials(ceph.s3_users.writer),
                                             BUCKET, ceph.mountpoint, spark.trust_conf(ceph.s3_certificate())))
    finally:
        ceph.unmount(nodes)
        for node in ceph.topology.rgws:
            ceph.stop_daemon(node, f"rgw.{node}", stage="test_writers cleanup")


def test_second_install_places_no_jar(stack):
    report = stack.spark.install()
    assert not report.changed, report.summary()


def _table(deltas: dict) -> str:
    keys = sorted({k for d in deltas.values() for k in d if k.startswith(tuple(f"{t}." for t in TYPES))}
                  | {"osd.op", "osd.op_w", "osd.op_in_bytes"})
    width = max(map(len, keys))
    lines = [" " * width + "".join(f"{w:>15}" for w in deltas)]
    lines += [f"{k:<{width}}" + "".join(f"{d.get(k, 0):>15}" for d in deltas.values()) for k in keys]
    return "\n".join(lines)


@dataclasses.dataclass
class Writes:
    """What the one application did: per writer its ``SAE-RESULT`` and its write job's OpCounts delta."""

    results: dict
    deltas: dict


@pytest.fixture(scope="module")
def writes(stack, tmp_path_factory) -> Writes:
    """ONE application writing through every writer (writers_app.py), Ceph's operations counted
    around each write job; the table printed."""
    confs = [writer(n).conf(stack.target) for n in BASELINES]
    spark, ceph = stack.spark, stack.ceph
    sync = f"{spark.paths(spark.driver_node).work}/writers-sync-{os.getpid()}"
    spark.cluster.run(["mkdir", "-p", sync], nodes=[spark.driver_node], stage="test_writers")
    spec = {"rows": ROWS, "sync": sync,
            "writers": [{"name": c.writer, "output": c.output(f"t{os.getpid()}"), "job_conf": c.job_conf()}
                        for c in confs]}
    conf = merged_conf(*(c.app_conf() for c in confs), spark.classpath_conf(S3A))
    env = {k: v for c in confs for k, v in c.env.items()}
    own = ceph.on_own_connections()
    before, deltas, results, errors = {}, {}, {}, []

    def on_line(line: str):
        if line.startswith("SAE-RESULT "):
            r = json.loads(line.split(" ", 1)[1])
            results[r["writer"]] = r
        if not line.startswith("SAE-WRITE "):
            return
        _, phase, name = line.split()
        try:
            now = own.op_counters(stage="test_writers ops")
            if phase == "begin":
                before[name] = now
            else:
                deltas[name] = now.delta(before[name])
        except Exception as e:   # the application waits for the go file either way
            errors.append(repr(e))
        finally:
            own.cluster.write(f"{sync}/{name}.{phase}", "go\n", nodes=[spark.driver_node], stage="test_writers")
    try:
        result = spark.submit(APP, args=[json.dumps(spec)], conf=conf, env=env, on_line=on_line,
                              log_dir=tmp_path_factory.mktemp("writers"), check=False)
    finally:
        own.cluster.close()
        spark.cluster.run(["rm", "-rf", sync], nodes=[spark.driver_node], stage="test_writers", check=False)
    assert result.exit_code == 0, "\n".join(ln for ln in result.stdout.splitlines() if "Error" in ln)[-3000:]
    assert not errors, errors
    assert sorted(results) == sorted(BASELINES) and sorted(deltas) == sorted(BASELINES) and None not in deltas.values()
    secret = ceph.s3_credentials(ceph.s3_users.writer).secret_key
    assert secret not in json.dumps([conf, env, spec]) and secret not in result.driver_log.read_text()
    assert os.stat(stack.target.s3_credentials).st_mode & 0o777 == 0o600
    print(f"\nstorage operations per write job ({ROWS} rows, 2 tasks):\n"
          + _table({n: deltas[n].flat() for n in BASELINES}))
    print("write errors:", {n: r["error"] for n, r in results.items() if r["error"]})
    return Writes(results, deltas)


def _read_back(writes: Writes, name: str) -> None:
    r = writes.results[name]
    assert r["error"] is None, r["error"]
    assert (r["rows"], r["checksum"]) == (ROWS, r["input_checksum"]) and r["input_rows"] == ROWS, r


def test_filecommitter_over_cephfs_renames_at_the_mds(writes):
    """v1 and v2 write what they read back; both rename at the MDS (v1's task and job commits
    more than v2's task commits) and never reach the gateway."""
    for name in ("cephfs-v1", "cephfs-v2"):
        _read_back(writes, name)
        d = writes.deltas[name]
        assert d.mds.get("rename", 0) > 0 and d.mds.get("create", 0) > 0 and sum(d.rgw.values()) == 0, d.flat()
        assert d.osd["op_w"] > 0
    assert writes.deltas["cephfs-v1"].mds["rename"] > writes.deltas["cephfs-v2"].mds["rename"]


def test_s3a_committers_on_the_gateway(writes):
    """classic renames by COPY + DELETE; magic and directory complete multipart uploads and copy nothing."""
    for name in ("s3a-classic", "s3a-magic", "s3a-directory"):
        _read_back(writes, name)
    rgw = {name: writes.deltas[name].rgw for name in BASELINES}
    assert rgw["s3a-classic"].get("copy_obj", 0) > 0 and rgw["s3a-classic"].get("delete_obj", 0) > 0
    for name in ("s3a-magic", "s3a-directory"):
        assert rgw[name].get("copy_obj", 0) == 0 and rgw[name].get("complete_multipart", 0) > 0, rgw[name]
