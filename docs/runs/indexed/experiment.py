"""The Indexed DataFrame (Uta et al., IPDPS 2022) beside offloading: key lookups, indexed joins,
appends and a lost executor, for five readers: indexed (sae's indexed cache of the vanilla read:
rows hash-partitioned on the pickup time, a hash index per partition), cache (Spark's own
.cache() of the same read), vanilla (Spark's Parquet reader over the CephFS mount), offload, and
offload-index (offload whose OSDs first probe an index of the pickup time beside each object,
built when the dataset is deployed: an object without the query's keys is answered unread).
The in-memory readers build their copy once per application, before their first query; its time
and memory are recorded (index_build_s, cached_bytes, index_bytes), not counted in any query's.

* lookups of 1, 100 and 10,000 pickup times taken from the data (the paper's fig. 8: lookups
  5-20x faster than Spark's);
* joins with a probe table of 0.01 % to 10 % of the pickup times (fig. 7: 3-8x faster at every
  probe size);
* series of joins (probe 1 %) with an append before every 5th (figs. 9 and 10: reads about 3x
  slower while appending up to 100 K rows at a time, 6x above; 200 M rows appended in batches
  of 1 M in under 7 s);
* a series of joins with an executor killed mid-series (fig. 12: one slow query, over 13 s,
  then none);
and the index's memory beside the rows' (fig. 11: under 2 % of the data).

The offload readers push what the object class can run, a comparison of the pickup time among
it (protocol 6). A lookup runs with its keys as values (``pickup IN (...)``, built before the
clock starts), so offload-index's OSDs answer an object without those keys unread; the join gives
the scans no key (Spark's dynamic pruning makes no runtime filter of the join with the cached
``probe``), so both offload readers read every object there (docs/experiments.md, "Indexed").
The series run the readers that answer from memory and vanilla;
the lost executor, the two that hold something to lose.

The objects are written for lookups (``data.page_rows``): data pages of 2,000 rows, a page index,
and dictionaries only where a column's values fit one dictionary page, so that offload-index reads
of an object holding a key only the pages with its rows (docs/protocol.md, "Index"), and Spark's
own Parquet reader (vanilla) may skip pages by the page index's statistics; every reader reads
these same objects.

Tiny profile: 1 M trips stored once (the tiny dataset unlinked, as bandwidth.py's), so both
copies fit the two 1-GiB executors; appends of 1 K to 100 K rows.
"""
from sae import Experiment, Sweep, profiles
from sae.planning.readers import CACHE, INDEXED, OFFLOAD, OFFLOAD_INDEX, VANILLA, names

READERS = names(INDEXED, CACHE, VANILLA, OFFLOAD, OFFLOAD_INDEX)
SERIES = names(INDEXED, CACHE, VANILLA)
LOSING = names(INDEXED, CACHE)
LOST_AT = 6   # the repetition an executor is lost before (of 12; the first a warm-up)
PAGED = {"page_rows": 2000}   # pages a key's rows can be read by alone


def sweep(appends: list[int], series: int) -> Sweep:
    """Lookups and joins for every reader, a series of ``series`` joins per append size, and the
    series that loses an executor, last (its loss would fall on later points' caches)."""
    def kept(p: dict) -> bool:
        if p["query"] == "key-lookup":   # the probe, unused, at its default
            return p["probe"] == 1 and not p["append_rows"] and p["lose_executor"] is None
        if p["keys"] != 1:                # the keys, unused, at their default
            return False
        if p["lose_executor"] is not None:
            return p["probe"] == 1 and not p["append_rows"] and p["reader"] in LOSING
        return not p["append_rows"] or p["probe"] == 1 and p["reader"] in SERIES
    return Sweep(cartesian={"lose_executor": [None, LOST_AT], "query": ["key-lookup", "key-join"],
                            "append_rows": [0, *appends], "keys": [1, 100, 10_000], "probe": [0.01, 0.1, 1, 10],
                            "reader": READERS},
                 where=kept,
                 repetitions={"append_rows": {a: series for a in appends}, "lose_executor": {LOST_AT: 12}})


experiment = Experiment(
    name="indexed",
    figures=("indexed-lookups", "indexed-joins", "indexed-append-reads", "indexed-appends", "indexed-executor-loss"),
    description="Key lookups, indexed joins, appends and a lost executor: indexed cache, Spark's cache, vanilla, "
                "offload, offload with the OSD index (the Indexed DataFrame, IPDPS 2022, figs. 7-12)",
    warmup=1,
    profiles={
        # 11 queries per series: appends before the 5th and the 10th (warm-up counted)
        "tiny": profiles.tiny(data={"link_multiplier": 1, **PAGED}, sweep=sweep([1_000, 10_000, 100_000], 11)),
        "paper": profiles.paper(data=PAGED, sweep=sweep([1_000, 10_000, 100_000, 1_000_000], 21)),
    },
)
