"""Contention: a busy storage side. A second tenant shares the storage hosts while each reader
runs the main query at 1 % and 100 %: offload (every filter pushed into the OSDs), auto (per
object: pushed, or the object read whole and the same scan run in the Spark task, whichever its
cost model, fed by the OSDs' reported work, says is cheaper, and the last objects of a task's list
scanned in the task while it waits for the pushed ones; docs/connector.md), no-offload and
vanilla. The tenants (``sae.running.tenant_load``):

* a CPU load (``cluster.storage_load``): stress-ng keeps a share of each storage host's cores
  busy, in the host's cgroup; what it got is measured per repetition (``tenant_cpu_s``);
* a second application (``cluster.storage_scans``): a librados client on the storage host keeps
  that many scan calls of the object class in flight over the same objects (every column, 1 %),
  so the OSDs' op threads serve its pushed-down scans beside the query's; its calls answered are
  measured per repetition (``tenant_scans``). The queries start once it has answered its first call.

Storage clusters serve many clients; the thesis measured an idle one and proposed handing work
back to the compute side when storage is loaded ("pushback") as future work. The question this
answers: how much does offloading lose when the OSDs share their cores or serve another
application's scans, and how much of it does the ``auto`` reader recover?

Tiny profile: the local cluster (node1 stores on 1 core, node2-3 compute); no tenant, a CPU load
holding four times the storage host's core (four stress-ng workers on it: with two, the tenant got
too little of the core to slow offload down), and a second application with 4 scans in flight;
1 % and 100 %.
"""
from sae import ClusterSpec, Experiment, Sweep, Workload, profiles
from sae.planning.readers import READERS, names

EVERY_READER = names(*(r for r in READERS.values() if not r.reads.keep))   # each reads the storage side

experiment = Experiment(
    name="contention",
    figures=("contention",),
    description="Query time per reader beside a second tenant on the storage hosts (a CPU load, another "
                "application's scans), at 1 % and 100 %",
    cluster=ClusterSpec(),
    workload=Workload(column="total_amount"),
    sweep=Sweep(zipped={"storage_load": [0, 0.5, 1, 2, 4, 0, 0, 0], "storage_scans": [0, 0, 0, 0, 0, 2, 4, 8]},
                cartesian={"selectivity": [1, 100], "reader": EVERY_READER}),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(sweep=Sweep(zipped={"storage_load": [0, 4, 0], "storage_scans": [0, 0, 4]},
                                          cartesian={"selectivity": [100, 1], "reader": EVERY_READER})),
        "paper": profiles.paper(),
    },
)
