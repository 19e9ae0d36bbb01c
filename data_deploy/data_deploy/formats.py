"""Stored formats of split objects: Parquet (one row group per file) and the Arrow IPC file
format (one record batch per file), each with the codecs it can store its data with."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from metareserve.errors import UsageError

FORMATS = ("parquet", "ipc")
"""Formats a split can store its objects in."""

SUFFIXES = {"parquet": ".parquet", "ipc": ".arrow"}
"""File name suffix of each format's objects."""

LABELS = {"parquet": "Parquet", "ipc": "Arrow IPC"}
"""Each format's name in messages."""

CODECS_BY_FORMAT = {"parquet": ("none", "snappy", "zstd", "lz4", "gzip", "brotli"), "ipc": ("none", "zstd", "lz4")}
"""Codecs each format can store its objects with (``none``: uncompressed; IPC compresses each buffer)."""

CODECS = tuple(dict.fromkeys(c for codecs in CODECS_BY_FORMAT.values() for c in codecs))
"""Every codec some format can store with."""

PATTERNS = tuple(f"*{s}" for s in SUFFIXES.values())
"""Glob patterns of every format's objects (what a deploy takes from a split directory)."""


def check_format(fmt: str, what: str = "split: format") -> str:
    """``fmt`` if it is one of :data:`FORMATS`; UsageError naming ``what`` otherwise."""
    if fmt not in FORMATS:
        raise UsageError(f"{what} {fmt!r} is not one of {', '.join(FORMATS)}")
    return fmt


def check_codec(compression: str, what: str = "split: compression", fmt: str = "parquet") -> str:
    """``compression`` if ``fmt`` can store with it; UsageError naming ``what`` otherwise."""
    if compression not in CODECS_BY_FORMAT[fmt]:
        raise UsageError(f"{what} {compression!r} is not one of {', '.join(CODECS_BY_FORMAT[fmt])}"
                         + ("" if fmt == "parquet" else f" (the codecs of format {fmt})"))
    return compression


def encode(table: pa.Table, fmt: str, compression: str) -> pa.Buffer:
    """``table`` as one object of ``fmt``: a Parquet file of one row group, or an IPC file of one
    record batch."""
    sink = pa.BufferOutputStream()
    if fmt == "ipc":
        options = ipc.IpcWriteOptions(compression=None if compression == "none" else compression)
        with ipc.new_file(sink, table.schema, options=options) as w:
            w.write_batch(table.combine_chunks().to_batches()[0] if table.num_rows else
                          pa.RecordBatch.from_pylist([], schema=table.schema))
    else:
        with pq.ParquetWriter(sink, table.schema, compression=compression) as w:
            w.write_table(table, row_group_size=max(1, table.num_rows))
    return sink.getvalue()


def format_of(path) -> str:
    """The format of an object file, by its suffix (Parquet unless it is an IPC file's)."""
    return "ipc" if str(path).endswith(SUFFIXES["ipc"]) else "parquet"


def rows_and_pieces(path) -> tuple[int, int]:
    """(rows, pieces) of an object file: a Parquet file's row groups, an IPC file's record batches."""
    if format_of(path) == "ipc":
        with pa.memory_map(str(path)) as source:
            reader = ipc.open_file(source)
            rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
            return rows, reader.num_record_batches
    md = pq.ParquetFile(path).metadata
    return md.num_rows, md.num_row_groups
