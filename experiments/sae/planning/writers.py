"""The writers a write job writes its output with (``workload.writer``), each defined once
(:data:`WRITERS`): its name, legend label and colour, how it reaches Ceph (``kind``), its committer
and its commit protocol in one line, and its ``target``: the ``"module:function"`` the build stage
calls with the stack (the deployers' APIs build it; sae.running.writer):

- ``sae-ceph``: the connector's write: single-row-group Parquet objects at their final names
  through libcephfs, committed by one manifest (no rename, no listing; docs/connector.md);
- ``cephfs-v1`` / ``cephfs-v2``: Spark's Parquet writer over a writable ceph-fuse mount,
  FileOutputCommitter algorithm 1 (task and job commit rename) and 2 (task commit renames into the
  destination), through Hadoop's default ``file:`` file system as Spark ships it (a ``.crc``
  checksum file beside each output file; S3A's directory committer needs that file system class
  for its staging);
- ``s3a-classic``: Hadoop's S3A on the RADOS Gateway, FileOutputCommitter (algorithm 1): every
  rename is a COPY and a DELETE of each object;
- ``s3a-magic`` / ``s3a-directory``: S3A's magic and directory (staging) committers, bound to
  Spark SQL by spark-hadoop-cloud's ``PathOutputCommitProtocol`` and
  ``BindingParquetOutputCommitter``: tasks upload their files as uncompleted multipart uploads,
  the job completes them (no COPY).

For the baselines, :meth:`Writer.conf` builds, for a running stack (:class:`WriteTarget`), the
:class:`WriterConf` an application writes with: its Spark conf (no secret: S3 keys stay in their
0600 file, which the AWS SDK's profile provider reads), the driver's environment, the Maven jars
it needs on its class path and its output URIs.

Stocator (Vernik et al., IEEE CloudCom 2017) counted what each commit protocol asks of the store;
sae writes the same outputs through each writer on one Ceph cluster and counts the operations by
type at the daemons (docs/results.md, "Writes"). Adding a writer is one entry in :data:`WRITERS`.
The write jobs (``workload.write``) are Stocator's workloads on the taxi data, in :data:`JOBS`.
"""
from __future__ import annotations

import dataclasses

from metareserve.errors import UsageError
from spark_deploy.maven import S3A

KINDS = ("sae-ceph", "s3a", "cephfs")
"""How a writer reaches Ceph: the connector (libcephfs), S3A on the gateway, a ceph-fuse mount."""

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
    """One writer: ``name`` (the value of ``workload.writer``), ``label`` and ``colour`` (figures),
    ``kind`` (:data:`KINDS`), ``committer`` (S3A's ``fs.s3a.committer.name`` for ``s3a``,
    FileOutputCommitter's algorithm version for ``cephfs``), its commit protocol in one line
    (``commit``, for reports) and ``target``, the ``"module:function"`` that makes what the
    application needs to write through it from the run's stack."""

    name: str
    label: str
    colour: str
    kind: str
    committer: str
    commit: str
    target: str

    @property
    def writes_into_mount(self) -> bool:
        """Whether it writes into the CephFS mount, which must then be writable: its output (cephfs),
        or the pending uploads S3A's directory committer shares between the Spark nodes."""
        return self.kind == "cephfs" or self.committer == "directory"

    @property
    def interface(self) -> str:
        """``s3`` (through the RADOS Gateway: the plan asks for ``ceph.rgw``) or ``cephfs``."""
        return "s3" if self.kind == "s3a" else "cephfs"

    def conf(self, target: WriteTarget) -> WriterConf:
        """A baseline's :class:`WriterConf` on ``target``; UsageError when the stack lacks what it
        writes through (the connector's write takes the connector's build instead)."""
        if self.kind == "sae-ceph":
            raise UsageError(f"writer {self.name} writes through the connector: its options are the connector "
                             f"build's write_options")
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


@dataclasses.dataclass(frozen=True)
class Output:
    """How the Spark application writes through a writer and reads its output back
    (sae/app/writes.py): ``format``, ``options`` (a baseline's committer settings among them) and
    ``uri`` (the output's root: each repetition writes under ``<uri>/<run>/<point>/r<repetition>``),
    the Spark SQL settings its job runs with (``sql``: a committer's protocol), and the read back
    (``read_format``, ``read_options``, ``read_uri``); ``sized_by``, the write option that sets
    the size of the objects it writes (sae-ceph's ``object_size``), or None where the writer has
    none (Spark's Parquet writer makes a file per task)."""

    format: str
    uri: str
    options: dict[str, str]
    read_format: str
    read_uri: str
    read_options: dict[str, str]
    sql: dict[str, str] = dataclasses.field(default_factory=dict)
    sized_by: str | None = None

    def app_config(self, object_size: int) -> dict:
        """Plain data for the application's JSON argument (``sae/app/writes.py``), writing objects
        of ``object_size`` bytes (the dataset's, as the offload reader reads them) where it can."""
        out = dataclasses.asdict(self)
        sized_by = out.pop("sized_by")
        if sized_by:
            out["options"] = {**out["options"], sized_by: str(object_size)}
        return out


_RUNNING = "sae.running.writer"


def _cephfs_baseline(name: str, label: str, colour: str, version: str, commit: str) -> Writer:
    """Spark's FileOutputCommitter (algorithm ``version``) over the CephFS mount, doing ``commit``."""
    return Writer(name, label, colour, "cephfs", version,
                  f"Spark's FileOutputCommitter v{version} over the CephFS mount: {commit}", f"{_RUNNING}:baseline")


def _s3a_baseline(name: str, label: str, colour: str, committer: str, commit: str) -> Writer:
    """S3A on the RADOS Gateway with S3A committer ``committer``, doing ``commit``."""
    return Writer(name, label, colour, "s3a", committer, f"S3A on the RADOS Gateway, {commit}",
                  f"{_RUNNING}:baseline")


WRITERS = {w.name: w for w in (
    Writer("sae-ceph", "sae-ceph", "tab:green", "sae-ceph", "manifest",
           "tasks write single-row-group Parquet objects at their final names through libcephfs; the job commits "
           "by writing one manifest (no rename, no listing); readers read what it names", f"{_RUNNING}:sae_ceph"),
    _cephfs_baseline("cephfs-v1", "CephFS v1", "tab:blue", "1", "task and job commit rename"),
    _cephfs_baseline("cephfs-v2", "CephFS v2", "tab:cyan", "2", "task commit renames into the output"),
    _s3a_baseline("s3a-classic", "S3A rename", "tab:red", "file",
                  "FileOutputCommitter v1: every rename a COPY and a DELETE of each object"),
    _s3a_baseline("s3a-magic", "S3A magic", "tab:orange", "magic",
                  "the magic committer: multipart uploads completed at job commit"),
    _s3a_baseline("s3a-directory", "S3A directory", "tab:brown", "directory",
                  "the directory (staging) committer: files staged on a shared directory, uploaded at task commit, "
                  "completed at job commit"),
)}
"""Every writer by name, in the order figures and tables list them."""


@dataclasses.dataclass(frozen=True)
class Job:
    """One write job (``workload.write``): ``name``, one line for the report, whether it writes
    (``read-only`` reads what the point copied through the same writer), the query whose answer
    it writes (``query``: a name in :data:`sae.planning.queries.QUERIES`) and whether it makes
    its rows itself, in as many tasks as ``workload.write_tasks`` asks (``generates``)."""

    name: str
    definition: str
    writes: bool = True
    query: str | None = None
    generates: bool = False


JOBS = {j.name: j for j in (
    Job("one-object", "one row of the trips written as one object (Stocator's Table I)"),
    Job("teragen", "workload.write_rows generated rows (a key, a number and a 90-byte payload, Teragen's shape) "
                   "written in workload.write_tasks tasks", generates=True),
    Job("copy", "the dataset read through workload.reader and written whole (Stocator's Copy)"),
    Job("query", "the groupby query's answer over the dataset written back", query="groupby"),
    Job("read-only", "the rows the point's copy wrote, read back and counted through the writer's interface",
        writes=False),
)}
"""Every write job by name."""


def get(name: str, where: str = "workload.writer") -> Writer:
    """The writer called ``name``; UsageError naming ``where`` and the writers otherwise."""
    try:
        return WRITERS[name]
    except (KeyError, TypeError):
        raise UsageError(f"{where} {name!r} is not one of {', '.join(WRITERS)}") from None


def job(name: str, where: str = "workload.write") -> Job:
    """The write job called ``name``; UsageError naming ``where`` and the jobs otherwise."""
    try:
        return JOBS[name]
    except (KeyError, TypeError):
        raise UsageError(f"{where} {name!r} is not one of {', '.join(JOBS)}") from None


def job_label(write: str, tasks=None) -> str:
    """A job as tables and figures name it: ``teragen``, or ``teragen, 16 tasks`` where it chose
    its tasks (``workload.write_tasks``; None or NaN: it did not)."""
    return write if tasks is None or tasks != tasks else f"{write}, {int(tasks)} tasks"


def order(name: str) -> int:
    """Where writer ``name`` comes in :data:`WRITERS` (unknown names last)."""
    return list(WRITERS).index(name) if name in WRITERS else len(WRITERS)
