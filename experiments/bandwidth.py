"""Bandwidth sweep: query time vs the link rate between storage and compute, for each reader and
reply compression. The thesis recommended LZ4 or ZSTD reply compression by available bandwidth
but never measured across bandwidths; on the local cluster the rate is emulated (tc on every
host's link, both directions), declared and measured per point (results.parquet:
link_rate_declared_bps / link_rate_measured_bps), with storage and compute on their own cores.

Vanilla reads Parquet as stored (no reply compression), so it runs once per rate and selectivity.
Offload asks for Arrow replies at every selectivity (``whole_objects=False``): at 100 % the class
would otherwise send the objects as stored, and the reply compression this sweep varies would not
apply.
Rates are emulated on the local provider only (a testbed's links are what they are), so this
experiment has no CloudLab profile: the tiny profile is the one that runs.
"""
from sae import Experiment, Sweep, Workload, profiles, readers


def one_without_replies(point: dict) -> bool:
    """A reader that does not read through the connector (vanilla) has no reply compression: keep
    it at the connector's default (zstd) only."""
    return readers.get(point["reader"]).connector or point["compression"] == "zstd"


experiment = Experiment(
    name="bandwidth",
    figures=("bandwidth",),
    description="Query time vs link rate: offload, no-offload and vanilla, reply compression none/zstd",
    workload=Workload(column="total_amount", whole_objects=False),
    warmup=1,
    profiles={
        # Tiny: a quarter of the main job's rows per query (1 M rows: ~30 MB of Parquet, ~30 MB of
        # zstd replies and ~140 MB of uncompressed ones at 100 %), so the slowest rate (200 Mbit/s:
        # ~1.2 s for a zstd full read, ~6 s uncompressed) keeps 30 points x 2 repetitions to a
        # few minutes.
        # (rates are emulated on the local provider only: no paper profile)
        "tiny": profiles.tiny(data={"link_multiplier": 1}, repetitions=2,
                              sweep=Sweep(cartesian={"link_rate": ["200mbit", "1gbit", "unlimited"],
                                                     "compression": ["none", "zstd"], "selectivity": [100, 1],
                                                     "reader": readers.names()}, where=one_without_replies)),
    },
)
