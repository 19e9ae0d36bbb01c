"""The bytes a dataset takes once stored, for checking a machine before anything is generated."""
from __future__ import annotations

STORED_BYTES_PER_ROW = 32
"""Bytes per taxi row in uncompressed single-row-group Parquet objects, with room (measured: the
tiny profile's 1 M rows in 3 objects of 28.0 MB in all); compressed codecs store less."""


def stored_bytes(rows: int, copy_multiplier: int = 1) -> int:
    """Bytes ``rows`` generated rows take stored, ``copy_multiplier`` copies of them (hard links
    take none)."""
    return rows * copy_multiplier * STORED_BYTES_PER_ROW
