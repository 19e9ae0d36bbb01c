"""JVM jars from Maven Central on the Spark nodes (``SparkOptions.maven_jars``), for the
applications that put them on their class path (:meth:`SparkCluster.classpath_conf`).

The controller fetches the jars it lacks with one Maven run (``mvn dependency:resolve``, strict
checksums, cached in its local repository, ``~/.m2``) and checks each against the ``.sha1`` Maven
Central published beside it; nodes (which may not reach Maven Central: a local cluster's hosts do not) get it pushed
once and place it under ``/opt/sae/maven/<group path>/<artifact>/<version>/`` after checking the
same digest, under a lock, so a jar present and intact is never fetched or pushed again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from metareserve import runtime
from metareserve.errors import OperationalError, UsageError
from metareserve.log import node_log

ROOT = f"{runtime.SOFTWARE_ROOT}/maven"
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)

HADOOP_AWS = "3.5.0"
"""hadoop-aws of the Hadoop client jars pyspark 4.3.0 ships (``jars/hadoop-client-api-3.5.0.jar``)."""
AWS_SDK = "2.35.4"
"""The AWS SDK v2 hadoop-aws 3.5.0 is built and tested with (``aws-java-sdk-v2.version`` of
hadoop-project 3.5.0)."""
SPARK_HADOOP_CLOUD = "4.0.0"
"""spark-hadoop-cloud (the S3A committers' Spark bindings, ``PathOutputCommitProtocol`` and
``BindingParquetOutputCommitter``): Maven Central serves no 4.3.0, 4.2.0 or 4.1.0 of it; 4.0.0's
two classes run on Spark 4.3.0 (tests/sae_tests/test_writers.py)."""
_SDK_MODULES = ("apache-client", "arns", "auth", "aws-core", "aws-query-protocol", "aws-xml-protocol", "checksums",
                "checksums-spi", "endpoints-spi", "http-auth", "http-auth-aws", "http-auth-spi", "http-client-spi",
                "identity-spi", "json-utils", "metrics-spi", "profiles", "protocol-core", "regions", "retries",
                "retries-spi", "s3", "s3-transfer-manager", "sdk-core", "third-party-jackson-core", "utils")
S3A = (f"org.apache.hadoop:hadoop-aws:{HADOOP_AWS}",
       *(f"software.amazon.awssdk:{m}:{AWS_SDK}" for m in _SDK_MODULES),
       "org.reactivestreams:reactive-streams:1.0.4",
       "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1",
       f"org.apache.spark:spark-hadoop-cloud_2.13:{SPARK_HADOOP_CLOUD}")
"""Hadoop's S3A with the AWS SDK v2 modules it loads (individual modules, not the 600 MB
``bundle``), the analytics accelerator (its stream factory is loaded whatever
``fs.s3a.input.stream.type``) and the committers' Spark bindings. Found by running: of Maven's
resolution of ``s3`` and ``s3-transfer-manager`` (less the netty, Apache HTTP, commons and slf4j
jars Spark ships), the jars whose classes the driver and executors of test_writers.py loaded
(``-Xlog:class+load``) writing through S3A's three committers and reading back; never loaded,
left out: ``netty-nio-client``, ``eventstream`` and ``http-auth-aws-eventstream`` (S3 Select),
``utils-lite``, ``annotations``."""


@dataclasses.dataclass(frozen=True)
class MavenJar:
    """One jar by its coordinates ``group:artifact:version``."""

    group: str
    artifact: str
    version: str

    @classmethod
    def parse(cls, coordinates, what: str = "maven_jars") -> "MavenJar":
        parts = coordinates.split(":") if isinstance(coordinates, str) else []
        if len(parts) != 3 or not all(_PART.fullmatch(p) and ".." not in p for p in parts):
            raise UsageError(f"{what}: {coordinates!r} is not a Maven jar (group:artifact:version, "
                             f"e.g. org.apache.hadoop:hadoop-aws:3.5.0)")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def relpath(self) -> str:
        """``<group path>/<artifact>/<version>/<artifact>-<version>.jar`` (Maven's layout)."""
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.artifact}-{self.version}.jar"

    @property
    def node_path(self) -> str:
        """Where the jar lives on every node."""
        return f"{ROOT}/{self.relpath}"


def parse_all(coordinates, what: str = "maven_jars") -> list[MavenJar]:
    """Coordinates as :class:`MavenJar` (one UsageError naming the first bad one)."""
    if not isinstance(coordinates, (list, tuple)):
        raise UsageError(f"{what} must be a list of Maven coordinates (group:artifact:version)")
    return [MavenJar.parse(c, what) for c in coordinates]


def local_repository() -> Path:
    """The controller's Maven repository (``$SAE_MAVEN_REPO``, default ``~/.m2/repository``)."""
    return Path(os.environ.get("SAE_MAVEN_REPO", Path.home() / ".m2" / "repository"))


def fetch(jars: list[MavenJar], *, stage: str) -> dict[MavenJar, tuple[Path, str]]:
    """Each jar in the controller's Maven repository, the missing ones fetched by one Maven run
    (:func:`_resolve`): jar → (path, sha1 Maven Central published). A jar Maven could not fetch, or
    whose bytes do not match, is an OperationalError naming it."""
    repo = local_repository()
    missing = [j for j in jars if not (repo / j.relpath).is_file() or not Path(f"{repo / j.relpath}.sha1").is_file()]
    if missing:
        node_log(None, stage, f"fetching {len(missing)} jar(s) with Maven: {', '.join(map(str, missing))}")
        _resolve(missing, repo, stage=stage)
    return {j: (repo / j.relpath, check_sha1(j, repo / j.relpath, stage=stage)) for j in jars}


def _resolve(jars: list[MavenJar], repo: Path, *, stage: str) -> None:
    """``mvn dependency:resolve`` over a throwaway pom naming ``jars``, each without its own
    dependencies (one JVM for all: a ``dependency:get`` per jar took 2.5 s each); ``-U``: a
    coordinate that failed before is asked for again."""
    project = ET.Element("project")
    for tag, text in (("modelVersion", "4.0.0"), ("groupId", "sae"), ("artifactId", "maven-jars"),
                      ("version", "0"), ("packaging", "pom")):
        ET.SubElement(project, tag).text = text
    dependencies = ET.SubElement(project, "dependencies")
    for jar in jars:
        dependency = ET.SubElement(dependencies, "dependency")
        for tag, text in (("groupId", jar.group), ("artifactId", jar.artifact), ("version", jar.version)):
            ET.SubElement(dependency, tag).text = text
        exclusion = ET.SubElement(ET.SubElement(dependency, "exclusions"), "exclusion")
        ET.SubElement(exclusion, "groupId").text = "*"
        ET.SubElement(exclusion, "artifactId").text = "*"
    with tempfile.TemporaryDirectory(prefix="sae-maven-") as tmp:
        pom = Path(tmp) / "pom.xml"
        ET.ElementTree(project).write(pom, encoding="utf-8", xml_declaration=True)
        argv = ["mvn", "-q", "-B", "-U", "--strict-checksums", f"-Dmaven.repo.local={repo}",
                "-f", str(pom), "dependency:resolve"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp)
        except FileNotFoundError:
            raise OperationalError(f"[controller {stage}] mvn is missing; run ./setup.sh (it installs maven)") from None
    absent = [j for j in jars if not (repo / j.relpath).is_file()]
    if r.returncode != 0 or absent:
        why = next((ln for ln in r.stdout.splitlines() if "ERROR" in ln), r.stderr.strip()[-200:])
        named = absent[0] if absent else jars[0]
        why = re.sub(r"\x1b\[[0-9;]*m|\[ERROR\]", "", why).split(" -> [Help")[0].strip()
        raise OperationalError(f"[controller {stage}] Maven could not fetch {named}: {why[:300]}; "
                               f"check the coordinates in maven_jars")


def check_sha1(jar: MavenJar, path: Path, *, stage: str) -> str:
    """The sha1 of ``path`` if it is the one published beside it (``<jar>.sha1``); else an
    OperationalError naming the jar and how to fetch it again."""
    published = Path(f"{path}.sha1").read_text().split()[0].strip().lower() if Path(f"{path}.sha1").is_file() else ""
    actual = hashlib.sha1(path.read_bytes()).hexdigest()
    if actual != published:
        raise OperationalError(f"[controller {stage}] {jar} fails its checksum ({path}: sha1 {actual}, "
                               f"Maven Central's {published or 'missing'}); delete {path.parent} and install again")
    return actual


def install(spark, nodes: list[str], *, stage: str) -> dict[str, list[str]]:
    """Put ``spark.options.maven_jars`` on ``nodes`` (see the module docstring); node → jars placed now."""
    jars = parse_all(spark.options.maven_jars)
    if not jars or not nodes:
        return {n: [] for n in nodes}
    from . import remote
    have = spark.cluster.call(remote, "jars_present", [j.node_path for j in jars], nodes=nodes, stage=f"{stage} facts")
    missing = sorted({str(j) for n in nodes for j, ok in zip(jars, have[n]) if not ok})
    if not missing:
        return {n: [] for n in nodes}
    local = fetch([j for j in jars if str(j) in missing], stage=f"{stage} fetch")
    todo = [n for n in nodes if not all(have[n])]
    for jar, (path, _) in local.items():   # one incoming copy per jar, pushed where a node lacks it
        want = [n for n in todo if not have[n][jars.index(jar)]]
        spark.cluster.put(str(path), f"{ROOT}/.incoming/{path.name}", nodes=want, stage=f"{stage} push")
    placed = spark.cluster.call(remote, "place_jars", ROOT, nodes=todo, stage=stage, per_node=lambda n: {
        "jars": [[f"{ROOT}/.incoming/{p.name}", j.node_path, sha1] for j, (p, sha1) in local.items()
                 if not have[n.name][jars.index(j)]]})
    return {n: placed.get(n, []) for n in nodes}
