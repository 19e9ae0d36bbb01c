"""Object size sweep: query time split into init and compute per RADOS object size
(paper: 4–128 MiB, 16–64 MiB were the sweet spots)."""
from sae import DataSpec, Experiment, Sweep, Workload

experiment = Experiment(
    name="objectsize",
    description="Init/compute time vs object size at 10 % selectivity, offloaded",
    data=DataSpec(rows=200_000),
    workload=Workload(selectivity=10, reader="offload"),
    sweep=Sweep(cartesian={"object_size": ["4MiB", "8MiB", "16MiB", "32MiB", "64MiB", "128MiB"]}),
    repetitions=21,
    warmup=1,
    profiles={
        "tiny": {"data": {"rows": 300_000},
                 "sweep": Sweep(cartesian={"object_size": ["4MiB", "8MiB"]}),
                 "repetitions": 3, "warmup": 1, "pause": 1.0},
        "paper": {"cluster": {"nodes": 9}, "ceph": {"store": "bluestore", "osd_size": "200GiB"},
                  "spark": {"worker_cores": 8, "worker_memory": "60g", "executor_memory": "48g"},
                  "data": {"rows": 100_000_000, "link_multiplier": 64},
                  "repetitions": 21, "warmup": 1, "pause": 5.0},
    },
)
