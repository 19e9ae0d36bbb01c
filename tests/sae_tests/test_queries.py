"""The query catalogue (pure): statements rendered with the selectivity filter, a user's own
statement checked at load, answers fingerprinted by the application independently of row order
and float rounding, and answers compared across readers within 1e-9."""
import json
import math

import pytest

from metareserve.errors import UsageError
from sae.app import run_points
from sae.planning import queries
from sae.planning.spec import Workload


def test_every_shape_renders_its_filter_and_only_scan_has_no_statement():
    for name, q in queries.QUERIES.items():
        sql = q.statement("total_amount", 12.5)
        if name == "scan":
            assert sql is None and q.selective
            continue
        assert "{filter}" not in sql and ("total_amount < 12.5" in sql) == q.selective, name
    assert not queries.QUERIES["lookup"].selective and queries.QUERIES["join"].joins_zones
    assert "TRUE" in queries.QUERIES["sum"].statement("total_amount", None)


def test_a_workload_with_sql_is_the_sql_query():
    w = Workload(sql="SELECT COUNT(*) FROM trips WHERE {filter}")
    assert w.query == queries.CUSTOM and w.question.sql.endswith("{filter}") and w.question.selective
    assert not Workload(sql="SELECT z.Zone FROM trips t JOIN zones z ON TRUE").question.selective
    assert Workload(sql="select 1 from trips join ZONES on true").question.joins_zones


@pytest.mark.parametrize("sql, fragment", [
    ("DROP TABLE trips", "one SELECT"), ("SELECT 1 FROM trips; DROP TABLE trips", "one SELECT"),
    ("SELECT 1", "does not read the view trips"), ("", "must be a SELECT"), (5, "must be a SELECT"),
    ("SELECT 1 FROM trips WHERE " + "x" * queries.MAX_SQL, "characters"),
])
def test_bad_statements_are_refused_in_one_line(sql, fragment):
    with pytest.raises(UsageError) as e:
        queries.check_sql(sql)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_a_named_query_with_a_statement_is_refused():
    with pytest.raises(UsageError, match="has its own statement"):
        queries.get("groupby", "SELECT 1 FROM trips")
    with pytest.raises(UsageError, match="not one of scan, sum"):
        queries.get("nope")


def test_the_fingerprint_ignores_row_order_and_last_digits_of_floats():
    rows = [(1, 0.1 + 0.2, "a", None), (None, 2.0, "b", 3), (1, float("nan"), None, None)]
    shuffled = [rows[2], (None, 2.0000000000000004, "b", 3), (1, 0.3, "a", None)]
    a, b = run_points.answer(rows, 9, 1000), run_points.answer(shuffled, 9, 1000)
    assert a[:2] == b[:2] and a[0] == 3
    assert run_points.answer(rows[:2], 9, 1000)[1] != a[1]
    assert len(run_points.answer(rows, 9, 2)[2]) == 2   # kept rows are cut, the fingerprint is not


def test_answers_agree_within_the_tolerance_only():
    base = [[1, 100.0, "x"], [2, math.nan, None]]
    close = [[2, math.nan, None], [1, 100.0 * (1 + 1e-12), "x"]]
    far = [[1, 100.0 * (1 + 1e-6), "x"], [2, math.nan, None]]
    assert queries.same_answers([json.dumps(base), json.dumps(close)])
    assert not queries.same_answers([json.dumps(base), json.dumps(far)])
    assert not queries.same_answers([json.dumps(base), json.dumps(base[:1])])
    assert not queries.same_answers([json.dumps(base), None])   # a scan has no answer to compare
