"""What the writers of a stack's write jobs need (:mod:`sae.planning.writers`), made by the build
stage once per stack: each writer's :class:`Writes`, the output the application writes through
(:class:`~sae.planning.writers.Output`) with the Spark conf and environment its start needs.
Each writer entry names its function here (``Writer.target``), built from the deployers' own
APIs: the connector's write options (sae-ceph); for the baselines, a writable CephFS mount, the
gateway's bucket, TLS endpoint and the writer's S3 credentials (rados_deploy) and Hadoop's S3A
jars on the Spark nodes (spark_deploy; ``SparkOptions.maven_jars``, which a point with
``ceph.rgw`` asks for).
"""
from __future__ import annotations

import dataclasses
import importlib

from metareserve import StageReport
from spark_deploy import merged_conf

from ..planning import writers
from ..planning.writers import Output, Writer, WriteTarget
from .context import Stack, WriteRecord, merge_report

OUTPUT = "/sae-writes"
"""The CephFS directory sae-ceph writes under (``<run>/<point>/r<repetition>``)."""
BUCKET = "sae-writes"
"""The S3 bucket the S3A writers write into."""


@dataclasses.dataclass(frozen=True)
class Writes:
    """A writer's part of the application: its ``output``, the Spark ``conf`` and the driver's
    ``env`` the application starts with, what building it did (``report``), and where its jobs
    write (``cephfs`` directories, ``buckets``: :class:`~sae.running.context.WriteRecord`)."""

    output: Output
    conf: dict = dataclasses.field(default_factory=dict)
    env: dict = dataclasses.field(default_factory=dict)
    report: StageReport | None = None
    cephfs: tuple = ()
    buckets: tuple = ()


def build(reservation_name: str, stack: Stack, points: list) -> StageReport:
    """Each writer one of the stack's ``points`` writes through, made once per stack into
    ``stack.writes``; where they write is recorded for ``sae clean`` (under the reservation's
    name) before any job writes."""
    report = StageReport("writers")
    for name in dict.fromkeys(p.spec.workload.writer for p in points if p.spec.workload.writer):
        if name not in stack.writes:
            w = writers.get(name)
            module, _, function = w.target.partition(":")
            stack.writes[name] = getattr(importlib.import_module(module), function)(stack, w)
        made = stack.writes[name]
        WriteRecord.add(reservation_name, made.cephfs, made.buckets)
        if made.report is not None:
            merge_report(report, made.report, name)
    return report


def submit_parts(stack: Stack, names) -> tuple[dict, dict]:
    """(Spark conf, driver env) an application writing through writers ``names`` starts with."""
    conf, env = {}, {}
    for name in names:
        conf = merged_conf(conf, stack.writes[name].conf)
        env.update(stack.writes[name].env)
    return conf, env


def sae_ceph(stack: Stack, writer: Writer) -> Writes:
    """The connector's write (its least-privilege writer) in objects of the dataset's size, read
    back through offload."""
    b = stack.build
    return Writes(Output(format=b.format, uri=OUTPUT, options=dict(b.write_options), read_format=b.format,
                         read_uri=OUTPUT, read_options={**b.options, "mode": "offload"}, sized_by="object_size"),
                  cephfs=(OUTPUT,))


def baseline(stack: Stack, writer: Writer) -> Writes:
    """A baseline writer (Spark's own Parquet writer and committers) on the stack's targets: its
    committer's settings per job (``spark.sql.*`` on the session, the Hadoop ones as the write's
    options), the rest at the application's start."""
    target, report = _target(stack)
    c = writer.conf(target)
    job = c.job_conf()
    options = {k.removeprefix("spark.hadoop."): v for k, v in job.items() if k.startswith("spark.hadoop.")}
    sql = {k: v for k, v in job.items() if not k.startswith("spark.hadoop.")}
    output = Output(format="parquet", uri=c.base, options=options, read_format="parquet", read_uri=c.base,
                    read_options={}, sql=sql)
    conf = merged_conf(c.app_conf(), stack.spark.classpath_conf(c.jars) if c.jars else {})
    return Writes(output, conf=conf, env=dict(c.env), report=report,
                  cephfs=(f"/{writers.MOUNT_DIR}",) if writer.writes_into_mount else (),
                  buckets=(BUCKET,) if writer.interface == "s3" else ())


def _target(stack: Stack) -> tuple[WriteTarget, StageReport | None]:
    """Where the stack lets Spark write, made once per stack (the second writer reports nothing):
    S3A's jars on the Spark nodes, the CephFS mount (writable where a writer writes into it: the
    build's :func:`~sae.running.mount.mount_cephfs`), and with a gateway its bucket and the
    writer's credentials linked on the Spark nodes."""
    if stack.write_target is not None:
        return stack.write_target, None
    ceph, spark = stack.ceph, stack.spark
    nodes = list(dict.fromkeys([spark.driver_node, *spark.worker_nodes]))
    report = StageReport("write targets")
    merge_report(report, spark.install(), "spark jars")
    s3 = {}
    if ceph.options.rgw:
        merge_report(report, ceph.create_bucket(BUCKET), "bucket")
        merge_report(report, ceph.link_s3_credentials(nodes), "s3 credentials")
        s3 = {"s3_endpoint": ceph.s3_tls_endpoint, "s3_credentials": ceph.shared_s3_credentials(ceph.s3_users.writer),
              "bucket": BUCKET, "s3_trust": spark.trust_conf(ceph.s3_certificate())}
    stack.write_target = WriteTarget(mountpoint=stack.mount, **s3)
    return stack.write_target, report
