"""Data scalability (thesis fig. 18): query time, split into init and compute, as the dataset
grows by hard-link inflation, offload against vanilla Spark Parquet, and the speedup
(paper: 16-512 GiB logical from one 1 GiB physical copy).

The thesis ran its default query here (§5.1.3): every row read and counted, no filter, from
uncompressed Parquet in 8192-row batches, and found offload slower than vanilla with a gap
growing with size. That is the first series: selectivity 100, 8192-row batches, and the OSDs
decoding and re-encoding every object as the thesis's connector did (``whole_objects=False``;
sae's own default would send an object that passes whole as stored, which is not what the thesis
measured). The second series keeps 10 % of the rows, where offload ships a tenth: the two
together show that the thesis's finding is about its query, not about size alone."""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import OFFLOAD, VANILLA, names

READERS = names(OFFLOAD, VANILLA)

experiment = Experiment(
    name="scalability",
    figures=("scalability",),
    description="Init/compute time vs logical dataset size (link multiplier), offload vs vanilla, "
                "with the speedup, for the thesis's read-everything query and a 10 % filter (thesis fig. 18)",
    workload=Workload(batch_size=8192, whole_objects=False),
    sweep=Sweep(cartesian={"selectivity": [100, 10], "link_multiplier": [16, 32, 64, 128, 256, 512],
                           "reader": READERS}),
    warmup=1,
    profiles={
        # 1 M rows physical, 1-4 M rows logical; the largest first, so the smaller sizes run in a
        # warm application (run first, they would carry the JVM's warm-up)
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"selectivity": [100, 10], "link_multiplier": [4, 2, 1],
                                                     "reader": READERS}),
                              repetitions=2),
        # 1 GiB physical (~16 M rows), inflated 16x..512x = 16-512 GiB logical
        "paper": profiles.paper(data={"rows": 16_000_000, "object_size": "64MiB"}),
    },
)
