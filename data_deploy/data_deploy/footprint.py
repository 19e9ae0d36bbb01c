"""The bytes a dataset takes once stored, for checking a machine before anything is generated."""
from __future__ import annotations

STORED_BYTES_PER_ROW = 120
"""Bytes per taxi row in uncompressed single-row-group Parquet objects (measured: 4 M rows read
as 120.3 MB of objects); compressed codecs store less, so this bounds them."""


def stored_bytes(rows: int, copy_multiplier: int = 1) -> int:
    """Bytes ``rows`` generated rows take stored, ``copy_multiplier`` copies of them (hard links
    take none)."""
    return rows * copy_multiplier * STORED_BYTES_PER_ROW
