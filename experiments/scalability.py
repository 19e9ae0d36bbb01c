"""Data scalability: query time as the dataset grows by hard-link inflation
(paper: 16–512 GiB from one physical copy)."""
from sae import DataSpec, Experiment, Sweep, Workload

experiment = Experiment(
    name="scalability",
    description="Query time vs logical dataset size (link multiplier), offload vs no-offload",
    data=DataSpec(rows=200_000, object_size="8MiB"),
    workload=Workload(selectivity=10),
    sweep=Sweep(cartesian={"link_multiplier": [1, 2, 4, 8], "reader": ["offload", "no-offload"]}),
    repetitions=21,
    warmup=1,
    profiles={
        "tiny": {"data": {"rows": 100_000, "object_size": "4MiB"},
                 "sweep": Sweep(cartesian={"link_multiplier": [1, 3], "reader": ["offload"]}),
                 "repetitions": 3, "warmup": 1, "pause": 1.0},
        # 1 GiB physical (~16 M rows), inflated 16x..512x = 16–512 GiB logical.
        "paper": {"cluster": {"nodes": 9}, "ceph": {"store": "bluestore", "osd_size": "200GiB"},
                  "spark": {"worker_cores": 8, "worker_memory": "60g", "executor_memory": "48g"},
                  "data": {"rows": 16_000_000, "object_size": "64MiB"},
                  "sweep": Sweep(cartesian={"link_multiplier": [16, 32, 64, 128, 256, 512],
                                            "reader": ["offload", "no-offload"]}),
                  "repetitions": 21, "warmup": 1, "pause": 5.0},
    },
)
