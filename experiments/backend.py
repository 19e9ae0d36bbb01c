"""Backend-only reads (thesis fig. 16): the object class's scan of every object timed without
Spark, from a librados client on the driver host (sae.running.backend), per object size and selectivity:
what the storage side alone takes to filter and ship the data."""
from sae import Experiment, Sweep, Workload, profiles
from sae.running.backend import stage_run

experiment = Experiment(
    name="backend",
    figures=("backend",),
    description="The object class's scan of every object, timed from a librados client without Spark, "
                "vs object size (thesis fig. 16)",
    workload=Workload(reader="offload"),
    sweep=Sweep(cartesian={"object_size": ["4MiB", "8MiB", "16MiB", "32MiB", "64MiB", "128MiB"],
                           "selectivity": [1, 100]}),
    warmup=1,
    stages={"run": stage_run},
    profiles={
        # objectsize.py's datasets
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"object_size": ["4MiB", "16MiB", "64MiB"],
                                                     "selectivity": [1, 100]})),
        "paper": profiles.paper(),
    },
)
