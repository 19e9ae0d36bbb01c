"""Library versions (arrowbench's question for sae: how much of a difference from the thesis is
the software's?): the main query with each reader on three stacks of software that differ from a
baseline in one release each (Spark's or Arrow's), so a difference has one cause:

* Spark 4.3.0 (Scala 2.13, Arrow Java 19) with the object class on Arrow C++ 26.0.1: the default;
* Spark 3.5.3 (Scala 2.12, Arrow Java 12), the line the thesis's Spark 3 led to, same class;
* Spark 4.3.0 on Arrow 25.0.1: the object class built against Arrow C++ 25.0.1
  (``ceph.class_arrow``) and the Spark nodes' Python on pyarrow 25.0.1 (``spark.pyarrow``), one
  Arrow release wherever sae runs Arrow on the nodes (Spark's own Arrow Java comes with Spark).

All on one stack: each (pyspark, pyarrow) pair is installed from PyPI beside the others, once, and
the start stage switches the Spark daemons and, for a new Spark version, the connector's build (a
jar per Spark version, compiled against that Spark's own jars); each class build lives beside the
other, and the start stage installs the point's into the OSDs (restarting them: a loaded class
never reloads). The nodes' pyarrow is on no query's path here (the scan reads through Arrow Java
and the class); versions.lock records it per stack, and a job's pandas UDFs or ``toPandas`` would
run on it.

Replies are uncompressed (``compression="none"``) everywhere: Spark 3.5 ships no Arrow
compression module, so its tasks could not read LZ4 or ZSTD replies, and a version comparison
must not change two things at once.
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning import readers
from sae.planning.readers import OFFLOAD, VANILLA

SOFTWARE = {"spark.version": ["4.3.0", "3.5.3", "4.3.0"], "spark.pyarrow": ["26.0.1", "26.0.1", "25.0.1"],
            "ceph.class_arrow": ["26.0.1", "26.0.1", "25.0.1"]}
"""The three stacks of software, taken in step: the baseline, then Spark's or Arrow's release changed."""

experiment = Experiment(
    name="versions",
    figures=("versions",),
    description="Query time, compute-side bytes and CPU per reader with Spark 4.3.0 or 3.5.3 and Arrow "
                "26.0.1 or 25.0.1 (the object class's Arrow C++, the Spark nodes' pyarrow; replies uncompressed)",
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
