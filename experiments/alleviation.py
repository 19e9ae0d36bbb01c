"""CPU and network alleviation: per-node CPU and network during a strong filter, offloaded vs
the two baselines, no-offload and vanilla Spark Parquet (paper: at 1 % selectivity the compute
side used 8x less CPU and 48.9x less network)."""
from sae import DataSpec, Experiment, MonitorSpec, Sweep, Workload

experiment = Experiment(
    name="alleviation",
    description="Per-node CPU and network (and their AUC) at 1 % selectivity, offload vs no-offload vs vanilla",
    monitor=MonitorSpec(enabled=True, scrape_interval="1s"),
    data=DataSpec(rows=300_000, object_size="8MiB"),
    workload=Workload(selectivity=1),
    # offload last: no-offload (the same connector) has warmed its JVM code paths by then
    sweep=Sweep(cartesian={"reader": ["no-offload", "vanilla", "offload"]}),
    repetitions=21,
    warmup=1,
    pause=5.0,
    profiles={
        # selectivity.py's tiny data (4 M rows per query, see there), so both share one dataset
        "tiny": {"data": {"rows": 1_000_000, "object_size": "16MiB", "link_multiplier": 4},
                 "repetitions": 3, "warmup": 1, "pause": 2.0},
        "paper": {"cluster": {"nodes": 9}, "ceph": {"store": "bluestore", "osd_size": "200GiB"},
                  "spark": {"worker_cores": 8, "worker_memory": "60g", "executor_memory": "48g"},
                  "monitor": {"scrape_interval": "1s"},
                  "data": {"rows": 100_000_000, "object_size": "64MiB", "link_multiplier": 64},
                  "repetitions": 21, "warmup": 1, "pause": 10.0},
    },
)
