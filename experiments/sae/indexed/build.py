"""Build the indexed cache's jar: the Java sources under ``jvm/`` compiled with ``javac`` against
a Spark installation's own jars (the installed pyspark's by default, so no second copy of any
library reaches the class path; on a cluster, the driver node's: :func:`cluster_jar`), cached by
source digest and Spark version."""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from metareserve.errors import OperationalError, UsageError

_JVM = Path(__file__).parent / "jvm"

QUICK = "-XX:TieredStopAtLevel=1"
"""A short-lived JVM compiling with C1 only (sae's ``spark.jit=quick``): a compiler or a check that
runs for seconds spends about half its CPU in C2 otherwise (javac: 3.8 CPU-s against 1.7)."""
JAVAC = ("javac", f"-J{QUICK}", "--release", "17", "-nowarn", "-proc:none")
"""javac as sae's Java builds run it: Java 17 class files, C1 only, and no annotation processing
(none of the sources has any; looking for processors opens every jar of Spark's class path)."""


def cache_dir() -> Path:
    """Where built jars are kept (``$SAE_HOME/indexed``)."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "indexed"


def jvm_sources() -> list[Path]:
    """The Java sources of package ``sae.indexed``."""
    return sorted(_JVM.rglob("*.java"))


def spark_jars() -> Path:
    """The jars of the installed pyspark (its Spark)."""
    import pyspark
    return Path(pyspark.__file__).parent / "jars"


def cluster_jar(spark, *, out_dir: Path | None = None, stage: str = "indexed build") -> tuple[Path, bool]:
    """The jar of ``sae.indexed`` compiled by spark_deploy on the driver node of ``spark`` (a
    started :class:`spark_deploy.SparkCluster`) against that node's Spark jars, cached under
    ``out_dir`` (default :func:`cache_dir`) by source digest and the deployment's Spark; returns
    (local jar path, whether built now). What a Spark application on the cluster ships."""
    h = _sources_digest(jvm_sources())
    h.update((spark.options.spark_source or spark.options.version).encode())
    out = Path(out_dir or cache_dir()) / f"sae-indexed-cluster-{h.hexdigest()[:16]}.jar"
    if out.exists():
        return out, False
    return spark.compile_jar(_JVM, out, stage=stage), True


def jar(*, jars: Path | None = None, out_dir: Path | None = None) -> Path:
    """The jar of ``sae.indexed`` compiled against the Spark jars in ``jars`` (default
    :func:`spark_jars`), built once per source digest and Spark under ``out_dir`` (default
    :func:`cache_dir`); put it on a session with ``.config("spark.jars", str(jar()))``."""
    return compile_jar(jvm_sources(), "sae-indexed", jars=jars, out_dir=out_dir)


def compile_jar(sources: list[Path], name: str, *, jars: Path | None = None, out_dir: Path | None = None,
                classpath: tuple[Path, ...] = ()) -> Path:
    """``sources`` (Java files) compiled with :data:`JAVAC` against the Spark jars in ``jars``
    (default :func:`spark_jars`) and the jars in ``classpath`` (e.g. :func:`jar`, for classes
    using the index's) into ``out_dir/<name>-<digest>.jar`` (default :func:`cache_dir`), the
    digest of the sources, of Spark's jar names (its and Scala's versions) and of ``classpath``'s
    names (built jars name their digest); built only when that jar is missing, once at a time
    (processes at the same time wait for the first one's build)."""
    jars = Path(jars) if jars else spark_jars()
    if not any(jars.glob("spark-core_*.jar")):
        raise UsageError(f"indexed build: {jars} holds no spark-core jar; "
                         "give the jars directory of a Spark installation")
    h = _sources_digest(sources)
    h.update("\0".join(sorted(p.name for p in jars.glob("spark-*.jar"))).encode())
    h.update("\0".join(Path(p).name for p in classpath).encode())
    out = Path(out_dir or cache_dir()) / f"{name}-{h.hexdigest()[:16]}.jar"
    if out.exists():
        return out
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise UsageError(f"indexed build: '{tool}' not found; install a JDK 17 "
                             "(./setup.sh installs openjdk-17-jdk-headless)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():   # built by another process while this one waited
            return out
        with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:   # same disk: atomic rename
            classes, built = Path(tmp) / "classes", Path(tmp) / out.name
            _run([*JAVAC, "-cp", ":".join([f"{jars}/*", *map(str, classpath)]), "-d", str(classes),
                  *map(str, sources)])
            _run(["jar", f"-J{QUICK}", "cf", str(built), "-C", str(classes), "."])
            built.replace(out)
    return out


def _sources_digest(sources: list[Path]):
    """A sha256 of the Java ``sources`` (names and contents), to be updated with the Spark they are built against."""
    h = hashlib.sha256()
    for p in sorted(sources):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h


def _run(argv: list[str]) -> None:
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        errors = [line for line in (r.stderr or r.stdout).splitlines() if ": error: " in line]
        raise OperationalError(f"indexed build: '{argv[0]}' exited {r.returncode}: "
                               f"{errors[0] if errors else (r.stderr or r.stdout).strip()[-300:]}")
