"""The PG autoscaler (thesis figs. 22-23): the main query repeated over a long series with Ceph's
placement-group autoscaler off, then on, and the placement groups the OSDs held after each query.
The thesis saw repeated runs slow down gradually with the autoscaler on and the slowdown gone with
it off, which is why every other experiment runs with it off.

The autoscaler (a mgr module, every 60 s) sets each pool's PG count from the share of the OSDs'
capacity the pool fills, acting when the count is off by more than 3x; splitting or merging PGs
moves data while queries run. Turning it on here happens in place on the running stack
(``ceph.pg_autoscale``, put in force by the start stage); turning it off puts the computed PG
counts back, so the "off" series runs on the same PGs as every other experiment.

Tiny profile: the local cluster, 15 measured queries per setting (about 65 s each, so the
autoscaler looks at least once), offload at 100 % (every object read). Its 16 MiB objects fill a
few percent of the 4 GiB OSD, so the autoscaler may find nothing to change: the lower panel of
the figure says whether it did.
"""
from sae import Experiment, Sweep, Workload, profiles

experiment = Experiment(
    name="autoscaler",
    figures=("autoscaler",),
    description="Query time over a long series of repetitions with Ceph's PG autoscaler off and on, and the "
                "placement groups the OSDs held (thesis figs. 22-23)",
    workload=Workload(reader="offload", selectivity=100),
    sweep=Sweep(cartesian={"pg_autoscale": [False, True]}),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(repetitions=16),
        "paper": profiles.paper(),
    },
)
