"""The scan protocol on both sides, without Ceph: the Python codec and the C++ core (through the
harness) against the shared vectors in tests/vectors/scan."""
import errno
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sae.connector.protocol import ProtocolError, Request, decode_error, decode_request, to_expression

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "scan"



def test_python_parses_every_vector(vectors):
    requests, _ = vectors
    for v in requests:
        data = bytes.fromhex(v["hex"])
        if "error" in v:
            with pytest.raises(ProtocolError):
                decode_request(data)
            continue
        req = decode_request(data)
        p = v["parse"]
        assert (req.columns, req.filter, req.codec, req.batch_rows, req.max_reply, req.flags) == \
            (p["columns"], p["filter"], p["codec"], p["batch_rows"], p["max_reply"], p["flags"]), v["name"]
        assert req.encode() == data, v["name"]


def test_java_encodes_every_vector_alike(vectors, java_vectors):
    requests, _ = vectors
    good = [v for v in requests if "parse" in v]
    assert len(good) > 10
    for v in good:
        assert java_vectors[v["name"]] == v["hex"], v["name"]


def test_java_translates_spark_filters_to_the_vectors(vectors, java_vectors):
    """Spark filters the class runs exactly become the vector's bytes; the others stay in Spark."""
    by_name = {v["name"]: v["hex"] for v in vectors[0]}
    spark = {k[len("spark:"):]: h for k, h in java_vectors.items() if k.startswith("spark:")}
    for name, hexed in spark.items():
        if name.endswith("_is_kept"):
            assert hexed == "kept", name
        else:
            assert hexed == by_name[name], name
    assert len(spark) == 9


def test_cxx_parses_every_vector_alike(vectors, harness):
    requests, _ = vectors
    lines = harness(*(f"parse {v['hex']}" for v in requests))
    for v, line in zip(requests, lines):
        if "error" in v:
            code = int(line.split()[1])
            assert line.startswith("err ") and code == getattr(errno, v["error"]), (v["name"], line)
            continue
        p = v["parse"]
        _, flags, codec, rows, max_reply, cols, expr = line.split(" ", 6)
        assert (int(flags), codec, int(rows), int(max_reply)) == \
            (p["flags"], p["codec"], p["batch_rows"] or 65536, p["max_reply"]), v["name"]
        assert cols == "[" + ",".join(p["columns"]) + "]", v["name"]
        assert expr == (p["expression"] or "-"), v["name"]


def test_cxx_schema_is_the_files_arrow_schema(harness, tmp_path):
    sample = VECTORS / "sample.parquet"
    line, bad = harness(f"schema {sample} {tmp_path / 'schema'}", f"schema {__file__} {tmp_path / 'x'}")
    assert line.startswith("ok "), line
    reader = pa.ipc.open_stream(pa.py_buffer((tmp_path / "schema").read_bytes()))
    assert reader.schema.equals(pq.read_schema(sample)) and reader.read_all().num_rows == 0
    assert bad.startswith("err 74 "), bad


def test_cxx_scan_results_match_vectors(vectors, harness, tmp_path):
    _, results = vectors
    sample = VECTORS / "sample.parquet"
    lines = harness(*(f"scan {sample} {v['hex']} {tmp_path / v['name']}" for v in results))
    for v, line in zip(results, lines):
        if "errno" in v:
            assert line.startswith(f"err {v['errno']} "), (v["name"], line)
            continue
        assert line.startswith("ok "), (v["name"], line)
        table = pa.ipc.open_stream(pa.py_buffer((tmp_path / v["name"]).read_bytes())).read_all()
        assert table.column_names == v["columns"], v["name"]
        assert table.to_pylist() == v["rows"], v["name"]


def test_vectors_agree_with_pyarrow_filtering(vectors):
    """The expected rows are what pyarrow computes client-side (the no-offload path)."""
    _, results = vectors
    table = pq.read_table(VECTORS / "sample.parquet")
    for v in results:
        if "errno" in v:
            continue
        req = decode_request(bytes.fromhex(v["hex"]))
        t = table.filter(to_expression(req.filter)) if req.filter else table
        assert t.select(v["columns"]).to_pylist() == v["rows"], v["name"]


def test_batches_are_bounded(harness, tmp_path):
    req = Request(columns=["id"], batch_rows=7)
    harness(f"scan {VECTORS / 'sample.parquet'} {req.encode().hex()} {tmp_path / 'o'}")
    batches = list(pa.ipc.open_stream(pa.py_buffer((tmp_path / "o").read_bytes())))
    assert len(batches) == 6 and max(b.num_rows for b in batches) == 7


def test_not_parquet_is_an_error(harness, tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"hello" * 100)
    line, = harness(f"scan {junk} {Request().encode().hex()} {tmp_path / 'o'}")
    assert line.startswith(f"err {errno.EBADMSG} object is not a Parquet file")


def test_mutated_requests_never_crash_the_core(vectors, harness):
    """Thousands of bit-flipped, truncated and extended requests: each parses or fails cleanly."""
    requests, _ = vectors
    good = [v for v in requests if "parse" in v]
    lines = harness(*(f"fuzz {VECTORS / 'sample.parquet'} {v['hex']} 400 {i}" for i, v in enumerate(good)))
    assert len(lines) == len(good) and all(line.startswith("ok ") for line in lines)
    assert sum(int(line.split()[3]) for line in lines) > 0   # some mutations were rejected ...
    assert sum(int(line.split()[2]) for line in lines) > 0   # ... and some still scanned


def test_error_frame_roundtrip():
    frame = b"SAEE" + (22).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"oops!"
    err = decode_error(frame)
    assert (err.errno, err.message) == (22, "oops!")
    assert decode_error(b"\xff\xff\xff\xff....") is None


def test_encoder_rejects_what_it_cannot_encode():
    with pytest.raises(ValueError):
        Request(filter={"cmp": "<", "column": "x", "value": object()}).encode()
    with pytest.raises(ValueError):
        Request(codec="snappy").encode()
