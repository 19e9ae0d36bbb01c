"""Library versions (arrowbench's question for sae: how much of a difference from the thesis is
the software's?): the main query at 100 % and 1 % with each reader on two Spark releases,
Spark 4.3.0 (Scala 2.13, Arrow Java 19, the default) and Spark 3.5.3 (Scala 2.12, Arrow Java 12,
the line the thesis's Spark 3 led to), on one stack: each pyspark is installed from PyPI beside
the other, once, and the start stage switches the daemons and the connector's build (a jar per
Spark version, compiled against that Spark's own jars) between them.

Replies are uncompressed for both (``compression="none"``): Spark 3.5 ships no Arrow
compression module, so its tasks could not read LZ4 or ZSTD replies, and a version comparison
must not change two things at once. The object class (Arrow C++ of the storage nodes' pyarrow)
is the same for both: what moves is Spark's own reader, planner and Arrow Java.
"""
from sae import Experiment, SparkSpec, Sweep, Workload, profiles
from sae.planning import readers
from sae.planning.readers import OFFLOAD, VANILLA

experiment = Experiment(
    name="versions",
    figures=("versions",),
    description="Query time, compute-side bytes and CPU per reader on Spark 4.3.0 and Spark 3.5.3, "
                "at 100 % and 1 % (replies uncompressed on both)",
    spark=SparkSpec(version="4.3.0"),
    workload=Workload(compression="none"),
    sweep=Sweep(cartesian={"spark.version": ["4.3.0", "3.5.3"], "selectivity": [100, 1],
                           "reader": readers.names()}),
    warmup=1,
    profiles={
        # 8 points, one dataset, two Spark applications: offload against vanilla (no-offload's
        # uncompressed replies, ~550 MB a query, add time and no version question)
        "tiny": profiles.tiny(repetitions=2, sweep=Sweep(cartesian={
            "spark.version": ["4.3.0", "3.5.3"], "selectivity": [100, 1], "reader": readers.names(OFFLOAD, VANILLA)})),
        "paper": profiles.paper(),
    },
)
