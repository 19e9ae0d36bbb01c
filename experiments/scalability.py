"""Data scalability (thesis fig. 18): query time, split into init and compute, as the dataset
grows by hard-link inflation, offload against vanilla Spark Parquet, and the speedup
(paper: 16-512 GiB logical from one 1 GiB physical copy)."""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import OFFLOAD, VANILLA, names

READERS = names(OFFLOAD, VANILLA)

experiment = Experiment(
    name="scalability",
    figures=("scalability",),
    description="Init/compute time vs logical dataset size (link multiplier), offload vs vanilla, "
                "with the speedup (thesis fig. 18)",
    workload=Workload(selectivity=10),
    sweep=Sweep(cartesian={"link_multiplier": [16, 32, 64, 128, 256, 512], "reader": READERS}),
    warmup=1,
    profiles={
        # 1 M rows physical, 1-4 M rows logical; the largest first, so the smaller sizes run in a
        # warm application (run first, they would carry the JVM's warm-up)
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"link_multiplier": [4, 2, 1], "reader": READERS}),
                              repetitions=2),
        # 1 GiB physical (~16 M rows), inflated 16x..512x = 16-512 GiB logical
        "paper": profiles.paper(data={"rows": 16_000_000, "object_size": "64MiB"}),
    },
)
