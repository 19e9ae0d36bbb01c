"""Stored formats of split objects: Parquet (one row group per file), the Arrow IPC file format
(one record batch per file) and CSV (a header line, then one line per row, as Spark's CSV reader
reads it), each with the codecs it can store its data with."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from metareserve.errors import UsageError

FORMATS = ("parquet", "ipc", "csv")
"""Formats a split can store its objects in."""

SUFFIXES = {"parquet": ".parquet", "ipc": ".arrow", "csv": ".csv"}
"""File name suffix of each format's objects."""

LABELS = {"parquet": "Parquet", "ipc": "Arrow IPC", "csv": "CSV"}
"""Each format's name in messages."""

CODECS_BY_FORMAT = {"parquet": ("none", "snappy", "zstd", "lz4", "gzip", "brotli"), "ipc": ("none", "zstd", "lz4"),
                    "csv": ("none",)}
"""Codecs each format can store its objects with (``none``: uncompressed; IPC compresses each buffer;
CSV is stored as text: a compressed file would have to be inflated whole before any scan)."""

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


MAX_PAGE_ROWS = 1 << 20
"""Most rows a Parquet data page may be asked to hold (``page_rows``)."""


def check_page_rows(page_rows: int | None, fmt: str = "parquet", what: str = "split: page rows") -> int | None:
    """``page_rows`` if it is None or a whole number of rows in 1..:data:`MAX_PAGE_ROWS` for a
    Parquet split; UsageError naming ``what`` otherwise."""
    if page_rows is None:
        return None
    if isinstance(page_rows, bool) or not isinstance(page_rows, int) or not 1 <= page_rows <= MAX_PAGE_ROWS:
        raise UsageError(f"{what} {page_rows!r} is not a whole number of rows in 1..{MAX_PAGE_ROWS}")
    if fmt != "parquet":
        raise UsageError(f"{what} {page_rows}: only Parquet objects have pages (format {fmt})")
    return page_rows


DICTIONARY_PAGE_BYTES = 1 << 20
"""The dictionary page's limit Parquet writers use (Arrow's and parquet-mr's default): a column
whose distinct values outgrow it falls back to plain pages after the dictionary's."""


def _paged(table: pa.Table, page_rows: int | None) -> dict:
    """ParquetWriter options for pages of at most ``page_rows`` rows (None: the writer's defaults,
    no page index): a page index (the offset index a reader finds one row's pages by, the column
    index Spark's reader skips pages with), and a dictionary only for the columns whose distinct
    values fit one dictionary page. A column that would outgrow it (a timestamp of the second,
    distinct on most rows) is stored plain throughout instead of as a full dictionary page and
    then plain pages: smaller, and a read of one of its pages does not read a dictionary page of a
    megabyte first."""
    if page_rows is None:
        return {}
    fits = [f.name for f, column in zip(table.schema, table.columns)
            if not pa.types.is_nested(f.type) and pc.unique(column).nbytes <= DICTIONARY_PAGE_BYTES]
    return {"max_rows_per_page": page_rows, "write_page_index": True, "use_dictionary": fits}


def encode(table: pa.Table, fmt: str, compression: str, page_rows: int | None = None) -> pa.Buffer:
    """``table`` as one object of ``fmt``: a Parquet file of one row group (pages of at most
    ``page_rows`` rows and a page index when it is given, :func:`_paged`), an IPC file of one
    record batch, or CSV text with a header line (NULL an empty field; NaN and infinities spelled
    as Spark's CSV reader reads them, ``NaN``, ``Inf`` and ``-Inf``; timestamps ISO 8601)."""
    sink = pa.BufferOutputStream()
    if fmt == "csv":
        pacsv.write_csv(_spark_floats(table), sink)
    elif fmt == "ipc":
        options = ipc.IpcWriteOptions(compression=None if compression == "none" else compression)
        with ipc.new_file(sink, table.schema, options=options) as w:
            w.write_batch(table.combine_chunks().to_batches()[0] if table.num_rows else
                          pa.RecordBatch.from_pylist([], schema=table.schema))
    else:
        with pq.ParquetWriter(sink, table.schema, compression=compression, **_paged(table, page_rows)) as w:
            w.write_table(table, row_group_size=max(1, table.num_rows))
    return sink.getvalue()


def _spark_floats(table: pa.Table) -> pa.Table:
    """``table`` with each floating-point column that holds NaN or an infinity as text spelling
    them ``NaN``, ``Inf``, ``-Inf`` (Arrow's CSV writer writes ``nan`` and ``inf``, which Spark's
    CSV reader takes for NULL)."""
    for i, field in enumerate(table.schema):
        column = table.column(i)
        if not pa.types.is_floating(field.type) or pc.all(pc.is_finite(column)).as_py() is not False:
            continue
        text = pc.if_else(pc.is_nan(column), "NaN",
                          pc.if_else(pc.is_inf(column), pc.if_else(pc.greater(column, 0), "Inf", "-Inf"),
                                     pc.cast(column, pa.string())))
        table = table.set_column(i, field.name, text)
    return table


def format_of(path) -> str:
    """The format of an object file, by its suffix (Parquet unless it is an IPC or CSV file's)."""
    return next((fmt for fmt, suffix in SUFFIXES.items() if str(path).endswith(suffix)), "parquet")


def rows_and_pieces(path) -> tuple[int, int]:
    """(rows, pieces) of an object file: a Parquet file's row groups, an IPC file's record batches,
    a CSV file's lines after the header (one piece)."""
    if format_of(path) == "csv":
        return pacsv.read_csv(path).num_rows, 1
    if format_of(path) == "ipc":
        with pa.memory_map(str(path)) as source:
            reader = ipc.open_file(source)
            rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
            return rows, reader.num_record_batches
    md = pq.ParquetFile(path).metadata
    return md.num_rows, md.num_row_groups
