"""Selectivity sweep: query time vs the share of rows a filter keeps, offloaded into the Ceph OSDs
vs filtered on the Spark side (paper: 1..100 %, 21 runs per point, first one dropped)."""
from sae import DataSpec, Experiment, Sweep, Workload

experiment = Experiment(
    name="selectivity",
    description="Query time vs selectivity, offload on/off",
    data=DataSpec(rows=200_000, object_size="8MiB"),
    workload=Workload(column="total_amount"),
    sweep=Sweep(cartesian={"selectivity": [1, 10, 25, 50, 75, 100], "offload": [True, False]}),
    repetitions=21,
    warmup=1,
    profiles={
        "tiny": {"data": {"rows": 200_000, "object_size": "4MiB"},
                 "sweep": Sweep(cartesian={"selectivity": [10, 100], "offload": [True, False]}),
                 "repetitions": 3, "warmup": 1, "pause": 1.0},
        "paper": {"cluster": {"nodes": 9}, "ceph": {"store": "bluestore", "osd_size": "200GiB"},
                  "spark": {"worker_cores": 8, "worker_memory": "60g", "executor_memory": "48g"},
                  "data": {"rows": 100_000_000, "object_size": "64MiB", "link_multiplier": 64},
                  "sweep": Sweep(cartesian={"selectivity": [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
                                            "offload": [True, False]}),
                  "repetitions": 21, "warmup": 1, "pause": 5.0},
    },
)
