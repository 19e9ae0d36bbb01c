"""CPU, network and storage-device alleviation (thesis figs. 10-13): per-host CPU, network and
device I/O over time during a strong filter, and what each side spent in all, offloaded vs the
two baselines, no-offload and vanilla Spark Parquet (paper: at 1 % selectivity the compute side
used 8x less CPU and 48.9x less network)."""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import NO_OFFLOAD, OFFLOAD, VANILLA, names

experiment = Experiment(
    name="alleviation",
    figures=("points", "alleviation", "resources-disk"),
    description="Per-host CPU, network and device I/O (and each side's total) at 1 % selectivity, "
                "offload vs no-offload vs vanilla (thesis figs. 10-13)",
    workload=Workload(selectivity=1),
    # offload last: no-offload (the same connector) has warmed its JVM code paths by then
    sweep=Sweep(cartesian={"reader": names(NO_OFFLOAD, VANILLA, OFFLOAD)}),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(),              # selectivity.py's stack and dataset
        "paper": profiles.paper(pause=10.0),
    },
)
