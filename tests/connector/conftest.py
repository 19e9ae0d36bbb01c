"""Connector tests: the C++ harness and the test vectors (the shared stack fixtures come from
tests/conftest.py)."""
import fcntl
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

from rados_deploy import objclass, remote
from sae.connector.protocol import decode_request, times_as_integers
from sae.indexed.build import JAVAC, QUICK

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors" / "scan"
JVM = ROOT / "experiments" / "sae" / "connector" / "jvm" / "sae" / "connector"
JNA = "/usr/share/java/jna.jar"   # Debian's libjna-java (setup.sh): Native.java's JNA


@pytest.fixture(scope="session")
def vectors():
    """(requests, results) from tests/vectors/scan."""
    return (json.loads((VECTORS / "requests.json").read_text()),
            json.loads((VECTORS / "results.json").read_text()))


def _cached(name: str, sources: dict[str, str], build, also: str = "") -> Path:
    """``$SAE_HOME/connector/<name>-<hash of sources and also>``, made by ``build(sources dir,
    output)`` unless made before: under a lock beside it, so test sessions (and the workers of
    one) at the same time build it once; ``sources`` (path -> text) are written out for the build."""
    key = hashlib.sha256(repr((sorted(sources.items()), also)).encode()).hexdigest()[:16]
    out = Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "connector" / f"{name}-{key}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            with tempfile.TemporaryDirectory(dir=out.parent, prefix=f"{out.name}.") as tmp:
                for path, text in sources.items():
                    (Path(tmp) / "src" / path).parent.mkdir(parents=True, exist_ok=True)
                    (Path(tmp) / "src" / path).write_text(text)
                build(Path(tmp) / "src", Path(tmp) / "out")
                (Path(tmp) / "out").replace(out)
    return out


@pytest.fixture(scope="session")
def scan_library() -> Path:
    """The directory of the class's scan built as a client library (rados_deploy's
    ``libsae_scan.so``: the scan core and the C call mode auto uses), as a node builds it, with its
    sources in ``src/`` (cached under $SAE_HOME by build key). In one unit, as a 1-core node
    builds it: the pure tier keeps every core busy, and each unit parses Arrow's headers again
    (-O2: 15 CPU-s in one unit, 19.5 in two)."""
    files = objclass.library_sources()
    key = objclass.build_key(files, pa.__version__, objclass.LIBRARY_FLAGS)
    root = Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "connector" / f"scanlib-{key}"
    remote.build_class(str(root), files, sys.executable, objclass.arrow_libs(pa.__version__), objclass.LIBRARY_FLAGS,
                       cpus=1)
    return root


@pytest.fixture(scope="session")
def harness(scan_library):
    """tests/connector/harness.cc linked with the scan core of :func:`scan_library` (the build
    the Spark nodes and, but for the C call, the OSDs run), cached under $SAE_HOME by source and
    library."""
    lib = pa.get_library_dirs()[0]

    def build(src: Path, out: Path) -> None:
        subprocess.run(["g++", "-std=c++20", "-O1", f"-I{scan_library / 'src'}", f"-I{pa.get_include()}", "-o", str(out),
                        str(src / "harness.cc"), f"-L{scan_library}", f"-l:{objclass.LIBRARY_FLAGS['output']}",
                        f"-L{lib}", "-l:libparquet.so.2600", "-l:libarrow_compute.so.2600", "-l:libarrow.so.2600",
                        f"-Wl,-rpath,{scan_library}:{lib}"], check=True)
    out = _cached("harness", {"harness.cc": (ROOT / "tests" / "connector" / "harness.cc").read_text()}, build,
                  also=f"{scan_library} {lib}")

    def run(*commands: str) -> list[str]:
        r = subprocess.run([str(out)], input="\n".join(commands) + "\n", capture_output=True, text=True, errors="replace",
                           check=True)
        return r.stdout.splitlines()
    return run


CHECKS = [ROOT / "tests" / "connector" / f"{c}.java" for c in ("ProtocolVectors", "OptionsCheck", "PushbackRule",
                                                                  "WriteCheck")]
"""The Java checks of the connector's code that need no cluster, each a main class run by a test."""
CHECKED = [JVM / f"{c}.java" for c in ("Protocol", "Filters", "Options", "ArrowTypes", "Native", "Pushback",
                                       "ObjectFiles", "Manifest", "CephFiles")]
"""The data source's sources the checks use."""


def _java_checks():
    """:data:`CHECKS` with :data:`CHECKED` (and the sources the jar build renders:
    ``sae.connector.spec_java.sources()``) compiled in one javac (sae's builds' ``JAVAC``: a javac
    costs ~1.5 CPU-s before its first source) against Spark's jars and JNA, cached by source hash:
    ``run(main, *args, **subprocess.run's keywords) -> stdout lines``, in a JVM compiling with C1
    only (``QUICK``: these checks run for a second or two)."""
    import pyspark
    from sae.connector import spec_java
    classpath = f"{Path(pyspark.__file__).parent / 'jars'}/*:{JNA}"
    texts = {**{f"given/{p.name}": p.read_text() for p in CHECKS + CHECKED}, **spec_java.sources()}

    def build(src: Path, out: Path) -> None:
        subprocess.run([*JAVAC, "-cp", classpath, "-d", str(out), *(str(src / n) for n in texts)], check=True,
                       capture_output=True)
    out = _cached("java-checks", texts, build)

    def run(main: str, *args: str, **kwargs) -> list[str]:
        r = subprocess.run(["java", QUICK, "-cp", f"{out}:{classpath}", main, *args], capture_output=True, text=True,
                           check=True, **kwargs)
        return r.stdout.splitlines()
    return run


@pytest.fixture(scope="session")
def java_checks():
    """:func:`_java_checks`: the checks compiled once (across sessions and workers)."""
    return _java_checks()


@pytest.fixture(scope="session")
def java_protocol(java_checks):
    """Runs tests/connector/ProtocolVectors.java (the connector's Java encoder, filter translation
    and reply decoder, with ProtocolSpec.java rendered from the spec as the jar build does):
    ``run(*args) -> stdout lines``."""
    return lambda *args: java_checks("ProtocolVectors", *args)


@pytest.fixture(scope="session")
def java_options(java_checks):
    """The data source's option checks (Options.java, with OptionSpec.java and Mode.java rendered
    as the jar build renders them) run by tests/connector/OptionsCheck.java on option sets:
    ``run(option sets) -> [None (taken) or the refusal]``."""
    def check(option_sets: list[dict]) -> list[str | None]:
        lines = java_checks("sae.connector.OptionsCheck",
                            input="\n".join("\t".join(f"{k}={v}" for k, v in o.items()) for o in option_sets) + "\n")
        return [None if line == "ok" else line.removeprefix("refused ") for line in lines]
    return check


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
    got, expected = times_as_integers(table).to_pylist(), v["rows"]
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
