"""Where Spark comes from: Java packages, and a Spark tarball fetched once on the controller."""
from __future__ import annotations

import os
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from metareserve import runtime, validate
from metareserve.errors import OperationalError, SaeError, UsageError
from metareserve.log import node_log

from . import class_sharing, maven, remote

JAVA_PACKAGES = ("openjdk-17-jdk-headless",)
TARBALL_ROOT = f"{runtime.SOFTWARE_ROOT}/spark"
_SUFFIX = re.compile(r"\.(tgz|tar\.gz|tar)$")
ARROW_COMPRESSION_SINCE = (4, 1)
"""The first Spark release shipping Arrow's compression module (LZ4, ZSTD): spark-sql depends on
arrow-compression from 4.1.0 in its Maven poms; 4.0.x and 3.x do not."""


def ships_arrow_compression(version: str) -> bool | None:
    """Whether Spark ``version`` (``4.1.0``, ``4.0.1``, ``4.2.0.dev1``) ships Arrow's compression
    module, by its leading release numbers; None when it does not start with one."""
    numbers = re.match(r"[0-9]+(?:\.[0-9]+)*", str(version))
    return tuple(int(n) for n in numbers.group().split(".")) >= ARROW_COMPRESSION_SINCE if numbers else None


SOURCE_SCHEMES = ("http://", "https://", "file://")
"""Where a Spark tarball may come from besides a path (what :func:`fetch` reads)."""


def tarball_name(source: str) -> str:
    """Distribution name of a tarball path/URL (a path on the controller, ``file://``, ``http://``
    or ``https://``): its file name without the archive suffix."""
    if not isinstance(source, str) or ("://" in source and not source.startswith(SOURCE_SCHEMES)):
        raise UsageError(f"spark_source {source!r}: give a path on the controller or an http(s):// or file:// URL")
    base = source.rstrip("/").rsplit("/", 1)[-1]
    if not _SUFFIX.search(base):
        raise UsageError(f"spark_source {source!r}: expected a .tgz, .tar.gz or .tar Spark distribution")
    return validate.name(_SUFFIX.sub("", base), f"spark_source {source!r}: distribution name")


def tarball_home(source: str) -> str:
    """SPARK_HOME of an unpacked tarball on nodes."""
    return f"{TARBALL_ROOT}/{tarball_name(source)}"


def cache_dir() -> Path:
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "spark"


def fetch(source: str, *, stage: str) -> Path:
    """A local copy of the tarball: the path itself, or a download cached on the controller."""
    name = tarball_name(source)
    if "://" not in source or source.startswith("file://"):
        path = Path(source.removeprefix("file://")).expanduser()
        if not path.is_file():
            raise UsageError(f"spark_source {source}: file not found on the controller")
        return path
    dest = cache_dir() / (source.rstrip("/").rsplit("/", 1)[-1])
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    node_log(None, stage, f"downloading {source}")
    tmp = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(source, timeout=60) as r, open(tmp, "wb") as f:
            shutil.copyfileobj(r, f, 1 << 20)
    except (urllib.error.URLError, OSError) as e:
        tmp.unlink(missing_ok=True)
        raise OperationalError(f"[controller {stage}] cannot download {source}: "
                               f"{getattr(e, 'reason', e)}; check the URL or pass a local path") from None
    tmp.replace(dest)
    node_log(None, stage, f"cached {name} in {dest}")
    return dest


def install_tarball(spark, nodes: list[str], *, stage: str) -> None:
    """Push the tarball to ``nodes`` and unpack it under /opt/sae/spark/<name> (locked, marked complete)."""
    if not nodes:
        return
    local = fetch(spark.options.spark_source, stage=f"{stage} fetch")
    incoming = f"{TARBALL_ROOT}/.incoming/{local.name}"
    try:
        spark.cluster.put(str(local), incoming, nodes=nodes, stage=f"{stage} push")
        spark.cluster.call(remote, "unpack_tarball", incoming, tarball_home(spark.options.spark_source),
                           nodes=nodes, stage=f"{stage} unpack", timeout=1800)
    except SaeError:   # a tarball that did not unpack leaves no copy on the nodes
        spark.cluster.run(["rm", "-f", "--", incoming], nodes=nodes, stage=f"{stage} cleanup", check=False)
        raise


def software_paths(spark, node: str) -> list[str]:
    """Shared software a purge removes on ``node``: the node venv, the Maven jars, and the tarball copy if any."""
    venv = spark.python(node).rsplit("/bin/", 1)[0]
    eid = venv.rsplit("/", 1)[-1]
    paths = [venv, f"{runtime.SOFTWARE_ROOT}/wheels/{eid}", class_sharing.archive_dir(spark.spark_home(node)),
             *(p for j in maven.parse_all(spark.options.maven_jars) for p in (j.node_path, f"{j.node_path}.sha1"))]
    if spark.options.spark_source:
        home = tarball_home(spark.options.spark_source)
        name = spark.options.spark_source.rstrip("/").rsplit("/", 1)[-1]
        paths += [home, f"{home}.lock", f"{TARBALL_ROOT}/.incoming/{name}"]
    return paths
