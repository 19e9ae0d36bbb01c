"""Queries beyond the scan: a scalar sum (TPC-H Q6's shape), a group-by (Q1's), a top-100, a join
with the zone dimension table and a point lookup, besides the thesis's filter + checksum, each
read by the three readers (sae.planning.queries defines them once). What each side spends per
query and reader: bytes to and CPU of the compute side, CPU of the storage side, and the time.

The offload reader pushes what the object class computes exactly: the filter and projection of
every query, the group-by's and the sum's partial aggregates (each object answers with its
groups; Spark merges them), the top-k's top 100 rows per object, and a join's pickup zones as a
runtime IN filter (Spark's dynamic pruning). Every reader's answer is checked against the others' (docs/experiments.md).

Tiny profile: the selectivity filter at 100 % (every row: where pushing a filter alone gains
nothing) and at 1 %.
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.queries import NAMES, QUERIES
from sae.planning.readers import names

SHAPES = [q for q in NAMES if not QUERIES[q].views]   # the key queries are indexed.py's
SELECTIVE = [q for q in SHAPES if QUERIES[q].selective]

experiment = Experiment(
    name="queries",
    figures=("queries",),
    description="Bytes, CPU and time per query shape (scan, sum, group-by, top-k, join, lookup) and reader",
    workload=Workload(),
    sweep=Sweep(cartesian={"query": SHAPES, "selectivity": [100, 10, 1], "reader": names()},
                where=lambda p: p["query"] in SELECTIVE or p["selectivity"] == 100),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"query": SHAPES, "selectivity": [100, 1], "reader": names()},
                                          where=lambda p: p["query"] in SELECTIVE or p["selectivity"] == 100),
                              repetitions=3),
        "paper": profiles.paper(),
    },
)
