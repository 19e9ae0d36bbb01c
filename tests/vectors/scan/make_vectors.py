"""Regenerate the scan protocol test vectors (run from the repository root):

    .venv/bin/python tests/vectors/scan/make_vectors.py

Writes ``sample.parquet`` (a small table with every literal type, NULLs, a nullable int group
key, NaN, wide int32 and near-2^62 int64 values), ``requests.json`` (request bytes → expected
parse, or the error the parser must report), ``results.json`` (request on sample.parquet →
expected rows, computed client-side by pyarrow and, for aggregates and top-k, by the Python
codec's references :func:`aggregate` and :func:`top_k`; or the expected errno) and ``index.json``
(the ``index`` method's inputs → the build's rows and keys, or the errno; then which result
vectors, scanned with the index flag after the build, probe it and how many rows it names). The
C++ harness (tests/connector/harness.cc), the Java encoder and the Python side read them.
"""
import json
import re
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rados_deploy.osd_index import index_request
from sae.connector.protocol import (FLAG_AGGREGATE, FLAG_CSV, FLAG_INDEX, FLAG_TOP_K, FLAG_WHOLE_OBJECT, Request,
                                    ScanError, aggregate, csv_schema, times_as_integers, to_expression, top_k)

HERE = Path(__file__).parent


def expected(table: pa.Table, req: Request) -> pa.Table:
    """What the class replies to ``req`` on ``table``: pyarrow's filter, then the reference
    aggregate or top-k, or the projection."""
    t = table.filter(to_expression(req.filter)) if req.filter else table
    if req.aggregates:
        return aggregate(t, req.group_by, req.aggregates)
    if req.limit is not None:
        t = top_k(t, req.order_by, req.limit)
    return t.select(req.columns or table.column_names)


def sample() -> pa.Table:
    n = 40
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "small": pa.array([i % 7 for i in range(n)], pa.int32()),
        "amount": pa.array([None if i % 9 == 4 else round(i * 1.25, 2) for i in range(n)], pa.float64()),
        "flag": pa.array([i % 2 == 0 for i in range(n)], pa.bool_()),
        "name": pa.array([None if i % 11 == 5 else f"{'ab' if i % 3 else 'xy'}-{i}" for i in range(n)], pa.string()),
        "grp": pa.array([None if i % 8 == 3 else i % 3 for i in range(n)], pa.int32()),
        "score": pa.array([float("nan") if i % 10 == 7 else None if i % 13 == 6 else i % 6 - 2.5 for i in range(n)],
                          pa.float64()),
        "ratio": pa.array([i / 8 for i in range(n)], pa.float32()),
        "units": pa.array([1_000_000_000 + 7 * i for i in range(n)], pa.int32()),
        "big": pa.array([2 ** 62 + i for i in range(n)], pa.int64()),
        "ts": pa.array([None if i % 12 == 9 else _at(i) for i in range(n)], pa.timestamp("us")),
        "ts_utc": pa.array([_at(i) for i in range(n)], pa.timestamp("us", "UTC")),
    })


def _at(i: int) -> int:
    """Row ``i``'s time in microseconds since 1970: 2024-01-01 00:00 plus ``i`` times 37 minutes
    and 250 µs (ties at no unit coarser than microseconds)."""
    return 1_704_067_200_000_000 + i * (37 * 60_000_000 + 250)


CASES = {
    "all": Request(codec="none"),
    "project": Request(columns=["name", "id"]),
    "lt_float": Request(columns=["id", "amount"], filter={"cmp": "<", "column": "amount", "value": 10.0}),
    "int_vs_float_literal": Request(filter={"cmp": ">=", "column": "small", "value": 4.5}),
    "and_or_not": Request(columns=["id"], codec="lz4", filter={"and": [
        {"or": [{"cmp": "==", "column": "small", "value": 1}, {"cmp": "!=", "column": "flag", "value": True}]},
        {"not": {"cmp": "<=", "column": "id", "value": 10}}]}),
    "nulls": Request(columns=["id", "name"], codec="zstd", filter={"or": [{"is_null": "name"}, {"is_null": "amount"}]}),
    "not_null": Request(columns=["id"], filter={"is_not_null": "amount"}),
    "in": Request(columns=["id", "small"], filter={"in": "small", "values": [0, 3]}),
    "not_in_keeps_sql_nulls": Request(columns=["id"], filter={"not": {"in": "amount", "values": [0.0, 1.25]}}),
    "strings": Request(columns=["name"], filter={"or": [{"starts_with": "name", "pattern": "xy"},
                                                        {"ends_with": "name", "pattern": "-7"},
                                                        {"contains": "name", "pattern": "b-1"}]}),
    "string_eq": Request(columns=["id"], filter={"cmp": "==", "column": "name", "value": "ab-1"}),
    # timestamp literals (protocol 6): a wall-clock time with a zone-less column, an instant with a zoned one
    "timestamp_eq": Request(columns=["id", "ts"], filter={"cmp": "==", "column": "ts", "value": {"timestamp_us": _at(5)}}),
    "timestamp_in": Request(columns=["id"], filter={"in": "ts", "values": [{"timestamp_us": _at(i)} for i in (3, 9, 20)]}),
    "timestamp_range_utc": Request(columns=["id", "ts_utc"], filter={"and": [
        {"cmp": ">=", "column": "ts_utc", "value": {"timestamp_us_utc": _at(10)}},
        {"cmp": "<", "column": "ts_utc", "value": {"timestamp_us_utc": _at(14) + 1}}]}),
    "empty_result": Request(columns=["id"], filter={"cmp": ">", "column": "id", "value": 1000}),
    "batches": Request(columns=["id"], batch_rows=7, filter={"cmp": "<", "column": "id", "value": 30}),
    # a query's calls name their client (protocol 5); a u64, the top bit set here
    "client": Request(columns=["id"], client=2 ** 63 + 42, filter={"cmp": "<", "column": "id", "value": 5}),
    "filter_only_column": Request(columns=["name"], filter={"cmp": "==", "column": "flag", "value": False}),
    # the whole-object flag: every column asked for, but not every row passes, so an IPC stream
    "whole_object_filtered": Request(flags=3, filter={"cmp": "<", "column": "id", "value": 30}),
    # aggregates (protocol 3): Spark's partial aggregate of the rows the filter keeps
    "agg_global": Request(aggregates=[("count_star", None), ("count", "amount"), ("sum", "amount"), ("min", "amount"),
                                      ("max", "amount"), ("sum", "small"), ("min", "name"), ("max", "name"),
                                      ("min", "flag"), ("max", "flag"), ("min", "score"), ("max", "score")]),
    "agg_global_filtered": Request(codec="lz4", filter={"cmp": "<", "column": "id", "value": 20}, aggregates=[
        ("count_star", None), ("count", "name"), ("sum", "ratio"), ("sum", "score"), ("min", "score"),
        ("max", "score")]),
    "agg_no_row_passes": Request(filter={"cmp": ">", "column": "id", "value": 1000}, aggregates=[
        ("count_star", None), ("count", "amount"), ("sum", "amount"), ("sum", "small"), ("min", "name"),
        ("max", "small")]),
    "agg_group_one": Request(batch_rows=7, group_by=["grp"], aggregates=[
        ("count_star", None), ("sum", "small"), ("max", "score"), ("min", "name"), ("count", "amount")]),
    "agg_group_two": Request(codec="zstd", filter={"cmp": ">=", "column": "id", "value": 5}, group_by=["grp", "flag"],
                             aggregates=[("count_star", None), ("min", "amount"), ("max", "id"), ("sum", "amount")]),
    "agg_group_string_key": Request(filter={"in": "small", "values": [5, 6]}, group_by=["name", "flag"],
                                    aggregates=[("count_star", None)]),
    "agg_group_no_row_passes": Request(filter={"cmp": ">", "column": "id", "value": 1000}, group_by=["grp"],
                                       aggregates=[("count_star", None)]),
    "agg_sum_int32_past_2_31": Request(aggregates=[("sum", "units"), ("min", "units"), ("max", "units")]),
    "agg_nan_and_strings": Request(filter={"in": "id", "values": [7, 8, 17, 27]}, group_by=["id"], aggregates=[
        ("min", "score"), ("max", "score"), ("min", "name"), ("max", "name")]),
    # top-k (protocol 3): the first rows in Spark's order plus the limit-th row's ties; LIMIT without keys
    "topk_int_asc_key_not_returned": Request(columns=["id"], limit=3, order_by=[("units", False, False)]),
    "topk_int_desc": Request(columns=["id", "name"], codec="lz4", limit=4, order_by=[("id", True, False)]),
    "topk_ties_at_the_boundary": Request(columns=["id", "small"], limit=5, order_by=[("small", False, False)]),
    "topk_nan_desc_nulls_last": Request(columns=["id", "score"], limit=6, order_by=[("score", True, False)]),
    "topk_nan_desc_nulls_first": Request(columns=["id", "score"], limit=5, order_by=[("score", True, True)]),
    "topk_nan_asc_nulls_first": Request(columns=["id", "score"], limit=4, order_by=[("score", False, True)]),
    "topk_nan_asc_nulls_last": Request(columns=["score"], limit=36, order_by=[("score", False, False)]),
    "topk_strings_nulls_first": Request(columns=["name"], limit=6, order_by=[("name", False, True)]),
    "topk_strings_desc": Request(columns=["id", "name"], limit=3, order_by=[("name", True, False)]),
    "topk_two_keys": Request(columns=["id", "grp", "amount"], limit=6,
                             order_by=[("grp", False, True), ("amount", True, False)]),
    "topk_bool_and_float32": Request(columns=["id"], limit=3, order_by=[("flag", False, False), ("ratio", True, False)]),
    "topk_filtered": Request(columns=["id", "amount"], codec="zstd", filter={"cmp": "==", "column": "flag", "value": True},
                             limit=3, order_by=[("amount", True, False)]),
    "topk_batches": Request(columns=["id", "score"], batch_rows=7, limit=5, order_by=[("score", True, True)]),
    "topk_limit_above_rows": Request(limit=100, order_by=[("id", True, False)]),
    "limit": Request(columns=["id", "name"], limit=7),
    "limit_filtered": Request(columns=["id", "small"], filter={"in": "small", "values": [2, 4]}, limit=5),
    "limit_no_row_passes": Request(columns=["id"], filter={"cmp": ">", "column": "id", "value": 1000}, limit=5),
    # a CSV object (protocol 4): the request carries the object's columns
    "csv": Request(columns=["name", "id"], filter={"cmp": "<", "column": "amount", "value": 10.0},
                   csv=csv_schema(sample().schema)),
    "csv_aggregate": Request(group_by=["grp"], aggregates=[("count_star", None), ("sum", "small")],
                             csv=csv_schema(sample().schema)),
    # the index flag (protocol 6): without an index it changes no answer; INDEX_SCANS, with one
    "index_eq": Request(columns=["id", "small"], flags=1 | FLAG_INDEX, filter={"cmp": "==", "column": "small", "value": 3}),
    "index_in_and": Request(columns=["id"], flags=1 | FLAG_INDEX, filter={"and": [
        {"cmp": "<", "column": "id", "value": 30}, {"in": "small", "values": [1, 5]}]}),
    "index_no_key": Request(columns=["id"], flags=1 | FLAG_INDEX, filter={"cmp": "==", "column": "small", "value": 9}),
    "index_float_literal": Request(columns=["id"], flags=1 | FLAG_INDEX,
                                   filter={"cmp": "==", "column": "small", "value": 4.5}),
    "index_count_no_key": Request(flags=1 | FLAG_INDEX, filter={"in": "small", "values": [7, 8]},
                                  aggregates=[("count_star", None), ("max", "id")]),
    "index_other_column": Request(columns=["id"], flags=1 | FLAG_INDEX, filter={"cmp": "==", "column": "id", "value": 7}),
    "index_range": Request(columns=["id"], flags=1 | FLAG_INDEX, filter={"cmp": "<", "column": "small", "value": 2}),
}
INDEX_COLUMN = "small"
"""The column index.json's build indexes in sample.parquet."""
INDEX_SCANS = {"index_eq": [3], "index_in_and": [1, 5], "index_no_key": [9], "index_float_literal": [],
               "index_count_no_key": [7, 8], "index_other_column": None, "index_range": None}
"""Result vectors scanned with the index flag after the build: the keys each probes (None: the
index does not answer its filter, which is read as without the flag)."""
BAD_INDEX_BUILDS = {   # the index method's input -> its errno
    "bad_magic": (b"XXXX" + index_request(INDEX_COLUMN)[4:], 93),
    "wrong_version": (index_request(INDEX_COLUMN)[:4] + struct.pack("<H", 99) + index_request(INDEX_COLUMN)[6:], 93),
    "empty_column": (index_request(INDEX_COLUMN)[:6] + struct.pack("<H", 0), 22),
    "trailing": (index_request(INDEX_COLUMN) + b"\0", 22),
    "truncated": (index_request(INDEX_COLUMN)[:-1], 22),
    "unknown_column": (index_request("nope"), 22),
    "float_column": (index_request("amount"), 22),
}
ERROR_RESULTS = {
    "unknown_column": (Request(columns=["nope"]), 22),
    "unknown_filter_column": (Request(filter={"is_null": "nope"}), 22),
    "non_boolean_filter": (None, 22),  # filled below: a comparison of a string with an int
    "reply_too_large": (Request(max_reply=64), 7),
    "timestamp_zone_differs": (Request(filter={"cmp": "==", "column": "ts", "value": {"timestamp_us_utc": _at(1)}}), 22),
    "agg_float_group_key": (Request(group_by=["score"], aggregates=[("count_star", None)]), 22),
    "agg_unknown_column": (Request(aggregates=[("sum", "nope")]), 22),
    "agg_sum_of_strings": (Request(aggregates=[("sum", "name")]), 22),
    "agg_int64_sum_overflows": (Request(aggregates=[("sum", "big")]), 75),
    "topk_unknown_sort_column": (Request(columns=["id"], limit=3, order_by=[("nope", False, False)]), 22),
}


def bad_requests(good: bytes) -> dict:
    """Malformed requests and the error each must produce."""
    hdr = bytearray(good)
    wrong_version = bytearray(good); wrong_version[4:6] = struct.pack("<H", 99)
    bad_codec = bytearray(good); bad_codec[8] = 7
    bad_flags = bytearray(good); bad_flags[6:8] = struct.pack("<H", 0x80)
    return {
        "empty": (b"", "EINVAL"),
        "bad_magic": (b"XXXX" + bytes(hdr[4:]), "EPROTONOSUPPORT"),
        "wrong_version": (bytes(wrong_version), "EPROTONOSUPPORT"),
        "bad_codec": (bytes(bad_codec), "EINVAL"),
        "bad_flags": (bytes(bad_flags), "EINVAL"),
        "truncated": (good[:-1], "EINVAL"),
        "trailing": (good + b"\0", "EINVAL"),
        "unknown_node": (good[:-4] + struct.pack("<I", 1) + b"\x7f", "EINVAL"),
        "empty_and": (good[:-4] + struct.pack("<I", 3) + b"\x01\x00\x00", "EINVAL"),
        "deep": (good[:-4] + struct.pack("<I", 200 + 3) + b"\x03" * 200 + b"\x11\x01\x00", "EINVAL"),
        "huge_column_count": (good[:32] + b"\xff\xff" + good[34:], "EINVAL"),
        "column_not_utf8": (good[:-6] + b"\xff\xff" + good[-4:], "EINVAL"),
        **bad_csv(),
    }


def bad_csv() -> dict:
    """Malformed csv sections and the error each must produce."""
    plain = Request(columns=["id"]).encode()
    flagged = plain[:6] + struct.pack("<H", 1 | FLAG_CSV) + plain[8:]
    schema = csv_schema(pa.schema([("id", pa.int64()), ("name", pa.string())]))
    return {
        "csv_without_section": (flagged, "EINVAL"),
        "csv_length_beyond": (flagged + struct.pack("<I", len(schema) + 1) + schema, "EINVAL"),
        "csv_not_a_schema": (flagged + struct.pack("<I", 8) + b"\xff" * 8, "EINVAL"),
        "csv_no_columns": (flagged + struct.pack("<I", len(csv_schema(pa.schema([])))) + csv_schema(pa.schema([])),
                           "EINVAL"),
        "csv_column_twice": (flagged + struct.pack("<I", len(twice := csv_schema(pa.schema([("a", pa.int8())] * 2))))
                             + twice, "EINVAL"),
    }


def bad_aggregates() -> dict:
    """Malformed aggregate requests and the error each must produce."""
    agg = Request(aggregates=[("count_star", None)]).encode()
    section = struct.pack("<HHB", 0, 1, 0)   # no group columns, one count_star

    def flagged(data: bytes, flags: int) -> bytes:
        return data[:6] + struct.pack("<H", flags) + data[8:]
    return {
        "agg_with_columns": (flagged(Request(columns=["id"]).encode(), 1 | FLAG_AGGREGATE) + section, "EINVAL"),
        "agg_whole_object": (flagged(agg, 1 | FLAG_AGGREGATE | FLAG_WHOLE_OBJECT), "EINVAL"),
        "agg_without_section": (agg[:-len(section)], "EINVAL"),
        "agg_no_aggregates": (agg[:-3] + b"\0\0", "EINVAL"),
        "agg_unknown_function": (agg[:-1] + b"\x09", "EINVAL"),
        "agg_too_many_group_columns": (agg[:-5] + struct.pack("<H", 65) + b"\1\0x" * 65 + agg[-3:], "EINVAL"),
        "agg_count_with_no_column": (agg[:-1] + b"\x01", "EINVAL"),
        "agg_version_2": (agg[:4] + struct.pack("<H", 2) + agg[6:], "EPROTONOSUPPORT"),
    }


def bad_top_k() -> dict:
    """Malformed top-k requests and the error each must produce."""
    topk = Request(columns=["id"], limit=3, order_by=[("id", True, False)]).encode()
    key = 2 + len("id") + 1   # u16 length, name, key flags
    head = topk[:-(4 + 2 + key)]   # up to the top-k section (limit, key count, the key)

    def flagged(data: bytes, flags: int) -> bytes:
        return data[:6] + struct.pack("<H", flags) + data[8:]
    return {
        "topk_with_aggregate": (flagged(Request(aggregates=[("count_star", None)]).encode(), 1 | FLAG_AGGREGATE | FLAG_TOP_K)
                                + struct.pack("<IH", 3, 0), "EINVAL"),
        "topk_whole_object": (flagged(topk, 1 | FLAG_TOP_K | FLAG_WHOLE_OBJECT), "EINVAL"),
        "topk_without_section": (head, "EINVAL"),
        "topk_limit_zero": (head + struct.pack("<IH", 0, 0), "EINVAL"),
        "topk_limit_above_2_24": (head + struct.pack("<IH", 2 ** 24 + 1, 0), "EINVAL"),
        "topk_too_many_keys": (head + struct.pack("<IH", 3, 65) + b"\2\0id\0" * 65, "EINVAL"),
        "topk_bad_key_flags": (topk[:-1] + b"\x04", "EINVAL"),
        "topk_empty_key_name": (topk[:-key] + b"\0\0\0", "EINVAL"),
    }


def main():
    table = sample()
    pq.write_table(table, HERE / "sample.parquet", row_group_size=len(table), compression="snappy")
    requests = []
    for name, req in CASES.items():
        requests.append({"name": name, "hex": req.encode().hex(), "parse": {
            "columns": req.columns, "filter": req.filter, "codec": req.codec, "batch_rows": req.batch_rows,
            "max_reply": req.max_reply, "client": req.client,
            "flags": req.flags | (FLAG_AGGREGATE if req.aggregates else 0) | (FLAG_TOP_K if req.limit else 0)
            | (FLAG_CSV if req.csv else 0),
            "group_by": req.group_by, "aggregates": req.aggregates, "limit": req.limit, "order_by": req.order_by,
            "csv": req.csv and req.csv.hex(),
            "csv_columns": req.csv and ",".join(f"{f.name}:{str(f.type).replace(' ', '')}"
                                                for f in pa.ipc.read_schema(pa.py_buffer(req.csv))),
            "expression": re.sub(r"\n *", " ", str(to_expression(req.filter))) if req.filter else None}})
    base = Request(columns=["id"]).encode()
    for name, (data, err) in {**bad_requests(base), **bad_aggregates(), **bad_top_k()}.items():
        requests.append({"name": name, "hex": data.hex(), "error": err})
    results = []
    for name, req in CASES.items():
        if req.csv:   # results are of sample.parquet; test_protocol scans every one as CSV too
            continue
        t = expected(table, req)
        results.append({"name": name, "hex": req.encode().hex(), "columns": t.column_names,
                        "rows": json.loads(json.dumps(times_as_integers(t).to_pylist()))})
    bad_type = Request(filter={"cmp": "<", "column": "name", "value": 3})
    ERROR_RESULTS["non_boolean_filter"] = (bad_type, 22)
    for name, (req, errno) in ERROR_RESULTS.items():
        if req.aggregates and name != "agg_unknown_column":   # the reference refuses alike
            try:
                aggregate(table, req.group_by, req.aggregates)
                raise AssertionError(f"{name}: the reference aggregate does not refuse it")
            except ScanError as e:
                assert e.errno == errno, (name, e)
        results.append({"name": name, "hex": req.encode().hex(), "errno": errno})
    (HERE / "requests.json").write_text(json.dumps(requests, indent=1) + "\n")
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / "index.json").write_text(json.dumps(index_vectors(table), indent=1) + "\n")


def index_vectors(table: pa.Table) -> dict:
    """index.json: the builds (the good one first) and the scans after it."""
    keys = table.column(INDEX_COLUMN).drop_null()
    builds = [{"name": INDEX_COLUMN, "hex": index_request(INDEX_COLUMN).hex(), "column": INDEX_COLUMN,
               "rows": len(keys), "keys": len(pa.compute.unique(keys))}]
    builds += [{"name": name, "hex": data.hex(), "errno": errno} for name, (data, errno) in BAD_INDEX_BUILDS.items()]
    scans = []
    for name, probed in INDEX_SCANS.items():
        rows = None if probed is None else int(pa.compute.sum(pa.compute.is_in(
            table.column(INDEX_COLUMN), pa.array(probed, table.schema.field(INDEX_COLUMN).type))).as_py() or 0)
        scans.append({"name": name, "index_rows": rows or 0,
                      "rows_in": table.num_rows if rows is None or rows else 0})   # no row holds a key: none read
    return {"column": INDEX_COLUMN, "builds": builds, "scans": scans}


if __name__ == "__main__":
    main()
