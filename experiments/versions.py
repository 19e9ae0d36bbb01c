"""Library versions (arrowbench's question for sae: how much of a difference from the thesis is
the software's?): the main query with each reader on three stacks of software that differ from a
baseline in one library each, so a difference has one cause:

* Spark 4.3.0 (Scala 2.13, Arrow Java 19) with the object class on Arrow C++ 26.0.1: the default;
* Spark 3.5.3 (Scala 2.12, Arrow Java 12), the line the thesis's Spark 3 led to, same class;
* Spark 4.3.0 with the object class built against Arrow C++ 25.0.1 (``ceph.class_arrow``).

All on one stack: each pyspark is installed from PyPI beside the other, once, and the start
stage switches the Spark daemons and the connector's build (a jar per Spark version, compiled
against that Spark's own jars); each class build lives beside the other, and the start stage
installs the point's into the OSDs (restarting them: a loaded class never reloads).

Replies are uncompressed (``compression="none"``) everywhere: Spark 3.5 ships no Arrow
compression module, so its tasks could not read LZ4 or ZSTD replies, and a version comparison
must not change two things at once.
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning import readers
from sae.planning.readers import OFFLOAD, VANILLA

SOFTWARE = {"spark.version": ["4.3.0", "3.5.3", "4.3.0"], "ceph.class_arrow": ["26.0.1", "26.0.1", "25.0.1"]}
"""The three stacks of software, taken in step: the baseline, then one library changed each."""

experiment = Experiment(
    name="versions",
    figures=("versions",),
    description="Query time, compute-side bytes and CPU per reader with Spark 4.3.0 or 3.5.3 and the object "
                "class on Arrow C++ 26.0.1 or 25.0.1 (replies uncompressed)",
    workload=Workload(compression="none"),
    sweep=Sweep(cartesian={"selectivity": [100, 1], "reader": readers.names()}, zipped=SOFTWARE),
    warmup=1,
    profiles={
        # 6 points, one dataset, three Spark applications: offload against vanilla at 1 %
        "tiny": profiles.tiny(repetitions=2, sweep=Sweep(cartesian={"selectivity": [1],
                                                                    "reader": readers.names(OFFLOAD, VANILLA)},
                                                         zipped=SOFTWARE)),
        "paper": profiles.paper(),
    },
)
