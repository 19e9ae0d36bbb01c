"""Stored format (the Arrow-Spark paper's E2/E3 compared Parquet and CSV; SkyhookDM scanned
Parquet and Arrow IPC objects): query time, bytes to the compute side and the object class's
decoding when the objects are Parquet files (one row group each), Arrow IPC files (one record
batch each) or CSV files (a header line, then a line per row), at the same object size, for each
reader that can read the format.

The class scans each with Arrow's own readers: a Parquet object is decoded (its dictionary and
run-length encoded pages into Arrow arrays); an IPC file is Arrow's memory layout as stored, so
the OSD reads only the columns the query needs and decodes next to nothing; a CSV object is read
whole and parsed (every line split, the needed columns converted), with the columns and types
the request carries (protocol 4: CSV stores no schema, and type inference would differ from
Spark's). In exchange the formats hold different numbers of rows per object: an uncompressed
IPC object about 4.4x fewer rows of the taxi data than a Parquet object of the same size
(Parquet's encodings), a CSV object fewer still (text), so the same rows take more objects and
more stored bytes.

Readers: offload and no-offload read every format through the class. Vanilla reads Parquet with
Spark's Parquet reader and CSV with Spark's CSV reader (header line, the data's schema given,
so both sides parse the same types); Spark has no reader of Arrow IPC files. ``auto`` (not in
this sweep) reads every format too: it scans the objects it reads whole with the class's own scan.
Offload asks for decoded replies (``whole_objects=False``), so at 100 % every format's replies
are Arrow IPC streams and what differs is the OSD's decoding, not whether the object travels as
stored.
"""
from sae import Experiment, Sweep, Workload, profiles
from sae.planning import readers


def readable(point: dict) -> bool:
    """The pairs whose reader can read the point's format (vanilla: not Arrow IPC)."""
    return readers.get(point["reader"]).why_not(point["format"]) is None


experiment = Experiment(
    name="formats",
    figures=("formats",),
    description="Query time, compute-side bytes and the OSDs' decoding vs the stored format (Parquet, "
                "Arrow IPC, CSV), per reader, at 100 % and 1 % (Arrow-Spark paper E2/E3, SkyhookDM's formats)",
    workload=Workload(whole_objects=False),
    sweep=Sweep(cartesian={"format": ["parquet", "ipc", "csv"], "selectivity": [100, 1], "reader": readers.names()},
                where=readable),
    warmup=1,
    profiles={
        "tiny": profiles.tiny(repetitions=2),   # 16 points, 3 datasets: one measured repetition each
        "paper": profiles.paper(),
    },
)
