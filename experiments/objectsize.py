"""Object size sweep (thesis fig. 15): query time split into init (listing, planning) and compute
per RADOS object size, offloaded (paper: 4-128 MiB, 16-64 MiB were the sweet spots)."""
from sae import Experiment, Sweep, Workload, profiles

SIZES = ["4MiB", "8MiB", "16MiB", "32MiB", "64MiB", "128MiB"]

experiment = Experiment(
    name="objectsize",
    figures=("objectsize",),
    description="Init/compute time vs object size at 10 % selectivity, offloaded (thesis fig. 15)",
    workload=Workload(selectivity=10, reader="offload"),
    sweep=Sweep(cartesian={"object_size": SIZES}),
    warmup=1,
    profiles={
        # 1 M rows are ~30 MB: 64 MiB objects leave 4 objects (one per link name) for 2 task slots
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"object_size": ["4MiB", "16MiB", "64MiB"]})),
        "paper": profiles.paper(),
    },
)
