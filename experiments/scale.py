"""Cluster size (the Arrow-Spark paper's scaling, and at 17 hosts the thesis's cluster, its fig. 18
setting): the main query at 1 % and 100 % for each reader on 3, 5, 9 and 17 hosts, half of them
storage hosts with an OSD each, the others compute hosts (``Layout.default``: from 5 hosts on, the
driver on a host of its own), one stack per size.

On the local cluster every host shares the machine's cores: each side keeps its half of them and
a side with more hosts than cores gives each host an equal share as a CPU quota (``cores="split"``),
so wall times are the machine's, not a real cluster's. What does not depend on it leads the
report: bytes over each side's links, CPU-seconds per side, work and objects per OSD and their
balance (``placement_imbalance``). The objects are small (4 MiB, about 28 of them) so that 8 OSDs
each hold some. Three warm-up repetitions a point: a host's share of a core is small, so its JVMs
compile the query's code for longer (docs/experiments.md, cluster size: at 17 hosts, after one
warm-up the JIT compilers still spent about a third of offload's compute-side CPU).
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import names

experiment = Experiment(
    name="scale",
    figures=("scale",),
    description="Bytes, CPU per side and work per OSD vs the number of hosts (3 to 17), each reader at 1 % "
                "and 100 % (Arrow-Spark paper's scaling; the thesis's 17-host cluster)",
    workload=Workload(column="total_amount"),
    sweep=Sweep(cartesian={"cluster.nodes": [3, 5, 9, 17], "selectivity": [100, 1], "reader": names()}),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(cluster={"cores": "split"}, repetitions=6, warmup=3,
                              data={"rows": 4_000_000, "object_size": "4MiB", "link_multiplier": 1},
                              spark={"executor_memory": "512m", "driver_memory": "768m"}),
        "paper": profiles.paper(sweep=Sweep(cartesian={"cluster.nodes": [5, 9, 17], "selectivity": [100, 1],
                                                       "reader": names()})),
    },
)
