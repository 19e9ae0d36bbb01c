"""Predicate thresholds that select an exact fraction of the rows."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from metareserve.errors import OperationalError, UsageError

from .files import expand

TOLERANCE = 0.001


def _load(source, column: str) -> tuple[np.ndarray, int]:
    """Sorted non-null values of ``column`` and the total row count of ``source``."""
    if not isinstance(source, (pa.Table, pa.RecordBatch)):
        paths = expand(source)
        try:
            source = pads.dataset([str(p) for p in paths], format="parquet")
        except (pa.ArrowInvalid, OSError) as e:
            raise UsageError(f"selectivity: cannot read {', '.join(map(str, paths))} as Parquet: "
                             f"{str(e).splitlines()[0]}") from None
    if column not in source.schema.names:
        raise UsageError(f"selectivity: unknown column {column!r} (columns: {', '.join(source.schema.names)})")
    typ = source.schema.field(column).type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        raise UsageError(f"selectivity: column {column!r} is {typ}, not numeric")
    if isinstance(source, pads.Dataset):
        data, total = source.to_table(columns=[column]).column(column), source.count_rows()
    else:
        data, total = source.column(column), source.num_rows
    return np.sort(data.drop_null().to_numpy()), total


def selectivity_threshold(source, fraction: float, *, column: str = "total_amount") -> float:
    """Threshold ``t`` such that the predicate ``column < t`` selects ``fraction`` of all rows
    (nulls never match), within 0.1 % of the rows. Reads only ``column`` (8 bytes per row).

    Args:
        source: a Parquet file or directory, a list of them, or a pyarrow Table.
        fraction: wanted selectivity in [0, 1] (0.01 = 1 %).
        column: a numeric column.
    Returns:
        The threshold (for ``fraction`` 1.0 the next float above the maximum).
    Raises:
        UsageError for an unknown or non-numeric column or a fraction outside [0, 1];
        OperationalError if equal values make the fraction unreachable within 0.1 %.
    """
    if not 0.0 <= fraction <= 1.0:
        raise UsageError(f"selectivity: fraction {fraction} is outside [0, 1] (1 % is 0.01)")
    values, total = _load(source, column)
    n = len(values)
    if n == 0:
        raise UsageError(f"selectivity: column {column!r} has no non-null values")
    want = fraction * total
    k = min(n - 1, int(round(want)))
    # count(v < values[k]) <= k and count(v < next float above values[k]) > k: take the closer
    candidates = [float(values[k]), float(np.nextafter(values[k], np.inf))]
    best = min(candidates, key=lambda t: abs(np.searchsorted(values, t, side="left") - want))
    got = np.searchsorted(values, best, side="left") / total
    if abs(got - fraction) > TOLERANCE:
        raise OperationalError(f"selectivity: {column} < {best} selects {got:.4%} of the rows, not "
                               f"{fraction:.4%} (too many equal values); pick another column")
    return best
