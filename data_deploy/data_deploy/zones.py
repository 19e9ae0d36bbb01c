"""The taxi zone dimension table: one row per TLC location ID the trips use (1..265), with its
borough, zone name and service zone, as TLC's ``taxi_zone_lookup`` has them, for queries that
join the trips with a small dimension table (``trips.PULocationID = zones.LocationID``).

The table is fixed: the trips' locations come from a fixed draw (:mod:`data_deploy.taxi`), so
every seed joins with the same zones. The airports are real (1 Newark, 132 JFK, 138 LaGuardia);
the other zones' boroughs are drawn once, in TLC's proportions.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .files import output_dir
from .taxi import EWR, JFK, LGA

ZONES_SCHEMA = pa.schema([("LocationID", pa.int32()), ("Borough", pa.string()), ("Zone", pa.string()),
                          ("service_zone", pa.string())])
ZONES_FILE = "zones.parquet"
_BOROUGHS = {"Manhattan": 69, "Brooklyn": 61, "Queens": 67, "Bronx": 43, "Staten Island": 20}
_AIRPORTS = {EWR: ("EWR", "Newark Airport", "EWR"), JFK: ("Queens", "JFK Airport", "Airports"),
             LGA: ("Queens", "LaGuardia Airport", "Airports")}
_UNKNOWN = (264, 265)


def zones_table() -> pa.Table:
    """The 265 zones (:data:`ZONES_SCHEMA`), in LocationID order."""
    ids = [i for i in range(1, 266) if i not in _AIRPORTS and i not in _UNKNOWN]
    boroughs = np.random.default_rng(20240102).permutation(
        [name for name, count in _BOROUGHS.items() for _ in range(count)])
    rows = {i: (str(b), f"Zone {i:03d}", "Yellow Zone" if b == "Manhattan" else "Boro Zone")
            for i, b in zip(ids, boroughs)}
    rows.update(_AIRPORTS)
    rows.update({i: ("Unknown", "N/A" if i == 265 else "NV", "N/A") for i in _UNKNOWN})
    order = sorted(rows)
    columns = [order, *([rows[i][k] for i in order] for k in range(3))]
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, ZONES_SCHEMA)], schema=ZONES_SCHEMA)


def generate_zones(out) -> Path:
    """Write :func:`zones_table` as ``out/zones.parquet`` (one row group, so one object); the path."""
    out = Path(out)
    with output_dir(out, "generate zones") as files:
        path = out / ZONES_FILE
        files.append(path)
        pq.write_table(zones_table(), path, compression="zstd")
    return path
