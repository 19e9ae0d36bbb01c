"""The class's index beside each object (rados_deploy.osd_index, cls/scan_index.h), on the C++
harness: built once per object and column, probed by a scan with the index flag, which answers an
object holding none of the filter's keys without reading a column and every other exactly as a
scan without it; a rewritten object's index is stale, and the scan reads the object."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_deploy.formats import encode
from rados_deploy.osd_index import IndexHeader, index_request
from sae.connector.protocol import FLAG_INDEX, Request, decode_reply, times_as_integers, to_expression

ROWS = 20_000
T0 = 1_704_067_200_000_000   # 2024-01-01 in microseconds


def _table(seed: int) -> pa.Table:
    """Keys repeated (k: every value on 4 rows), NULL keys, strings, times and doubles."""
    k = [None if i % 97 == 5 else (i * seed) % (ROWS // 4) for i in range(ROWS)]
    return pa.table({"k": pa.array(k, pa.int64()), "s": pa.array([f"s{i % 500}" for i in range(ROWS)]),
                     "t": pa.array([T0 + (i % 3000) * 1_000_000 for i in range(ROWS)], pa.timestamp("us")),
                     "x": pa.array([i / 7 for i in range(ROWS)], pa.float64())})


def _write(table: pa.Table, path):
    pq.write_table(table, path, row_group_size=ROWS)


@pytest.fixture
def session(harness, tmp_path):
    """``session(*commands)``: one harness process (whose indexes last as long as it does) runs
    ``("index", path, column)`` and ``("scan", path, Request)`` in order; per command, the build's
    JSON (or the error line) or the scan's (rows as dicts, stats)."""
    def run(*commands):
        lines = []
        for i, (cmd, path, arg) in enumerate(commands):
            lines.append(f"index {path} {index_request(arg).hex()}" if cmd == "index"
                         else f"scan {path} {arg.encode().hex()} {tmp_path / f'reply{i}'}")
        out = []
        for i, ((cmd, _, _), line) in enumerate(zip(commands, harness(*lines), strict=True)):
            if cmd == "index":
                out.append(json.loads(line.removeprefix("ok ")) if line.startswith("ok ") else line)
                continue
            assert line.startswith("ok "), line
            reply = decode_reply((tmp_path / f"reply{i}").read_bytes())
            out.append((times_as_integers(pa.ipc.open_stream(reply.stream).read_all()).to_pylist(), reply.stats))
        return out
    return run


def _expected(table: pa.Table, req: Request) -> list:
    return times_as_integers(table.filter(to_expression(req.filter)).select(req.columns)).to_pylist()


def test_index_build_is_counted_and_a_second_build_changes_nothing(harness, session, tmp_path):
    path = tmp_path / "o.parquet"
    table = _table(7)
    _write(table, path)
    built, again, floats, unknown = session(*(("index", path, c) for c in ("k", "k", "x", "nope")))
    assert built["changed"] and built["rows"] == len(table.column("k").drop_null()), built
    assert built["keys"] == len(pa.compute.unique(table.column("k").drop_null())) and built["bytes"] > 0, built
    assert not again["changed"] and {**again, "build_ns": 0, "changed": True} == {**built, "build_ns": 0}, again
    assert floats.startswith("err 22 index: cannot index column 'x' of type double"), floats
    assert unknown == "err 22 index: unknown column 'nope'", unknown
    call, header = harness(f"index {path} {index_request('k').hex()}", f"header {path}")
    call = json.loads(call.removeprefix("ok "))
    h = IndexHeader.parse(header.removeprefix("ok "))   # the header as the class writes it, read as rados_deploy reads it
    assert h and (h.column, h.rows, h.keys, h.bytes) == ("k", built["rows"], built["keys"], built["bytes"]), header
    assert 0 < h.build_ns <= call["build_ns"], (h, call)   # the build, within the call that made it
    bad, = harness(f"index {path} {b'XXXX'.hex()}{index_request('k').hex()[8:]}")
    assert bad.startswith("err 93 not an index request"), bad


@pytest.mark.parametrize("column, present, absent", [
    ("k", [3, 4], [ROWS, -1]),
    ("s", ["s7"], ["nope"]),
    ("t", [{"timestamp_us": T0 + 5_000_000}], [{"timestamp_us": T0 + 1}]),
])
def test_index_skips_an_object_without_the_keys_and_answers_alike_with_them(session, tmp_path, column, present,
                                                                          absent):
    """With the flag: keys the object lacks are answered from the index alone (no row read, a
    fraction of the bytes a scan reads); keys it holds, alone, in an IN list or as one conjunct of
    an AND, give the rows a scan without the flag gives; an aggregate over no row is one row of
    zeros and NULLs."""
    path = tmp_path / "o.parquet"
    table = _table(7)
    _write(table, path)

    def keyed(values):
        return {"cmp": "==", "column": column, "value": values[0]} if len(values) == 1 else \
            {"in": column, "values": values}
    cols = ["k", "s", "t", "x"]
    # an equality on another column first, every row's value: the index answers the one on its own
    other = {"in": "s", "values": [f"s{i}" for i in range(500)]} if column != "s" else \
        {"in": "k", "values": list(range(ROWS // 4))}
    hits = [Request(columns=cols, flags=1 | FLAG_INDEX, filter=f)
            for f in (keyed(present), keyed(present + absent),
                      {"and": [{"cmp": "<", "column": "x", "value": 2000.0}, keyed(present)]},
                      {"and": [other, keyed(present)]})]
    count = Request(flags=1 | FLAG_INDEX, filter=keyed(absent), aggregates=[("count_star", None), ("max", "x")])
    built, (miss, st), (plain_rows, plain), *found, (counted, cst) = session(
        ("index", path, column), ("scan", path, Request(columns=cols, flags=1 | FLAG_INDEX, filter=keyed(absent))),
        ("scan", path, Request(columns=cols, filter=keyed(absent))), *(("scan", path, r) for r in hits),
        ("scan", path, count))
    assert built["changed"], built
    assert miss == plain_rows == [] and st["rows_in"] == 0 and st["index_rows"] == 0, st
    # the footer's reads (the reader's last 16 KiB, scan_core.cc's kFooterReadBytes) against every column's
    assert st["read_calls"] <= 2 and st["read_bytes"] <= (16 << 10) + 8 < plain["read_bytes"] / 4, (st, plain)
    assert st["index_ns"] > 0, st
    for req, (rows, fst) in zip(hits, found):
        assert rows == _expected(table, req) and rows, req.filter
        assert fst["index_rows"] >= len(rows) > 0 and fst["rows_in"] == ROWS, (req.filter, fst)
    assert counted == [{"agg0": 0, "agg1": None}] and cst["rows_in"] == 0, (counted, cst)


def test_a_rewritten_object_is_scanned_whole_until_it_is_indexed_again(harness, tmp_path):
    """The index records the object's size and footer: after a rewrite the scan reads the object
    (the new rows' answer), and the next build makes a new index. (One harness process: its
    indexes last as long as it runs.)"""
    old, path = tmp_path / "old.parquet", tmp_path / "o.parquet"
    _write(_table(7), old)
    newer = _table(11)
    _write(newer, path)
    req = Request(columns=["k", "x"], flags=1 | FLAG_INDEX, filter={"in": "k", "values": [11, 22, 4999]})
    out = tmp_path / "reply"
    built, moved, stale, rebuilt, fresh = harness(
        f"index {old} {index_request('k').hex()}", f"carry {old} {path}",
        f"scan {path} {req.encode().hex()} {out}-1", f"index {path} {index_request('k').hex()}",
        f"scan {path} {req.encode().hex()} {out}-2")
    assert json.loads(built.removeprefix("ok "))["changed"] and moved == "ok", (built, moved)
    for line, name, used in ((stale, "-1", False), (fresh, "-2", True)):
        assert line.startswith("ok "), line
        reply = decode_reply((tmp_path / f"reply{name}").read_bytes())
        rows = times_as_integers(pa.ipc.open_stream(reply.stream).read_all()).to_pylist()
        assert rows == _expected(newer, req) and rows and (reply.stats["index_rows"] > 0) == used, reply.stats
    assert json.loads(rebuilt.removeprefix("ok "))["changed"], rebuilt


def test_a_key_longer_than_64_kib_is_found(session, tmp_path):
    """Key lengths are 32-bit in the buckets: a string of 70,000 bytes is indexed whole."""
    path = tmp_path / "o.parquet"
    long = "x" * 70_000
    table = pa.table({"s": [long, long[:-1] + "y", "short"], "i": [1, 2, 3]})
    _write(table, path)
    reqs = [Request(columns=["i"], flags=1 | FLAG_INDEX, filter={"cmp": "==", "column": "s", "value": v})
            for v in (long, long[:-2] + "zz")]
    built, (hit, st), (miss, mst) = session(("index", path, "s"), *(("scan", path, r) for r in reqs))
    assert built["keys"] == 3 and hit == [{"i": 1}] and st["index_rows"] == 1, (built, hit, st)
    assert miss == [] and mst["rows_in"] == 0, (miss, mst)


def test_without_the_flag_or_for_another_column_the_index_is_not_used(session, tmp_path):
    path = tmp_path / "o.parquet"
    table = _table(7)
    _write(table, path)
    reqs = (Request(columns=["k"], filter={"cmp": "==", "column": "k", "value": ROWS}),
            Request(columns=["k"], flags=1 | FLAG_INDEX, filter={"cmp": "==", "column": "s", "value": "s1"}),
            Request(columns=["k"], flags=1 | FLAG_INDEX, filter={"cmp": "<", "column": "k", "value": 3}))
    _, *scans = session(("index", path, "k"), *(("scan", path, r) for r in reqs))
    for req, (rows, st) in zip(reqs, scans):
        assert rows == _expected(table, req) and st["rows_in"] == ROWS and st["index_rows"] == 0, (req.filter, st)
    assert scans[0][1]["index_ns"] == 0, scans[0][1]   # without the flag, not even the header is read


def test_a_matching_object_reads_only_the_pages_holding_its_keys(session, tmp_path):
    """With a page index (data_deploy's ``page_rows``: small pages, dictionaries only where they
    are small), a scan with the flag reads of an object holding the keys only the pages covering
    their rows, and each column's dictionary page: the rows a whole read gives, from a fraction of
    the rows decoded and fewer bytes read (here most of them the dictionaries of 20,000 rows). Pages split by bytes end at different rows in different
    columns (``t``'s pages hold fewer rows than ``k``'s); keys on every page read as much as a scan
    without the flag."""
    path = tmp_path / "o.parquet"
    table = _table(7)
    path.write_bytes(encode(table, "parquet", "none", page_rows=1000).to_pybytes())
    uneven = tmp_path / "uneven.parquet"
    pq.write_table(table, uneven, row_group_size=ROWS, write_page_index=True, data_page_size=4096,
                   use_dictionary=["s"])
    cols = ["k", "s", "t", "x"]
    reqs = [Request(columns=cols, flags=1 | FLAG_INDEX, filter=f) for f in (
        {"cmp": "==", "column": "k", "value": 3},
        {"and": [{"cmp": "<", "column": "x", "value": 2000.0}, {"in": "k", "values": [4, 9, 4999]}]},
        {"in": "k", "values": list(range(0, ROWS // 4, 20))})]   # a key every 80 rows: on every page
    reqs.append(Request(flags=1 | FLAG_INDEX, filter={"in": "k", "values": [3, 4]}, group_by=["s"],
                        aggregates=[("count_star", None), ("max", "x"), ("min", "t")]))
    plain = Request(columns=cols, filter={"cmp": "==", "column": "k", "value": 3})
    _, *scans, (_, whole) = session(("index", path, "k"), *(("scan", path, r) for r in reqs), ("scan", path, plain))
    for req, (rows, st) in zip(reqs[:3], scans):
        assert rows == _expected(table, req) and rows, req.filter
    grouped, st = scans[3]   # the pages' rows grouped and aggregated as the whole object's
    want = table.filter(to_expression(reqs[3].filter)).group_by("s").aggregate([([], "count_all"), ("x", "max"), ("t", "min")])
    assert sorted((g["s"], g["agg0"], g["agg1"], g["agg2"]) for g in grouped) == sorted(
        (r["s"], r["count_all"], r["x_max"], r["t_min"]) for r in times_as_integers(want).to_pylist()), grouped
    assert 0 < st["rows_in"] < ROWS, st
    for _, st in scans[:2]:   # 4 rows on up to 4 pages of 1,000, then 12 on up to 12
        assert 0 < st["rows_in"] <= st["index_rows"] * 1000 and st["read_bytes"] < whole["read_bytes"], st
    assert scans[2][1]["rows_in"] == ROWS, scans[2][1]
    _, (rows, st), (_, whole) = session(("index", uneven, "k"), ("scan", uneven, reqs[0]), ("scan", uneven, plain))
    assert rows == _expected(table, reqs[0]) and 0 < st["rows_in"] < ROWS and st["read_bytes"] < whole["read_bytes"], st
