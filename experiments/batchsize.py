"""Batch size (Arrow-Spark paper, E1): query time and the Arrow batches Spark consumes vs the rows
per batch the OSDs return (the connector's batch_size), offloaded, every row kept. The OSDs return
Arrow batches, never objects as stored (``whole_objects=False``): a whole object is read by Spark's
own Parquet reader in Spark's batch size, which this axis does not vary."""
from sae import Experiment, Sweep, Workload, profiles

experiment = Experiment(
    name="batchsize",
    figures=("batchsize",),
    description="Query time and batches per query vs rows per Arrow batch, offloaded, 100 % of rows "
                "(Arrow-Spark paper E1)",
    workload=Workload(reader="offload", selectivity=100, whole_objects=False),
    sweep=Sweep(cartesian={"batch_size": [1024, 4096, 16384, 65536, 262144, 1048576]}),
    warmup=1,
    profiles={
        # 16 MiB objects hold ~250 k rows: 131072 rows per batch leave 2 batches per object; the
        # smallest batches last, when the one application's JIT has compiled the read path (run
        # first, their cost would include warming up the JVM)
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"batch_size": [131072, 16384, 2048]})),
        "paper": profiles.paper(),
    },
)
