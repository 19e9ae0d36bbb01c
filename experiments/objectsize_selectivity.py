"""Object size x selectivity (thesis fig. 17): where offloading pays off for each object size,
offload against its no-offload baseline (paper grid: 4-128 MiB x 1/10/25/50/75/90/99/100 %)."""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import NO_OFFLOAD, OFFLOAD, names

READERS = names(OFFLOAD, NO_OFFLOAD)

experiment = Experiment(
    name="objectsize_selectivity",
    figures=("objectsize-selectivity", "compute-side", "objectsize"),
    description="Query time over object size x selectivity, offload vs no-offload (thesis fig. 17)",
    workload=Workload(),
    sweep=Sweep(cartesian={"object_size": ["4MiB", "8MiB", "16MiB", "32MiB", "64MiB", "128MiB"],
                           "selectivity": [1, 10, 25, 50, 75, 90, 99, 100], "reader": READERS}),
    warmup=1,
    profiles={
        # 12 points: one measured repetition each keeps the catalogue within its time
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"object_size": ["4MiB", "16MiB"], "selectivity": [100, 50, 1],
                                                     "reader": READERS}), repetitions=2),
        "paper": profiles.paper(),
    },
)
