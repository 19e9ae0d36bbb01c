"""The write baselines (sae.planning.writers): an unknown writer, a stack without what a writer
writes through, the writers' confs (no secret, one application for all), Maven jar coordinates and
checksums; and, on the shared Spark, S3A's jars from Maven Central placed once (a second install
places none) and a jar Maven Central lacks refused in one line. Writing through each writer, with
Ceph's operations counted by type: tests/sae_tests/test_writes_run.py (sae-ceph's own path: tests/connector/test_write.py)."""
from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest

from metareserve.errors import OperationalError, UsageError
from sae.planning import writers
from sae.planning.writers import WriteTarget, get as writer
from spark_deploy import SparkCluster, SparkOptions
from spark_deploy.maven import S3A, MavenJar, check_sha1

BASELINES = [name for name, w in writers.WRITERS.items() if w.kind != "sae-ceph"]


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


# -- on the shared Spark ------------------------------------------------------------------------
def test_s3a_jars_are_placed_once(spark_cluster, cluster):
    spark = SparkCluster(spark_cluster.reservation, spark_cluster.layout,
                         dataclasses.replace(spark_cluster.options, maven_jars=list(S3A)), cluster=cluster)
    spark.install()
    report = spark.install()
    assert not report.changed, report.summary()
    jars = spark.classpath_conf(S3A)["spark.driver.extraClassPath"].split(":")
    assert len(jars) == len(S3A) and all(Path(j).stat().st_size > 0 for j in jars), jars


def test_a_jar_maven_central_lacks_is_one_line_and_places_nothing(spark_cluster, cluster):
    absent = "org.example.sae:absent:0.0.1"
    spark = SparkCluster(spark_cluster.reservation, spark_cluster.layout,
                         dataclasses.replace(spark_cluster.options, maven_jars=[S3A[0], absent]), cluster=cluster)
    with pytest.raises(OperationalError) as failed:
        spark.install()
    line = str(failed.value)
    assert "\n" not in line and "\x1b" not in line, line
    assert re.match(r"^\[controller [^]]* fetch\] Maven could not fetch org\.example\.sae:absent:0\.0\.1: .+; "
                    r"check the coordinates in maven_jars$", line), line
    assert not Path(MavenJar.parse(absent).node_path).exists()   # the hosts share this filesystem
