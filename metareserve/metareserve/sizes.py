"""Byte sizes as users write them (``16MiB``, ``4G``, ``1.5 GB``, ``65536``) with one unit table,
:data:`UNITS`, for every sae package (documented in metareserve/README.md, "Sizes")."""
from __future__ import annotations

import re
from fractions import Fraction

from .errors import UsageError

UNITS = {"": 1, "b": 1,
         "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
         "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
         "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4}
EXAMPLES = "examples: 16MiB, 4GiB, 1.5GB, 65536"
MAX_SIZE = 1 << 50
"""The largest size any sae value may name (1 PiB): a larger one is a typo, refused where it
enters instead of failing on a host."""
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*([A-Za-z]*)\s*", re.ASCII)
_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
_EXACT = sorted(_BINARY + (("TB", 1000 ** 4), ("GB", 1000 ** 3), ("MB", 1000 ** 2), ("kB", 1000)),
                key=lambda unit: -unit[1])


def parse_size(value: int | str, *, what: str, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    """Bytes in ``value`` (an int or a string per the unit table), from ``minimum`` to ``maximum``
    (default :data:`MAX_SIZE`).

    Decimals are allowed when they give whole bytes (``1.5GiB``, not ``0.3B``). Anything else,
    including bools, raises a one-line UsageError naming ``what`` and the bad value.
    """
    n = _exact(value)
    if n is None:
        raise UsageError(f"{what}: {value!r} is not a size ({EXAMPLES})")
    if n.denominator != 1:
        raise UsageError(f"{what}: {value!r} is not a whole number of bytes ({EXAMPLES})")
    if n < minimum:
        raise UsageError(f"{what}: {value!r} is below the minimum of {format_size(minimum)} ({EXAMPLES})")
    if n > maximum:
        raise UsageError(f"{what}: {value!r} is above the maximum of {format_size(maximum)} ({EXAMPLES})")
    return int(n)


def _exact(value) -> Fraction | None:
    """The exact byte count ``value`` denotes (maybe fractional), None if it is no size."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    m = _SIZE.fullmatch(str(value))
    factor = UNITS.get(m.group(2).lower()) if m else None
    return Fraction(m.group(1)) * factor if factor else None


def format_size(n: int) -> str:
    """``16777216`` → ``16MiB``; ``76017512`` → ``72.5MiB``; ``512`` → ``512B`` (binary units)."""
    for unit, factor in _BINARY:
        if n >= factor:
            return f"{n // factor}{unit}" if n % factor == 0 else f"{n / factor:.1f}{unit}"
    return f"{n}B"


class Size(int):
    """A number of bytes; ``str`` is its exact form in the largest unit that divides it
    (``4GiB``, ``1536MiB``, ``2GB``, ``1000001B``)."""

    @classmethod
    def parse(cls, value: int | str, *, what: str, minimum: int = 1, maximum: int = MAX_SIZE) -> "Size":
        """:func:`parse_size` as a Size."""
        return cls(parse_size(value, what=what, minimum=minimum, maximum=maximum))

    def __str__(self) -> str:
        unit, factor = next(((u, f) for u, f in _EXACT if self and self % f == 0), ("B", 1))
        return f"{self // factor}{unit}"
