"""Compile a jar against a deployment's own Spark jars, on its driver node (where the JDK that
``install`` put there and the Spark version the jobs run with both are)."""
from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

from metareserve.errors import RemoteError


def compile_jar(spark, sources: Path, out: Path, *, classpath=(), stage: str = "spark compile") -> Path:
    """Compile the ``*.java`` files under ``sources`` (resources under ``sources/META-INF``
    are packed too) with ``javac --release 17`` on ``spark``'s driver node, against
    ``$SPARK_HOME/jars/*`` and ``classpath``, and fetch the jar to ``out``. Commands go to the
    node as argument lists (no shell), so paths may hold any character."""
    node, sources = spark.driver_node, Path(sources)
    work = f"{spark.paths(node).work}/jar-{out.stem}"
    files = sorted(p.relative_to(sources).as_posix() for p in sources.rglob("*") if p.is_file())
    cluster = spark.cluster
    cluster.run(["rm", "-rf", work], nodes=[node], stage=stage)
    for rel in files:
        cluster.write(f"{work}/src/{rel}", (sources / rel).read_text(), nodes=[node], stage=stage)
    cp = ":".join([f"{spark.spark_home(node)}/jars/*", *classpath])   # javac expands the '*'
    java = [f"{work}/src/{rel}" for rel in files if rel.endswith(".java")]
    javac = ["javac", "--release", "17", "-nowarn", "-cp", cp, "-d", f"{work}/classes", *java]
    res = cluster.run(javac, nodes=[node], stage=stage, timeout=600, check=False)[node]
    if isinstance(res, BaseException):   # the node, not javac, failed
        raise res
    if res["rc"] != 0:
        raise RemoteError(node, stage, f"'{javac[0]}' exited {res['rc']}", command=shlex.join(javac),
                          exit_code=res["rc"], stderr_tail=_first_error(res["stderr"] or res["stdout"]),
                          hint="'spark-deploy install' puts the JDK on every node; run it first"
                          if res["rc"] == 127 else "")
    resources = ["-C", f"{work}/src", "META-INF"] if (sources / "META-INF").is_dir() else []
    cluster.run(["jar", "cf", f"{work}/{out.name}", "-C", f"{work}/classes", ".", *resources],
                nodes=[node], stage=stage)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".fetch-") as tmp:   # same disk: atomic rename
        cluster.get(f"{work}/{out.name}", tmp, nodes=[node], stage=stage)
        (Path(tmp) / node / out.name).replace(out)
    return out


def _first_error(output: str) -> str:
    """javac's first error with the source line it names (its last line only counts them)."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if ": error: " in line:
            return " ".join(part.strip() for part in lines[i:i + 2])
    return output
