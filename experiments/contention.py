"""Contention: a busy storage side. A second tenant keeps a share of each storage host's cores
busy (``cluster.storage_load``: stress-ng in the host's cgroup, its CPU measured per repetition
as ``tenant_cpu_s``) while each reader runs the main query at 1 % and 100 %: offload (every
filter pushed into the OSDs), auto (per object: pushed, or the object read whole and filtered
by Spark, whichever the task measures cheaper; docs/connector.md), no-offload and vanilla.

Storage clusters serve many clients; the thesis measured an idle one and proposed handing work
back to the compute side when storage is loaded ("pushback") as future work. The question this
answers: how much does offloading lose when the OSDs share their cores, and how much of it does
the ``auto`` reader recover?

Tiny profile: the local cluster (node1 stores on 1 core, node2-3 compute), no tenant and a
tenant holding four times the storage host's core (four stress-ng workers on it; measured with
two: the tenant took 0.5-0.9 of the core while queries ran, and offload at 1 % still beat
vanilla), 1 % and 100 %.
"""
from sae import ClusterSpec, Experiment, Sweep, Workload, profiles
from sae.planning.readers import READERS, names

EVERY_READER = names(*READERS.values())

experiment = Experiment(
    name="contention",
    figures=("contention",),
    description="Query time per reader as a second tenant loads the storage hosts' cores, at 1 % and 100 %",
    cluster=ClusterSpec(),
    workload=Workload(column="total_amount"),
    sweep=Sweep(cartesian={"storage_load": [0, 0.5, 1, 2, 4], "selectivity": [1, 100], "reader": EVERY_READER}),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"storage_load": [0, 4], "selectivity": [100, 1],
                                                     "reader": EVERY_READER})),
        "paper": profiles.paper(),
    },
)
