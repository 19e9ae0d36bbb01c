"""Byte sizes as users write them (``16MiB``, ``4 MiB``, ``65536``) and the object-size rules."""
from __future__ import annotations

import re

from metareserve.errors import UsageError

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}
ALIGN = 64 << 10
MIN_OBJECT_SIZE = 4 << 20
MAX_OBJECT_SIZE = 256 << 20


def parse_size(text: str | int, *, what: str = "size") -> int:
    """Parse ``16MiB``/``512KiB``/``1GiB``/``4194304`` into bytes; UsageError otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"{what} {text!r} is not a size; write e.g. 16MiB, 512KiB, 1GiB or a byte count")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def check_object_size(size: str | int) -> int:
    """An object size in bytes: a multiple of 64 KiB within 4–256 MiB; UsageError otherwise."""
    n = parse_size(size, what="object size")
    if n % ALIGN:
        raise UsageError(f"object size {n} bytes is not a multiple of 64KiB (CephFS layouts need it); "
                         f"use e.g. {max(ALIGN, n // ALIGN * ALIGN) >> 10}KiB")
    if not MIN_OBJECT_SIZE <= n <= MAX_OBJECT_SIZE:
        raise UsageError(f"object size {human(n)} is outside 4MiB..256MiB; pick a size in that range")
    return n


def human(n: int) -> str:
    """``16777216`` → ``16MiB``; ``76017512`` → ``72.5MiB`` (binary units)."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n // factor}{unit}" if n % factor == 0 else f"{n / factor:.1f}{unit}"
    return f"{n}B"
