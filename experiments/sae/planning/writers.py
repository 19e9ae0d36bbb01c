"""The writers a Spark job's output is written with: the baselines Stocator compares against, on
the same Ceph, each defined once (:data:`WRITERS`): its name, how it reaches Ceph (``kind``:
``s3a``, Hadoop's S3A on the RADOS Gateway; ``cephfs``, Spark's file writer over the ceph-fuse
mount) and its committer, as Spark and Hadoop ship them:

- ``s3a-classic``: FileOutputCommitter (algorithm 1) through S3A: every rename is a COPY and a
  DELETE of each object;
- ``s3a-magic`` / ``s3a-directory``: S3A's magic and directory (staging) committers, bound to
  Spark SQL by spark-hadoop-cloud's ``PathOutputCommitProtocol`` and
  ``BindingParquetOutputCommitter``: tasks upload their files as uncompleted multipart uploads,
  the job completes them (no COPY);
- ``cephfs-v1`` / ``cephfs-v2``: FileOutputCommitter algorithm 1 (task and job commit rename) and
  2 (task commit renames into the destination) over the mount, through Hadoop's default ``file:``
  file system as Spark ships it (a ``.crc`` checksum file beside each output file; S3A's directory
  committer needs that file system class for its staging).

:meth:`Writer.conf` builds, for a running stack (:class:`WriteTarget`), the :class:`WriterConf`
an application writes with: its Spark conf (no secret: S3 keys stay in their 0600 file, which the
AWS SDK's profile provider reads), the driver's environment, the Maven jars it needs on its class
path and its output URIs.
"""
from __future__ import annotations

import dataclasses

from metareserve.errors import UsageError
from spark_deploy.maven import S3A

KINDS = ("s3a", "cephfs")
S3A_COMMITTERS = ("file", "magic", "directory")
CLOUD_PROTOCOL = "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol"
CLOUD_PARQUET = "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter"
PROFILE_PROVIDER = "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider"
CREDENTIALS_ENV = "AWS_SHARED_CREDENTIALS_FILE"
PER_JOB = ("spark.sql.", "spark.hadoop.mapreduce.", "spark.hadoop.fs.s3a.committer.")
"""Conf a job sets for itself (:meth:`WriterConf.job_conf`): the committer and its protocol."""
MOUNT_DIR = "writes"
"""Directory in the CephFS mount the ``cephfs`` writers write under (``<mount>/writes/<writer>``)."""


@dataclasses.dataclass(frozen=True)
class WriteTarget:
    """Where a running stack lets Spark write: the gateway's ``s3_endpoint``, the path of the
    writer's S3 credentials file on every Spark node (``s3_credentials``: rados_deploy's
    ``CephCluster.shared_s3_credentials``), the ``bucket`` the stage made; the CephFS
    ``mountpoint``, mounted writable on every Spark node; ``s3_trust``, the Spark conf making the
    JVMs trust an ``https`` endpoint's certificate (spark_deploy's ``SparkCluster.trust_conf`` of
    rados_deploy's ``CephCluster.s3_certificate()``). Give Ceph 16's gateway its TLS endpoint
    (``CephCluster.s3_tls_endpoint``): over HTTP the AWS SDK signs each upload's payload in
    aws-chunked form, which that gateway refuses for an empty object (every committer makes some)."""

    s3_endpoint: str | None = None
    s3_credentials: str | None = None
    bucket: str | None = None
    mountpoint: str | None = None
    s3_trust: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class WriterConf:
    """What an application writes with: Spark ``conf``, the driver's ``env``, the Maven ``jars``
    (coordinates) its driver and executors need on their class path (spark_deploy's
    ``SparkCluster.classpath_conf``) and the ``base`` URI its datasets go under."""

    writer: str
    conf: dict[str, str]
    env: dict[str, str]
    jars: tuple[str, ...]
    base: str

    def output(self, dataset: str) -> str:
        """The URI dataset ``dataset`` is written to."""
        return f"{self.base}/{dataset}"

    def app_conf(self) -> dict[str, str]:
        """The entries an application needs from its start (S3A's endpoint and credentials
        provider, the executors' environment, file systems)."""
        return {k: v for k, v in self.conf.items() if not k.startswith(PER_JOB)}

    def job_conf(self) -> dict[str, str]:
        """The entries one job of a running application may set for itself (so writers can
        take turns in one application): ``spark.sql.*`` on its session, ``spark.hadoop.*`` as
        its writer's options, prefix dropped (they reach the job's Hadoop conf)."""
        return {k: v for k, v in self.conf.items() if k.startswith(PER_JOB)}


@dataclasses.dataclass(frozen=True)
class Writer:
    """One writer: ``name``, ``kind`` (:data:`KINDS`), ``committer`` (S3A's ``fs.s3a.committer.name``
    for ``s3a``, FileOutputCommitter's algorithm version for ``cephfs``) and a one-line
    ``definition`` for reports."""

    name: str
    kind: str
    committer: str
    definition: str

    def conf(self, target: WriteTarget) -> WriterConf:
        """This writer's :class:`WriterConf` on ``target``; UsageError when the stack lacks what it
        writes through."""
        return _s3a(self, target) if self.kind == "s3a" else _cephfs(self, target)


def _s3a(w: Writer, t: WriteTarget) -> WriterConf:
    if not (t.s3_endpoint and t.s3_credentials and t.bucket):
        raise UsageError(f"writer {w.name} writes through the RADOS Gateway, which this stack does not run: "
                         f"set CephOptions.rgw (or a 'ceph-rgw' layout role) and make its bucket")
    h = "spark.hadoop."
    conf = {f"{h}fs.s3a.endpoint": t.s3_endpoint, f"{h}fs.s3a.endpoint.region": "us-east-1",
            f"{h}fs.s3a.path.style.access": "true",
            f"{h}fs.s3a.connection.ssl.enabled": str(t.s3_endpoint.startswith("https://")).lower(),
            f"{h}fs.s3a.aws.credentials.provider": PROFILE_PROVIDER,
            f"spark.executorEnv.{CREDENTIALS_ENV}": t.s3_credentials, **t.s3_trust,
            # named always: with none named, a Parquet write through S3A ran the magic committer here
            f"{h}fs.s3a.committer.name": w.committer}
    if w.committer == "file":
        conf[f"{h}mapreduce.fileoutputcommitter.algorithm.version"] = "1"
    else:
        if w.committer == "directory" and not t.mountpoint:
            raise UsageError(f"writer {w.name}: the directory committer keeps its pending uploads in a directory "
                             f"every Spark node shares; mount CephFS on them (CephCluster.mount)")
        conf.update({f"{h}fs.s3a.committer.magic.enabled": "true",
                     f"{h}mapreduce.outputcommitter.factory.scheme.s3a":
                         "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
                     "spark.sql.sources.commitProtocolClass": CLOUD_PROTOCOL,
                     "spark.sql.parquet.output.committer.class": CLOUD_PARQUET})
        if w.committer == "directory":
            conf[f"{h}fs.s3a.committer.staging.tmp.path"] = f"file://{t.mountpoint}/{MOUNT_DIR}/.s3a-staging"
    return WriterConf(w.name, conf, {CREDENTIALS_ENV: t.s3_credentials}, S3A, f"s3a://{t.bucket}/{w.name}")


def _cephfs(w: Writer, t: WriteTarget) -> WriterConf:
    if not t.mountpoint:
        raise UsageError(f"writer {w.name} writes into the CephFS mount: mount CephFS writable on every Spark "
                         f"node (CephCluster.mount with users.fs_write)")
    conf = {"spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": w.committer}
    return WriterConf(w.name, conf, {}, (), f"file://{t.mountpoint}/{MOUNT_DIR}/{w.name}")


WRITERS = {w.name: w for w in (
    Writer("s3a-classic", "s3a", "file", "S3A on the RADOS Gateway, FileOutputCommitter v1: renames are COPY + DELETE"),
    Writer("s3a-magic", "s3a", "magic", "S3A on the RADOS Gateway, the magic committer: multipart uploads "
                                        "completed at job commit"),
    Writer("s3a-directory", "s3a", "directory", "S3A on the RADOS Gateway, the directory (staging) committer: "
                                                "files staged locally, uploaded at task commit"),
    Writer("cephfs-v1", "cephfs", "1", "Spark's FileOutputCommitter v1 over the CephFS mount (task and job "
                                       "commit rename)"),
    Writer("cephfs-v2", "cephfs", "2", "Spark's FileOutputCommitter v2 over the CephFS mount (task commit "
                                       "renames into the output)"),
)}


def writer(name: str) -> Writer:
    """The writer named ``name``; UsageError naming the known ones otherwise."""
    if name not in WRITERS:
        raise UsageError(f"unknown writer {name!r}: choose one of {', '.join(WRITERS)}")
    return WRITERS[name]
