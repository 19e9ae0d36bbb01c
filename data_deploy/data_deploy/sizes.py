"""The object-size rules of data_deploy (sizes parse with :func:`metareserve.parse_size`)."""
from __future__ import annotations

from metareserve import format_size, parse_size
from metareserve.errors import UsageError

ALIGN = 64 << 10
MIN_OBJECT_SIZE = 4 << 20
MAX_OBJECT_SIZE = 256 << 20


def check_object_size(size: str | int, what: str = "object size") -> int:
    """An object size in bytes: a multiple of 64 KiB within 4–256 MiB; UsageError naming ``what``
    otherwise."""
    n = parse_size(size, what=what)
    if n % ALIGN:
        raise UsageError(f"{what} {n} bytes is not a multiple of 64KiB (CephFS layouts need it); "
                         f"use e.g. {max(ALIGN, n // ALIGN * ALIGN) >> 10}KiB")
    if not MIN_OBJECT_SIZE <= n <= MAX_OBJECT_SIZE:
        raise UsageError(f"{what} {format_size(n)} is outside 4MiB..256MiB; pick a size in that range")
    return n
