"""Writes (Stocator, Vernik et al., IEEE CloudCom 2017): what each commit protocol asks of the
store, counted by type at the Ceph daemons, for Stocator's workloads on the taxi data:

* one-object: one row written as one object (Table I: S3A 117 REST operations, Swift 48,
  Stocator 8);
* teragen: generated rows written, in the application's tasks and in 16 (one output file per task
  for Spark's writers: Stocator's jobs wrote hundreds, and a rename-based commit pays per file);
  copy: the dataset read (offload) and written; query: the groupby query's answer written back
  (Table V: Stocator 15-33x fewer operations than S3A; Table IV: up to 18x faster);
* read-only: a copied dataset read back and counted (on par);

each through every writer: sae-ceph (the connector: objects at their final names, one manifest,
no rename), Spark's FileOutputCommitter v1 and v2 over a CephFS mount, and Hadoop's S3A on the
RADOS Gateway with its rename (classic), magic and directory committers. Every output is read
back through the writer's own read path and checked against its input's checksum.

Tiny profile: 1 M trips stored once, 1 M rows generated; one warm-up and five measured
repetitions of each job.
"""
from sae import Experiment, Sweep, profiles
from sae.planning import writers

WRITERS = list(writers.WRITERS)
JOBS = list(writers.JOBS)
SWEEP = Sweep(cartesian={"write": JOBS, "writer": WRITERS, "write_tasks": [None, 16]},
              where=lambda p: p["write_tasks"] is None or p["write"] == "teragen")
"""Every job through every writer; teragen also in 16 tasks."""

experiment = Experiment(
    name="writes",
    figures=("writes",),
    description="Storage operations by type, time and bytes written per writer and job (Stocator, Tables I, IV, V)",
    warmup=1,
    profiles={
        # 6 repetitions, the first a warm-up: the 5 measured that a ratio's interval needs
        "tiny": profiles.tiny(data={"link_multiplier": 1}, ceph={"rgw": True}, repetitions=6, sweep=SWEEP),
        # the dataset stored once (a copy writes what it reads: 100 M rows, not the 6.4 G its links make)
        "paper": profiles.paper(data={"link_multiplier": 1}, ceph={"rgw": True}, sweep=SWEEP),
    },
)
