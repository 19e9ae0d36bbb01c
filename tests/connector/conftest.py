"""Connector tests: the C++ harness and the test vectors (the shared stack fixtures come from
tests/conftest.py)."""
import hashlib
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from rados_deploy import objclass
from sae.connector.protocol import decode_request

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors" / "scan"


@pytest.fixture(scope="session")
def vectors():
    """(requests, results) from tests/vectors/scan."""
    return (json.loads((VECTORS / "requests.json").read_text()),
            json.loads((VECTORS / "results.json").read_text()))


@pytest.fixture(scope="session")
def harness():
    """The scan core (rados_deploy's :func:`~rados_deploy.objclass.core_sources`) compiled with
    the C++ harness (cached under $SAE_HOME by source hash and by the pyarrow library directory
    it links against by path, which another checkout's environment has elsewhere)."""
    sources = {**objclass.core_sources(), "harness.cc": (ROOT / "tests" / "connector" / "harness.cc").read_text()}
    lib = pa.get_library_dirs()[0]
    key = hashlib.sha256(repr((sorted(sources.items()), lib)).encode()).hexdigest()[:16]
    out = Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "connector" / f"harness-{key}"
    if not out.exists():
        src = out.with_name(out.name + ".src")
        src.mkdir(parents=True, exist_ok=True)
        for name, text in sources.items():
            (src / name).write_text(text)
        tmp = out.with_suffix(".tmp")
        subprocess.run(["g++", "-std=c++20", "-O1", f"-I{src}", f"-I{pa.get_include()}", "-o", str(tmp),
                        *(str(src / n) for n in sorted(sources) if n.endswith(".cc")), f"-L{lib}",
                        "-l:libparquet.so.2600", "-l:libarrow_compute.so.2600", "-l:libarrow.so.2600",
                        f"-Wl,-rpath,{lib}"], check=True)
        tmp.replace(out)

    def run(*commands: str) -> list[str]:
        r = subprocess.run([str(out)], input="\n".join(commands) + "\n", capture_output=True, text=True, errors="replace",
                           check=True)
        return r.stdout.splitlines()
    return run


@pytest.fixture(scope="session")
def java_protocol():
    """Runs tests/connector/ProtocolVectors.java (the connector's Java encoder, filter translation
    and reply decoder, with ProtocolSpec.java rendered from the spec as the jar build does),
    compiled against Spark's jars (cached by source hash): ``run(*args) -> stdout lines``."""
    import pyspark
    from sae.connector import spec_java
    jars = Path(pyspark.__file__).parent / "jars"
    jvm = ROOT / "experiments" / "sae" / "connector" / "jvm" / "sae" / "connector"
    sources = [ROOT / "tests" / "connector" / "ProtocolVectors.java", jvm / "Protocol.java", jvm / "Filters.java"]
    generated = spec_java.render()
    key = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + generated.encode()).hexdigest()[:16]
    out = Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "connector" / f"java-vectors-{key}"
    if not out.exists():
        tmp = out.with_suffix(".tmp")
        spec = tmp.with_name(tmp.name + "-src") / spec_java.FILE
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(generated)
        subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", f"{jars}/*", "-d", str(tmp),
                        *map(str, sources), str(spec)], check=True, capture_output=True)
        tmp.replace(out)

    def run(*args: str) -> list[str]:
        r = subprocess.run(["java", "-cp", f"{out}:{jars}/*", "ProtocolVectors", *args],
                           capture_output=True, text=True, check=True)
        return r.stdout.splitlines()
    return run


@pytest.fixture(scope="session")
def java_vectors(java_protocol):
    """``name -> output`` of ProtocolVectors on the request vectors: "<vector> <hex>",
    "spark:<case> <hex>|kept" and "const:<name> <value>" lines."""
    return dict(line.split(" ", 1) for line in java_protocol(str(VECTORS / "requests.json")))


def _same(a, b, rel: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isnan(a) == math.isnan(b) and (math.isnan(a) or a == b or bool(rel) and a == pytest.approx(b, rel=rel))
    return type(a) is type(b) and a == b


def _assert_rows(table: pa.Table, v: dict) -> None:
    got, expected = table.to_pylist(), v["rows"]
    req = decode_request(bytes.fromhex(v["hex"]))
    # in any order: an aggregate's groups (by their keys), a top-k's rows (by every column)
    keys = [c for c in v["columns"] if not re.fullmatch(r"agg\d+", c)] if req.aggregates else \
        v["columns"] if req.order_by else []
    if keys:
        def order(row):
            return tuple((row[k] is None, row[k] != row[k], 0 if row[k] is None or row[k] != row[k] else row[k])
                         for k in keys)   # NULL, then NaN (x != x), then the value
        got, expected = sorted(got, key=order), sorted(expected, key=order)
    assert len(got) == len(expected), v["name"]
    rel = 1e-9 if req.aggregates else 0   # sums may add in another order; nothing else is computed
    for a, b in zip(got, expected):
        assert a.keys() == b.keys() and all(_same(a[k], b[k], rel) for k in a), (v["name"], a, b)


@pytest.fixture(scope="session")
def assert_rows():
    """``assert_rows(table, v)``: ``table`` holds the rows of result vector ``v``: an aggregate's
    groups and a top-k's rows in any order, aggregated floats within 1e-9 relative (sums may add
    in another order), other floats exactly, NaN equal to NaN."""
    return _assert_rows
