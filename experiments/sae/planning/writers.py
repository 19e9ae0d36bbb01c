"""The writers a write job writes its output with (``workload.writer``), each defined once: its
name, legend label and colour, the storage interface it writes through, its commit protocol in
one line, and how the Spark application reaches it (``target``: ``"module:function"``, called
lazily by the run stage with the stack, since the deployers' APIs build it).

Stocator (Vernik et al., IEEE CloudCom 2017) counted what each commit protocol asks of the store;
sae writes the same outputs through each writer on one Ceph cluster and counts the operations by
type at the daemons (docs/results.md, "Writes"). Adding a writer is one entry in :data:`WRITERS`.

The write jobs (``workload.write``) are Stocator's workloads on the taxi data, in :data:`JOBS`.
"""
from __future__ import annotations

import dataclasses

from metareserve.errors import UsageError

INTERFACES = ("cephfs", "s3")
"""What a writer writes through: CephFS (libcephfs or a ceph-fuse mount) or S3 (the RADOS Gateway)."""


@dataclasses.dataclass(frozen=True)
class Writer:
    """One writer: ``name`` (the value of ``workload.writer``), ``label`` and ``colour``
    (figures), the ``interface`` it writes through (:data:`INTERFACES`), its commit protocol
    (``commit``, one line for the report) and ``target``, the ``"module:function"`` that makes
    its :class:`WriteTarget` from the run's stack."""

    name: str
    label: str
    colour: str
    interface: str
    commit: str
    target: str


@dataclasses.dataclass(frozen=True)
class WriteTarget:
    """How a Spark application writes through a writer and reads its output back: ``format``,
    ``options`` and ``uri`` (the output's root: each repetition writes under
    ``<uri>/<run>/<point>/<repetition>``), Hadoop and Spark SQL settings applied before the
    job (``hadoop``, ``sql``), and the read back (``read_format``, ``read_options``,
    ``read_uri``: the same root as the reader of the output sees it)."""

    format: str
    uri: str
    options: dict[str, str]
    read_format: str
    read_uri: str
    read_options: dict[str, str]
    hadoop: dict[str, str] = dataclasses.field(default_factory=dict)
    sql: dict[str, str] = dataclasses.field(default_factory=dict)

    def app_config(self) -> dict:
        """Plain data for the application's JSON argument (``sae/app/writes.py``)."""
        return dataclasses.asdict(self)


SAE_CEPH = Writer("sae-ceph", "sae-ceph", "tab:green", "cephfs",
                  "tasks write single-row-group Parquet objects at their final names through libcephfs; the "
                  "job commits by writing one manifest (no rename, no listing); readers read what it names",
                  "sae.running.writer:sae_ceph")
CEPHFS_V1 = Writer("cephfs-v1", "CephFS v1", "tab:blue", "cephfs",
                   "Spark's Parquet writer over a ceph-fuse mount, Hadoop's FileOutputCommitter algorithm 1: "
                   "task output renamed into the job's temporary directory at task commit, then into place at "
                   "job commit",
                   "sae.running.writer:cephfs_v1")
CEPHFS_V2 = Writer("cephfs-v2", "CephFS v2", "tab:cyan", "cephfs",
                   "the same, FileOutputCommitter algorithm 2: task output renamed into place at task commit",
                   "sae.running.writer:cephfs_v2")
S3A_CLASSIC = Writer("s3a-classic", "S3A rename", "tab:red", "s3",
                     "Hadoop's S3A on the RADOS Gateway with the FileOutputCommitter: every rename a COPY and a "
                     "DELETE of each object",
                     "sae.running.writer:s3a_classic")
S3A_MAGIC = Writer("s3a-magic", "S3A magic", "tab:orange", "s3",
                   "S3A's magic committer: tasks upload as uncompleted multipart uploads, the job completes them",
                   "sae.running.writer:s3a_magic")
S3A_DIRECTORY = Writer("s3a-directory", "S3A directory", "tab:brown", "s3",
                       "S3A's staging (directory) committer: tasks write to local disk, task commit uploads as "
                       "uncompleted multipart uploads, the job completes them",
                       "sae.running.writer:s3a_directory")

WRITERS = {w.name: w for w in (SAE_CEPH, CEPHFS_V1, CEPHFS_V2, S3A_CLASSIC, S3A_MAGIC, S3A_DIRECTORY)}
"""Every writer by name, in the order figures and tables list them."""


@dataclasses.dataclass(frozen=True)
class Job:
    """One write job (``workload.write``): ``name``, one line for the report, and whether it
    writes (``read-only`` reads what ``copy`` wrote through the same writer)."""

    name: str
    definition: str
    writes: bool = True


JOBS = {j.name: j for j in (
    Job("one-object", "one row of the trips written as one object (Stocator's Table I)"),
    Job("teragen", "workload.rows generated rows (a key, a number and a 90-byte payload, Teragen's shape) written"),
    Job("copy", "the dataset read through workload.reader and written whole (Stocator's Copy)"),
    Job("query", "the groupby query's answer over the dataset written back"),
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


def order(name: str) -> int:
    """Where writer ``name`` comes in :data:`WRITERS` (unknown names last)."""
    return list(WRITERS).index(name) if name in WRITERS else len(WRITERS)
