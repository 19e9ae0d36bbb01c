"""Selectivity sweep (thesis fig. 14): query time, compute-side bytes and CPU vs the share of rows
a filter keeps, for the three readers: offload (filter and projection in the Ceph OSDs),
no-offload (the same connector, the OSDs return every row; the thesis's baseline) and vanilla
Spark Parquet over a CephFS mount (paper: 1..100 %, 21 runs per point, the first dropped; at 1 %
offloading cut the compute side's network 48.9x and its CPU 8.0x).

Compute and storage run on separate hosts (the default layout), so results.parquet's
compute_rx_bytes / compute_cpu_s answer "what did the compute side spend".

Tiny profile: the local cluster's 3 hosts, node1 stores (Ceph mon/mgr/mds/OSD), node2-3 compute
(Spark master, driver, 2 workers of 1 core).
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning.readers import names

# Tiny data (docs/results.md, "The tiny profile"): 1 M physical rows in 16 MiB objects, each
# linked under 4 names (link_multiplier: no extra storage), so every query scans 4 M rows: large
# enough that the readers' times differ by more than their repetitions' spread, small enough for
# minutes on 2 cores. 1-s scrapes and pauses of up to 2 s leave a scrape between queries, so each
# query's bytes and CPU-seconds are read from counters scraped just before and just after it.
experiment = Experiment(
    name="selectivity",
    figures=("selectivity", "compute-side"),
    description="Query time, compute-side bytes and CPU vs selectivity: offload, no-offload, vanilla (thesis fig. 14)",
    workload=Workload(column="total_amount"),
    drift=True,   # the first point again at the end: did the machine's speed change during the run?
    sweep=Sweep(cartesian={"selectivity": [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], "reader": names()}),
    warmup=1,
    profiles={
        # strongest filter last: by then every reader's code paths are compiled (JIT) in the one
        # warm application, so the 1 % point is not charged for warming up
        # 5 measured repetitions per reader at 100 % and 1 % (the headline ratios' intervals need
        # 5, sae.results.analysis.statistics.MIN_N), 2 at 50 % and 10 %; 1 warm-up each
        "tiny": profiles.tiny(sweep=Sweep(cartesian={"selectivity": [100, 50, 10, 1], "reader": names()},
                                          repetitions={"selectivity": {100: 6, 1: 6}})),
        "paper": profiles.paper(),
    },
)
