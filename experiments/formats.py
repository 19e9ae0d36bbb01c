"""Stored format (the Arrow-Spark paper's E2/E3 compared formats; SkyhookDM scanned Parquet and
Arrow IPC objects): query time, bytes to the compute side and the object class's decoding when
the objects are Parquet files (one row group each) or Arrow IPC files (one record batch each), at
the same object size, for each reader that can read the format.

The class scans both with Arrow's own readers: a Parquet object is decoded (its dictionary and
run-length encoded pages into Arrow arrays); an IPC file is Arrow's memory layout as stored, so
the OSD reads only the columns the query needs and decodes next to nothing. In exchange an
uncompressed IPC object holds about 4.4x fewer rows of the taxi data than a Parquet object of the
same size (Parquet's encodings), so the same rows take more objects and more stored bytes.

Readers: offload and no-offload read both formats through the class. Vanilla reads Parquet only:
Spark has no reader of Arrow IPC files (``auto``, which reads whole objects with Spark's Parquet
reader, cannot either; sae refuses both at plan time). Offload asks for decoded replies
(``whole_objects=False``), so at 100 % both formats' replies are Arrow IPC streams and what
differs is the OSD's decoding, not whether the object travels as stored.

CSV objects are not offered: Arrow's CSV type inference differs from Spark's (integer widths,
timestamp units), so the class would need the table's schema with every request, a protocol
change not made yet.
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning import readers


def readable(point: dict) -> bool:
    """The pairs whose reader can read the point's format (vanilla: Parquet only)."""
    return readers.get(point["reader"]).why_not(point["format"]) is None


experiment = Experiment(
    name="formats",
    figures=("formats",),
    description="Query time, compute-side bytes and the OSDs' decoding vs the stored format (Parquet, "
                "Arrow IPC), per reader, at 100 % and 1 % (Arrow-Spark paper E2/E3, SkyhookDM's formats)",
    workload=Workload(whole_objects=False),
    sweep=Sweep(cartesian={"format": ["parquet", "ipc"], "selectivity": [100, 1], "reader": readers.names()},
                where=readable),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(repetitions=2),   # 10 points, 2 datasets: one measured repetition each
        "paper": profiles.paper(),
    },
)
