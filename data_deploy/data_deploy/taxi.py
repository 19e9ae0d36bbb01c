"""NYC yellow-taxi trips: the TLC schema, a deterministic streaming generator, and ingest of
real TLC Parquet/CSV files into the same schema.

Generated rows are a pure function of ``(seed, row index)``: they are produced in fixed blocks of
:data:`BLOCK_ROWS` rows, block ``k`` from ``numpy.random.default_rng([seed, k])``, so ``generate(n)``
is a prefix of ``generate(m)`` for ``n < m`` whatever ``rows_per_file`` is, and memory stays
bounded by one block.
"""
from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from metareserve.errors import UsageError

from .files import expand, output_dir

SCHEMA = pa.schema([
    ("VendorID", pa.int32()),
    ("tpep_pickup_datetime", pa.timestamp("us")),
    ("tpep_dropoff_datetime", pa.timestamp("us")),
    ("passenger_count", pa.int64()),
    ("trip_distance", pa.float64()),
    ("RatecodeID", pa.int64()),
    ("store_and_fwd_flag", pa.string()),
    ("PULocationID", pa.int32()),
    ("DOLocationID", pa.int32()),
    ("payment_type", pa.int64()),
    ("fare_amount", pa.float64()),
    ("extra", pa.float64()),
    ("mta_tax", pa.float64()),
    ("tip_amount", pa.float64()),
    ("tolls_amount", pa.float64()),
    ("improvement_surcharge", pa.float64()),
    ("total_amount", pa.float64()),
    ("congestion_surcharge", pa.float64()),
    ("Airport_fee", pa.float64()),
])
#: The parts whose sum is ``total_amount``.
AMOUNT_PARTS = ("fare_amount", "extra", "mta_tax", "tip_amount", "tolls_amount",
                "improvement_surcharge", "congestion_surcharge", "Airport_fee")
BLOCK_ROWS = 1 << 16
EPOCH = np.datetime64("2024-01-01T00:00:00", "us")
JFK, LGA, EWR = 132, 138, 1
_HOUR_WEIGHTS = np.array([2.6, 1.8, 1.2, 0.8, 0.6, 0.8, 1.8, 3.2, 4.2, 4.4, 4.6, 4.9,
                          5.2, 5.3, 5.6, 5.9, 6.1, 6.6, 7.0, 6.6, 5.8, 5.5, 5.0, 3.9])
_ZONES = np.random.default_rng(20240101).permutation(np.arange(1, 266))
_ZONE_WEIGHTS = 1.0 / np.arange(1, 266) ** 1.15


def _cents(x: np.ndarray) -> np.ndarray:
    return np.round(x * 100).astype(np.int64)


def generate_block(seed: int, block: int, rows: int = BLOCK_ROWS) -> pa.RecordBatch:
    """Block ``block`` of the trips for ``seed`` (its first ``rows`` rows)."""
    rng = np.random.default_rng([seed, block])
    n = BLOCK_ROWS
    rate = rng.choice([1, 2, 3, 4, 5, 99], n, p=[0.925, 0.04, 0.005, 0.004, 0.016, 0.01])
    airport = rate == 2
    dist = np.clip(rng.lognormal(0.55, 0.85, n), 0.01, 80.0)
    dist = np.where(airport, np.clip(rng.normal(17.5, 2.5, n), 8.0, 30.0), dist)
    dist = np.where(rate == 3, np.clip(rng.normal(16.0, 2.0, n), 9.0, 30.0), dist)
    dist = np.round(dist, 2)
    day = rng.integers(0, 31, n)
    hour = rng.choice(24, n, p=_HOUR_WEIGHTS / _HOUR_WEIGHTS.sum())
    pickup = EPOCH + (((day * 24 + hour) * 3600 + rng.integers(0, 3600, n)) * 1_000_000).astype("timedelta64[us]")
    speed = np.clip(rng.lognormal(np.log(11.0), 0.35, n), 3.0, 45.0)
    minutes = dist / speed * 60 + rng.exponential(2.0, n)
    dropoff = pickup + ((minutes * 60).astype(np.int64) * 1_000_000).astype("timedelta64[us]")
    weekday = (day + 0) % 7 < 5  # 2024-01-01 is a Monday
    fare = np.where(airport, 70.0, 3.0 + 3.5 * dist + 0.35 * minutes)
    fare = np.where(rate == 3, fare + 20.0, fare)
    fare = np.where(rate == 5, np.round(rng.uniform(20, 120, n)), fare)
    extra = np.where((hour >= 16) & (hour < 20) & weekday, 2.5, np.where((hour >= 20) | (hour < 6), 1.0, 0.0))
    extra = np.where(airport, 0.0, extra)
    payment = rng.choice([1, 2, 3, 4], n, p=[0.78, 0.19, 0.015, 0.015])
    pu = rng.choice(_ZONES, n, p=_ZONE_WEIGHTS / _ZONE_WEIGHTS.sum())
    do = rng.choice(_ZONES, n, p=_ZONE_WEIGHTS / _ZONE_WEIGHTS.sum())
    pu = np.where(airport & (rng.random(n) < 0.5), JFK, pu)
    do = np.where(airport & (pu != JFK), JFK, do)
    do = np.where(rate == 3, EWR, do)
    pu = np.where((rate == 1) & (rng.random(n) < 0.02), LGA, pu)
    tolls = np.where(airport | (rate == 3), np.where(rng.random(n) < 0.6, 6.94, 0.0),
                     np.where(rng.random(n) < 0.04, 6.94, 0.0))
    congestion = np.where(rng.random(n) < 0.9, 2.5, 0.0)
    airport_fee = np.where(np.isin(pu, [JFK, LGA]), 1.75, 0.0)
    tip_pct = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.10, 0.30, n))
    parts = {"fare_amount": _cents(fare), "extra": _cents(extra), "mta_tax": np.full(n, 50),
             "tolls_amount": _cents(tolls), "improvement_surcharge": np.full(n, 100),
             "congestion_surcharge": _cents(congestion), "Airport_fee": _cents(airport_fee)}
    pre_tip = sum(parts.values())
    parts["tip_amount"] = np.where(payment == 1, np.round(pre_tip * tip_pct), 0).astype(np.int64)
    total = sum(parts.values())
    flag = np.where(rng.random(n) < 0.005, "Y", "N")
    passengers = rng.choice([0, 1, 2, 3, 4, 5, 6], n, p=[0.01, 0.74, 0.14, 0.04, 0.02, 0.03, 0.02])
    vendor = rng.choice([1, 2], n, p=[0.28, 0.72])
    cols = {
        "VendorID": vendor, "tpep_pickup_datetime": pickup, "tpep_dropoff_datetime": dropoff,
        "passenger_count": passengers, "trip_distance": dist, "RatecodeID": rate,
        "store_and_fwd_flag": flag, "PULocationID": pu, "DOLocationID": do, "payment_type": payment,
        **{k: v / 100.0 for k, v in parts.items()}, "total_amount": total / 100.0,
    }
    arrays = [pa.array(cols[f.name][:rows]).cast(f.type) for f in SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def iter_batches(rows: int, *, seed: int = 0) -> Iterator[pa.RecordBatch]:
    """Stream ``rows`` generated trips as record batches of at most :data:`BLOCK_ROWS` rows."""
    for block in range((rows + BLOCK_ROWS - 1) // BLOCK_ROWS):
        yield generate_block(seed, block, min(BLOCK_ROWS, rows - block * BLOCK_ROWS))


MAX_ROWS = 10**11
"""The most trips one generate writes (the paper's dataset is ~10**9)."""
MAX_SEED = 2**32 - 1
GENERATORS = ("taxi",)
"""The datasets :func:`generate` makes."""
INGEST_PATTERNS = ("*.parquet", "*.csv", "*.csv.gz")
"""The files :func:`ingest` reads (given, or found in a given directory)."""


def ingestible(path) -> bool:
    """Whether ``path`` is a file :data:`INGEST_PATTERNS` names, or a directory holding one (as
    :func:`ingest` finds them): what a plan can check before anything runs."""
    p = Path(path)
    if p.is_dir():
        return any(next(p.glob(pattern), None) for pattern in INGEST_PATTERNS)
    return p.is_file() and any(fnmatch(p.name.lower(), pattern) for pattern in INGEST_PATTERNS)


def generate(rows: int, *, seed: int = 0, out, rows_per_file: int = 1_000_000,
             compression: str = "zstd") -> list[Path]:
    """Write ``rows`` synthetic yellow-taxi trips as ``out/taxi-NNNNN.parquet``.

    Args:
        rows: number of trips (any size; memory stays bounded by one block).
        seed: same seed, same rows.
        out: output directory (created).
        rows_per_file: rows per output file.
        compression: Parquet codec of these intermediate files (``split`` re-encodes).
    Returns:
        The written files, in row order.
    """
    for what, value, low, top in (("rows", rows, 1, MAX_ROWS), ("rows_per_file", rows_per_file, 1, MAX_ROWS),
                                  ("seed", seed, 0, MAX_SEED)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
            raise UsageError(f"generate: {what} must be a whole number from {low} to {top}, not {value!r}")
    return _write_stream(iter_batches(rows, seed=seed), Path(out), "taxi", rows_per_file, compression, "generate")


def _write_stream(batches: Iterable[pa.RecordBatch], out: Path, prefix: str, rows_per_file: int,
                  compression: str, what: str) -> list[Path]:
    with output_dir(out, what) as files:
        writer, in_file = None, 0
        try:
            for batch in batches:
                while batch.num_rows:
                    if writer is None:
                        files.append(out / f"{prefix}-{len(files):05d}.parquet")
                        writer, in_file = pq.ParquetWriter(files[-1], SCHEMA, compression=compression), 0
                    take = min(batch.num_rows, rows_per_file - in_file)
                    writer.write_batch(batch.slice(0, take))
                    batch, in_file = batch.slice(take), in_file + take
                    if in_file == rows_per_file:
                        writer.close()
                        writer = None
        finally:
            if writer is not None:
                writer.close()
    return files


def conform(table: pa.Table | pa.RecordBatch, source: str = "<table>") -> pa.Table:
    """Cast a TLC-like table to :data:`SCHEMA`: column names matched case-insensitively, columns
    missing in older TLC years (congestion_surcharge, Airport_fee) filled with nulls, extra columns
    dropped. UsageError naming ``source`` if a required column is missing or cannot be cast."""
    by_lower = {name.lower(): name for name in table.schema.names}
    arrays = []
    for field in SCHEMA:
        name = by_lower.get(field.name.lower())
        if name is None:
            if field.name in ("congestion_surcharge", "Airport_fee"):
                arrays.append(pa.nulls(table.num_rows, field.type))
                continue
            raise UsageError(f"{source}: no column {field.name!r}; is this a TLC yellow-taxi trip file?")
        col = table.column(name)
        try:
            if pa.types.is_floating(col.type) and pa.types.is_integer(field.type):
                col = pc.cast(pc.round(col), field.type)
            arrays.append(pc.cast(col, field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise UsageError(f"{source}: column {name!r} ({col.type}) does not convert to {field.type}: "
                             f"{str(e).splitlines()[0]}") from None
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _read_batches(path: Path) -> Iterator[pa.RecordBatch]:
    try:
        if path.suffix.lower() in (".csv", ".gz") or path.name.lower().endswith(".csv.gz"):
            ts = ["tpep_pickup_datetime", "tpep_dropoff_datetime"]
            opts = pacsv.ConvertOptions(column_types={c: pa.timestamp("us") for c in ts},
                                        timestamp_parsers=["%m/%d/%Y %I:%M:%S %p", pacsv.ISO8601])
            reader = pacsv.open_csv(path, convert_options=opts)
            yield from reader
        else:
            yield from pq.ParquetFile(path).iter_batches(batch_size=BLOCK_ROWS)
    except (pa.ArrowInvalid, OSError) as e:
        raise UsageError(f"{path}: cannot read as TLC Parquet/CSV: {str(e).splitlines()[0]}") from None


def ingest(paths, out, *, rows_per_file: int = 1_000_000, compression: str = "zstd") -> list[Path]:
    """Convert real TLC yellow-taxi Parquet/CSV files (or directories of them) into the generator's
    schema under ``out`` (streaming). Returns the written files; ``split`` takes them next."""
    files = expand(paths, INGEST_PATTERNS)
    flat = (b for f in files for t in _conformed(f) for b in t.to_batches())
    return _write_stream(flat, Path(out), "tlc", rows_per_file, compression, "ingest")


def _conformed(path: Path) -> Iterator[pa.Table]:
    """The file's batches in :data:`SCHEMA` (:func:`conform`); UsageError naming it if it holds no rows."""
    rows = 0
    for batch in _read_batches(path):
        rows += batch.num_rows
        yield conform(batch, str(path))
    if not rows:
        raise UsageError(f"{path}: no rows to ingest; give TLC yellow-taxi trip files that hold trips")
