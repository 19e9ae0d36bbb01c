"""The questions a workload asks (``workload.query``), each defined once as Spark SQL over the
views ``trips`` (the dataset) and ``zones`` (the zone dimension table, data_deploy's
:func:`~data_deploy.generate_zones`), and run unchanged by every reader: the application
registers both views through the point's reader and runs the statement.

The key queries also read the view ``keys`` (column ``key``: ``workload.keys`` values of the
key column :data:`KEY` found in the data) or ``probe`` (columns ``key`` and ``bucket``: the key
values whose hash falls in ``workload.probe`` percent of the hash range), which the application
makes from the data once (docs/results.md, "Keys, probes and appends"); their answers, which
may hold a tenth of the rows, are counted and checksummed in Spark as the scan's are. The
indexed reader answers a query through its index where the entry says how (``index``), and
refuses the others.

``{filter}`` in a statement stands for the point's selectivity filter (``column < threshold``,
keeping ``workload.selectivity`` percent of the trips); a statement without it reads every trip
whatever the selectivity. ``scan`` is the thesis's question (rows and an order-independent
checksum of the kept rows) and keeps its DataFrame form in the application, so its results are
those of every earlier run. A user's own statement is ``Workload(sql=...)`` (query ``sql``).

Answers are compared across readers and repetitions by a fingerprint (``checksum``) of the
answer's rows in order-independent form, floating-point values rounded to
:data:`FLOAT_DIGITS` significant digits (Spark sums in no fixed order), and by the rows
themselves (``answer``) within :data:`RELATIVE_TOLERANCE` when the fingerprints differ.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re

from metareserve.errors import UsageError

FLOAT_DIGITS = 9
RELATIVE_TOLERANCE = 1e-9
MAX_SQL = 100_000
"""Longest statement (characters) a workload may carry."""
MAX_ANSWER_ROWS = 1000
"""Rows of an answer the application keeps (a longer answer is fingerprinted whole but kept cut)."""
KEY = "tpep_pickup_datetime"
"""The key of the key queries and of the indexed reader's index: a trip's pickup time (to the
second: most keys are one trip's, a few are several trips')."""
KEY_VIEWS = ("keys", "probe")
"""The views the application makes from the data for the key queries."""


@dataclasses.dataclass(frozen=True)
class Query:
    """One query shape: ``name`` (the value of ``workload.query``), its statement (None: the
    application's own ``scan``), one line for the report and, where the indexed reader can answer
    it, how (``index``: ``lookup``, the rows of the view ``keys``' keys; ``join``, the inner join
    with the view ``probe`` on its ``key``)."""

    name: str
    sql: str | None
    definition: str
    index: str | None = None

    @property
    def views(self) -> tuple[str, ...]:
        """The key views (:data:`KEY_VIEWS`) the statement reads."""
        return tuple(v for v in KEY_VIEWS if uses_view(self.sql or "", v))

    @property
    def summed(self) -> bool:
        """Whether the answer is counted and checksummed in Spark (a key query's, which may be
        large) rather than fingerprinted row by row on the driver."""
        return bool(self.views)

    @property
    def selective(self) -> bool:
        """Whether the selectivity filter applies (the statement has ``{filter}``, or scan)."""
        return self.sql is None or "{filter}" in self.sql

    @property
    def joins_zones(self) -> bool:
        """Whether the statement reads the zone dimension table."""
        return uses_zones(self.sql or "")

    def statement(self, column: str, threshold: float | None) -> str | None:
        """The statement with ``{filter}`` made ``column < threshold`` (TRUE without threshold)."""
        if self.sql is None:
            return None
        where = "TRUE" if threshold is None else f"{column} < {float(threshold)!r}"
        return self.sql.replace("{filter}", where)


def uses_zones(sql: str) -> bool:
    """Whether ``sql`` names the ``zones`` view."""
    return uses_view(sql, "zones")


def uses_view(sql: str, view: str) -> bool:
    """Whether ``sql`` names the view ``view``."""
    return re.search(rf"\b{view}\b", sql, re.IGNORECASE) is not None


SCAN = Query("scan", None, "rows below the threshold: their count and a checksum of their columns "
             "(the thesis's question)")
QUERIES = {q.name: q for q in (
    SCAN,
    Query("sum", "SELECT COUNT(*) AS trips, COUNT(tip_amount) AS tipped, SUM(fare_amount) AS fares, "
                 "SUM(passenger_count) AS passengers, SUM(VendorID) AS vendors FROM trips WHERE {filter}",
          "one scalar row: a count and sums of the rows below the threshold (TPC-H Q6's shape)"),
    Query("groupby", "SELECT VendorID, payment_type, COUNT(*) AS trips, SUM(total_amount) AS total, "
                     "AVG(trip_distance) AS distance, MIN(fare_amount) AS min_fare, MAX(tip_amount) AS max_tip "
                     "FROM trips WHERE {filter} GROUP BY VendorID, payment_type",
          "rows below the threshold grouped by vendor and payment type: count, sum, average, min, max "
          "(TPC-H Q1's shape)"),
    Query("topk", "SELECT total_amount, tpep_pickup_datetime, PULocationID, DOLocationID, trip_distance "
                  "FROM trips WHERE {filter} ORDER BY total_amount DESC, tpep_pickup_datetime, PULocationID, "
                  "DOLocationID, trip_distance LIMIT 100",
          "the 100 largest fares below the threshold (ordered by every returned column, so ties agree)"),
    Query("join", "SELECT z.Zone, COUNT(*) AS trips, SUM(t.total_amount) AS total FROM trips t "
                  "JOIN zones z ON t.PULocationID = z.LocationID "
                  "WHERE z.service_zone = 'Airports' AND t.{filter} GROUP BY z.Zone",
          "trips below the threshold joined with the zones, kept where the pickup zone is an airport "
          "(2 of 265 zones), per zone: count and sum"),
    Query("lookup", "SELECT * FROM trips WHERE PULocationID = 132 "
                    "AND tpep_pickup_datetime >= TIMESTAMP '2024-01-03 08:00:00' "
                    "AND tpep_pickup_datetime < TIMESTAMP '2024-01-03 09:00:00'",
          "every column of the trips from one pickup zone in one hour (a point lookup; no threshold)"),
    Query("key-lookup", f"SELECT * FROM trips WHERE {KEY} IN (SELECT key FROM keys)",
          "every column of the trips picked up at one of workload.keys pickup times taken from the data "
          "(a lookup of that many keys; the application runs it with the keys as values, an IN list a scan "
          "can push)", index="lookup"),
    Query("key-join", f"SELECT * FROM trips t JOIN probe p ON t.{KEY} = p.key",
          "the trips joined with a probe table of pickup times, workload.probe % of the data's, on the "
          "pickup time (an equi-join: every column of both)", index="join"),
)}
CUSTOM = "sql"
"""``workload.query`` of a user's own statement (``workload.sql``)."""


def get(name: str, sql: str | None = None, where: str = "workload.query") -> Query:
    """The query called ``name``, or the user's ``sql`` (query ``sql``); UsageError naming
    ``where`` otherwise."""
    if name == CUSTOM:
        return Query(CUSTOM, check_sql(sql), "the experiment's own statement")
    if sql is not None:
        raise UsageError(f"{where} {name!r} has its own statement: give workload.sql with query 'sql' "
                         f"(or leave query unset)")
    try:
        return QUERIES[name]
    except (KeyError, TypeError):
        raise UsageError(f"{where} {name!r} is not one of {', '.join(QUERIES)} (or give workload.sql)") from None


def __getattr__(name: str):
    """``NAMES``: every query's name, derived from :data:`QUERIES` whenever it is read (a query
    is one entry there and nothing else)."""
    if name == "NAMES":
        return tuple(QUERIES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_sql(sql) -> str:
    """``sql`` if it can be a workload's statement: one SELECT (or WITH) over the views, at most
    :data:`MAX_SQL` characters; UsageError saying what is wrong otherwise. Spark parses it when
    the point runs (a statement that does not parse fails that point, in one line)."""
    if not isinstance(sql, str) or not sql.strip():
        raise UsageError(f"workload.sql must be a SELECT statement over trips (and zones), not {sql!r}")
    if len(sql) > MAX_SQL:
        raise UsageError(f"workload.sql is {len(sql)} characters; at most {MAX_SQL}")
    body = sql.strip().rstrip(";").strip()
    if not re.match(r"(?is)^(select|with)\b", body) or ";" in body:
        raise UsageError("workload.sql must be one SELECT (or WITH ... SELECT) statement over the views trips "
                         "and zones; {filter} stands for the selectivity filter")
    if not re.search(r"\btrips\b", body, re.IGNORECASE):
        raise UsageError("workload.sql does not read the view trips (the dataset)")
    return body


def same_answers(answers) -> bool:
    """Whether the recorded answers (``answer`` JSON texts, one per repetition; None for the
    scan) are all the same rows: equal values, floats within :data:`RELATIVE_TOLERANCE`
    relative (NaN equal to NaN). False without two answers to compare."""
    rows = [json.loads(a) for a in answers if isinstance(a, str)]
    if len(rows) < 2 or len(rows) != len(answers):
        return False

    def key(row):   # floats coarsely, so rows whose floats differ in the last digits sort alike
        return json.dumps([f"{v:.6g}" if isinstance(v, float) else v for v in row])

    def close(a, b):
        if isinstance(a, float) or isinstance(b, float):
            if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool):
                return False
            return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE,
                                                                   abs_tol=1e-300)
        return a == b

    first = sorted(rows[0], key=key)
    return all(len(other) == len(first) and all(
        len(x) == len(y) and all(map(close, x, y)) for x, y in zip(first, sorted(other, key=key)))
        for other in rows[1:])
