"""The class's scan as a client library (rados_deploy's ``libsae_scan.so``, mode auto's scan of an
object read whole), built as rados_deploy builds it on a node and called through its C function:
every test vector gives the reply the class's core gives (the C++ harness), byte for byte after
the stats, errors as the same error frames; threads calling at once get the same replies; bad
requests and objects are error frames, never a crash."""
import ctypes
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rados_deploy import objclass
from sae.connector.protocol import Request, decode_error, decode_reply

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "scan"


@pytest.fixture(scope="module")
def scan(scan_library):
    """``scan(object bytes, request bytes) -> reply bytes`` through the library's C call."""
    lib = ctypes.CDLL(str(scan_library / objclass.LIBRARY_FLAGS["output"]))
    out_ptr = ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8))
    lib.sae_scan_local.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64, out_ptr,
                                   ctypes.POINTER(ctypes.c_int64)]
    lib.sae_scan_free.argtypes = [ctypes.POINTER(ctypes.c_uint8)]

    def run(data: bytes, request: bytes) -> bytes:
        reply, size = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_int64()
        assert lib.sae_scan_local(data, len(data), request, len(request), ctypes.byref(reply), ctypes.byref(size)) == 0
        try:
            return ctypes.string_at(reply, size.value)
        finally:
            lib.sae_scan_free(reply)
    return run


def test_every_vector_gives_the_classs_reply(vectors, harness, scan, tmp_path):
    _, results = vectors
    sample = VECTORS / "sample.parquet"
    lines = harness(*(f"scan {sample} {v['hex']} {tmp_path / v['name']}" for v in results))
    data = sample.read_bytes()
    for v, line in zip(results, lines):
        got = scan(data, bytes.fromhex(v["hex"]))
        if line.startswith("err "):
            err = decode_error(got)
            assert err is not None and line == f"err {err.errno} {err.message}", (v["name"], line, err)
            continue
        mine, core = decode_reply(got), decode_reply((tmp_path / v["name"]).read_bytes())
        assert mine.body == core.body and bytes(mine.stream) == bytes(core.stream), v["name"]
        assert mine.stats["rows_in"] == core.stats["rows_in"] and mine.stats["wall_ns"] > 0, v["name"]


def test_threads_calling_at_once_get_the_same_replies(vectors, scan):
    _, results = vectors
    data = (VECTORS / "sample.parquet").read_bytes()
    good = [bytes.fromhex(v["hex"]) for v in results if "errno" not in v]

    def body(request: bytes) -> bytes:
        return bytes(decode_reply(scan(data, request)).stream)
    alone = [body(r) for r in good]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(body, good * 8))
    assert together == alone * 8


def test_bad_requests_and_objects_are_error_frames(scan):
    data = (VECTORS / "sample.parquet").read_bytes()
    request = Request(columns=["id"]).encode()
    cases = {"bad magic": (data, b"NOPE" + request[4:]), "truncated": (data, request[:9]), "empty": (data, b""),
             "not parquet": (b"not a parquet file at all", request), "empty object": (b"", request),
             "unknown column": (data, Request(columns=["nope"]).encode())}
    errors = {name: decode_error(scan(*args)) for name, args in cases.items()}
    assert all(e is not None and e.message and "\n" not in e.message for e in errors.values()), errors
    assert errors["bad magic"].errno == 93 and errors["not parquet"].errno == 74, errors
    assert errors["unknown column"].errno == 22 and "nope" in errors["unknown column"].message, errors
