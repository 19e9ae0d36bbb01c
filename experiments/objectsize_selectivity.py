"""Object size × selectivity: where offloading pays off for each object size."""
from sae import DataSpec, Experiment, Sweep, Workload

experiment = Experiment(
    name="objectsize_selectivity",
    description="Query time over object size × selectivity, three readers",
    data=DataSpec(rows=200_000),
    workload=Workload(),
    sweep=Sweep(cartesian={"object_size": ["8MiB", "16MiB", "32MiB", "64MiB"],
                           "selectivity": [1, 10, 50, 100], "reader": ["offload", "no-offload", "vanilla"]}),
    repetitions=21,
    warmup=1,
    profiles={
        "tiny": {"data": {"rows": 300_000},
                 "sweep": Sweep(cartesian={"object_size": ["4MiB", "8MiB"], "selectivity": [10, 100]}),
                 "repetitions": 2, "warmup": 1, "pause": 1.0},
        "paper": {"cluster": {"nodes": 9}, "ceph": {"store": "bluestore", "osd_size": "200GiB"},
                  "spark": {"worker_cores": 8, "worker_memory": "60g", "executor_memory": "48g"},
                  "data": {"rows": 100_000_000, "link_multiplier": 64},
                  "repetitions": 21, "warmup": 1, "pause": 5.0},
    },
)
