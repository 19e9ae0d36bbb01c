"""Stored compression (Arrow-Spark paper, E4): query time and bytes to the compute side when the
Parquet objects are stored uncompressed, snappy, gzip or zstd, offloaded (the OSD decompresses)
against vanilla Spark Parquet (Spark decompresses), every row kept. Offload asks for decoded
replies (``whole_objects=False``): a whole object as stored would leave the decompression to Spark
and make the two readers the same."""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import OFFLOAD, VANILLA, names

READERS = names(OFFLOAD, VANILLA)

experiment = Experiment(
    name="storedcompression",
    figures=("storedcompression",),
    description="Query time and compute-side bytes vs the stored Parquet codec, offload vs vanilla, "
                "100 % of rows (Arrow-Spark paper E4)",
    workload=Workload(selectivity=100, whole_objects=False),
    sweep=Sweep(cartesian={"stored_compression": ["none", "snappy", "gzip", "zstd"], "reader": READERS}),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(repetitions=2),   # 8 points, 4 datasets: one measured repetition each
        "paper": profiles.paper(),
    },
)
