"""The indexed cache (sae.indexed) against Spark's own answers, in Spark's local mode.

One Spark application runs every case (tests/indexed/scenario.py) in a process of its own that
exits, JVM included, before the first test asserts (a pure test leaves no JVM running); each
test reads what its case saw. Lookups, joins and appends are compared row for row with
``filter``/``isin`` and inner ``join`` over the same rows, large answers by an order-free
fingerprint computed in Spark (row count and the sum of each row's xxhash64).
"""
from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from metareserve.errors import UsageError
import sae.indexed as ix
from sae.indexed.build import QUICK, compile_jar, spark_jars


SCENARIO = Path(__file__).with_name("scenario.py")
MODEL = Path(__file__).with_name("IndexModel.java")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("indexed")
    out = work / "outcomes.pickle"
    r = subprocess.run([sys.executable, str(SCENARIO), str(work), str(out)], capture_output=True, text=True,
                       timeout=1200)
    if not out.exists():
        pytest.fail(f"scenario.py exited {r.returncode} before writing its outcomes: {r.stderr[-4000:]}")
    return pickle.loads(out.read_bytes())


@pytest.fixture
def seen(outcomes):
    """``seen(case)``: what the case saw; the test fails with the case's traceback if it raised."""
    def get(case: str) -> dict:
        got = outcomes[case]
        if "error" in got:
            pytest.fail(f"case {case} raised:\n{got['error']}", pytrace=False)
        return got
    return get


# --- the partition structures alone ---

def test_partition_structures_match_a_model_across_versions_and_merges():
    """IndexModel.java: one partition, no Spark application; keys repeated and null, 40 versions,
    each appended to a random older one (a chain of 12 first, past a merge of the key maps)."""
    index = ix.jar()   # the model compiled against the index's classes, not with its sources again
    model = compile_jar([MODEL], "test-model", classpath=(index,))
    r = subprocess.run(["java", QUICK, "-cp", f"{model}:{index}:{spark_jars()}/*", "sae.indexed.IndexModel",
                        "40", "300"], capture_output=True, text=True, check=True)
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert lines == {"long": "ok 41 versions, at most 8 maps", "string": "ok 41 versions, at most 8 maps"}


# --- building ---

def test_every_row_is_cached_once_in_the_partition_its_key_hashes_to(seen):
    got = seen("build")
    m = got["memory"]
    assert got["partitions"] == 8 and len(m.partitions) == 8 and [p.partition for p in m.partitions] == list(range(8))
    assert m.total.rows == got["rows"] == sum(p.rows for p in m.partitions)   # the build checks each row's partition
    assert m.total.null_key_rows == got["null_keys"] > 0
    assert m.total.keys == got["distinct"]
    assert got["schema"] == got["source_schema"]


def test_memory_is_counted_per_partition_and_in_all(seen):
    got = seen("build")
    for m in (got["memory"], got["zone_memory"], got["pickup_zone_memory"]):
        t = m.total
        for field in ("rows", "row_bytes", "header_bytes", "chunk_bytes", "index_bytes"):
            assert getattr(t, field) == sum(getattr(p, field) for p in m.partitions), field
        assert t.header_bytes == 8 * t.rows
        assert t.row_bytes + t.header_bytes <= t.chunk_bytes < (t.row_bytes + t.header_bytes) * 1.01   # chunks trimmed
        assert t.maps == 1 and m.build_seconds > 0 and t.build_seconds > 0
    unique, few = got["memory"], got["pickup_zone_memory"]
    assert unique.index_share < 0.2                  # a key per row: ~24 bytes a key against ~190-byte rows
    assert few.index_share < 0.001 and few.total.keys <= 265   # 265 pickup zones: the maps are all but free


def test_partitions_default_to_the_sessions_parallelism(seen):
    got = seen("default_partitions")
    assert got["partitions"] == got["default"]


def test_an_empty_frame_is_indexed_and_appended_to(seen):
    got = seen("empty")
    assert got["rows"] == 0 and got["lookup"] == []
    assert got["grown"] == got["spark"] and len(got["spark"]) == 2
    assert got["schema"] == got["source_schema"]


# --- lookups ---

def test_a_point_lookup_is_a_filter_answered_by_one_task(seen):
    got = seen("lookup_one")
    assert got["index"] == got["spark"] == got["scalar"] and len(got["spark"]) == 1
    assert got["tasks"] == 1 and len(got["partitions"]) == 1
    assert got["schema"] == seen("build")["source_schema"]


def test_a_lookup_runs_a_task_per_partition_its_keys_hash_to(seen):
    got = seen("lookup_three")
    assert got["tasks"] == len(got["partitions"]) < 8


def test_a_hundred_keys_with_absent_null_and_repeated_ones_match_isin(seen):
    got = seen("lookup_hundred")
    assert got["index"] == got["spark"] and len(got["spark"]) == 95


def test_ten_thousand_keys_match_a_semi_join(seen):
    got = seen("lookup_ten_thousand")
    assert got["index"] == got["spark"] and len(got["spark"]) == 10_000


def test_every_row_of_a_repeated_key_is_returned(seen):
    got = seen("lookup_duplicate_keys")
    assert got["index"] == got["spark"] and len(got["spark"]) > 100


def test_string_keys_match_exactly(seen):
    got = seen("lookup_strings")   # case and the empty string matter; null rows are in the data
    assert got["index"] == got["spark"] and got["spark"]


def test_timestamp_keys(seen):
    got = seen("lookup_timestamps")
    assert got["index"] == got["spark"] and len(got["spark"]) >= 5
    assert type(got["type"]).__name__ == "TimestampNTZType"


def test_no_keys_and_null_keys_find_nothing(seen):
    got = seen("lookup_nothing")
    assert got["none"] == got["null"] == []
    assert got["tasks"] == 1   # [None, an absent key]: the absent key's partition only


# --- joins ---

def test_an_indexed_join_is_sparks_inner_join(seen):
    got = seen("join_ids")   # an int probe column against the long key, with a null, an absent and a repeated key
    assert got["index"] == got["spark"] and len(got["spark"]) > 500
    assert got["columns"] == got["spark_columns"]


def test_joins_on_string_keys_and_many_rows_per_key(seen):
    for case in ("join_strings", "join_every_row"):
        got = seen(case)
        assert got["index"] == got["spark"] and got["spark"][0] > 0, case
    assert seen("join_every_row")["spark"][0] == seen("build")["rows"]   # every trip has its pickup zone


def test_an_empty_probe_side_joins_to_nothing(seen):
    got = seen("join_empty")
    assert got["rows"] == [] and got["columns"] == seen("join_ids")["columns"]


# --- versions ---

def test_an_append_makes_a_version_and_leaves_the_old_one_as_it_was(seen):
    got = seen("append")
    assert got["v2"] == got["spark_v2"] and len(got["spark_v2"]) > 12          # old keys twice, new keys once
    assert got["join_v2"] == got["spark_join_v2"]
    assert got["v1_after"] == got["v1_before"] and got["v1_new_keys"] == []
    assert got["versions"] == (0, 1)
    v1, v2 = got["v1_memory"], got["v2_memory"].total
    assert v2.rows == v1.rows + got["appended_rows"]
    assert v2.null_key_rows == v1.null_key_rows + got["appended_nulls"]
    assert v2.maps == 2 and v2.build_seconds < v1.build_seconds   # the new rows only were indexed


def test_versions_appended_to_one_parent_do_not_see_each_other(seen):
    got = seen("append_branches")
    assert got["a"] == got["spark_a"] and got["b"] == got["spark_b"] and got["a"] != got["b"]


def test_many_appends_merge_their_maps_and_stay_exact(seen):
    got = seen("append_many")
    assert got["maps"] == [2, 3, 4, 5, 6, 7, 8, 1, 2]
    assert got["index"] == got["spark"] and got["spark"]
    assert got["scan"] == got["spark_scan"]


# --- recovery ---

def test_lost_partitions_and_shuffle_output_are_rebuilt_from_lineage(seen):
    got = seen("recovery")
    assert got["cached_before"] == [True, True] and got["dropped"] == [False, False]
    assert got["shuffles"] == 2                        # the build's and the append's
    assert got["tasks"] > 1                            # map stages ran again, not the lookup alone
    assert got["v2"] == got["spark_v2"] and len(got["spark_v2"]) == 2
    assert got["v1"] == got["spark_v1"] and len(got["spark_v1"]) == 1
    assert got["cached_after"] == [True, True]


# --- the index as a DataFrame ---

def test_key_filters_on_the_frames_dataframe_go_through_the_index(seen):
    got = seen("planner")
    assert got["eq"] == got["spark_eq"] and len(got["eq"]) == 1
    assert "IndexedRelation" in got["eq_plan"] and "EqualTo(trip_id," in got["eq_plan"]
    assert got["eq_tasks"] == 1
    for name in ("sql", "either", "other", "zone_null"):
        assert got[name] == got[f"spark_{name}"] and got[name], name
    assert got["count"] == got["spark_count"]


# --- bad input ---

def test_bad_input_is_one_line_naming_what_to_do(seen):
    got = seen("errors")
    assert got["double_key"].startswith("create_index: column fare_amount is double; index a column of byte")
    assert got["no_column"].startswith("create_index: column 'nope' is missing; the columns are VendorID")
    assert got["partitions"] == "create_index: partitions must be a whole number of 1 or more, not 0"
    assert got["key_type"] == "get_rows: key '12' is str; the index key trip_id is bigint: give keys of that type"
    assert got["probe_type"] == ("join: probe column zone is string, the index key trip_id is bigint; "
                                 "cast it to bigint first")
    assert got["append_type"] == "appendRows: column trip_id is string, the index has bigint"
    assert got["append_missing"].startswith("appendRows: no column zone; the columns are VendorID")
    assert all("\n" not in m for m in got.values() if isinstance(m, str))


def test_a_jars_directory_without_spark_is_refused(tmp_path):
    with pytest.raises(UsageError, match=r"^indexed build: .* holds no spark-core jar; give the jars directory"):
        compile_jar([SCENARIO.with_name("Faults.java")], "x", jars=tmp_path, out_dir=tmp_path)
