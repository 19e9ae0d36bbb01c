"""Build the connector for spark-submit: the object class (through rados_deploy), the JVM data
source jar (compiled from jvm/ on the driver node against that node's Spark jars and JNA), and
the configuration."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from metareserve import StageReport
from metareserve.errors import UsageError

from . import spec_java

FORMAT = "sae-ceph"
#: Debian packages every Spark node needs (``SparkOptions.system_packages``): JNA, whose jar goes
#: on the driver's and executors' system class path (it loads its native part from the system's
#: JNI directory, once per JVM).
SYSTEM_PACKAGES = ("libjna-java",)
JNA_JAR = "/usr/share/java/jna.jar"
#: Executor JVM flags: Arrow Java checks bounds and the reference count on every value read and
#: nulls twice (ArrowColumnVector asks isNullAt first); measured as ~30 % of executor samples at
#: 100 % selectivity (docs/connector.md), so the executors read the OSD's vectors unchecked.
ARROW_JAVA_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"
_HERE = Path(__file__).parent
_JVM = _HERE / "jvm"


@dataclasses.dataclass
class SubmitSpec:
    """What a Spark application needs to read through the connector.

    ``py_files``/``jars``/``conf``/``env`` go to :meth:`spark_deploy.SparkCluster.submit`; the app
    calls each ``register`` entry (``"module:function"``, none for the JVM source) with its
    SparkSession, then reads with ``spark.read.format(format).options(**options).load(path)`` and
    writes with ``df.write.format(format).options(**write_options).mode("append").save(path)``.
    """

    py_files: list[str]
    jars: list[str]
    conf: dict[str, str]
    env: dict[str, str]
    format: str = FORMAT
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    register: list[str] = dataclasses.field(default_factory=list)
    write_options: dict[str, str] = dataclasses.field(default_factory=dict)
    """Options of the connector's writes: the client conf and the least-privilege writer
    (``CephCluster.users.write``)."""
    report: StageReport | None = None
    class_build: str | None = None
    """The object class's build key (rados_deploy's digest of its sources, Arrow pin and flags):
    what the OSDs run; None when this build did not install the class."""

    def submit_kwargs(self) -> dict:
        """Keyword arguments for ``SparkCluster.submit``."""
        return {"py_files": list(self.py_files), "jars": list(self.jars), "conf": dict(self.conf),
                "env": dict(self.env)}


def cache_dir() -> Path:
    """Where built artifacts are kept on the controller (``$SAE_HOME/connector``)."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "connector"


def jvm_sources() -> list[Path]:
    """The data source's Java sources and resources (``META-INF/services``)."""
    return sorted(p for p in _JVM.rglob("*") if p.is_file())


def _digest(paths: list[Path], generated: dict[str, str], spark_id: str) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(_HERE).as_posix().encode() + b"\0" + p.read_bytes())
    for name, text in sorted(generated.items()):
        h.update(name.encode() + b"\0" + text.encode())
    h.update(spark_id.encode())
    return h.hexdigest()[:16]


def connector_jar(spark, *, out_dir: Path | None = None, stage: str = "connector build") -> tuple[Path, bool]:
    """The data source jar (``jvm/`` plus the sources :mod:`~sae.connector.spec_java` renders),
    compiled by spark_deploy on the driver node against that node's Spark jars and JNA, cached by
    source digest and Spark (a jar per Spark version: each compiles against its own Spark's and
    Scala's classes); returns (local jar path, whether built now)."""
    generated = spec_java.sources()
    spark_id = spark.options.spark_source or spark.options.version
    out = (out_dir or cache_dir()) / f"sae-connector-{_digest(jvm_sources(), generated, spark_id)}.jar"
    if out.exists():
        return out, False
    with tempfile.TemporaryDirectory(prefix="sae-connector-src-") as tmp:
        src = Path(tmp) / "jvm"
        shutil.copytree(_JVM, src)
        for name, text in generated.items():
            (src / name).write_text(text)
        return spark.compile_jar(src, out, classpath=[JNA_JAR], stage=stage), True


def build(*, spark, ceph, install_class: bool = True, scan_library: bool = True, out_dir=None) -> SubmitSpec:
    """Build everything a Spark app needs to read through the connector: the data source's jar, the
    client ceph.conf's link and the class's scan as a client library on the Spark nodes (mode
    auto scans the objects it reads whole with it; option ``scan_library``).

    Args:
        spark: a started :class:`spark_deploy.SparkCluster` (the jar is compiled on its driver)
            installed with :data:`SYSTEM_PACKAGES` among its ``system_packages``.
        ceph: the :class:`rados_deploy.CephCluster` holding the data; the Spark nodes must be its
            ceph-clients (librados2 and libcephfs2 there).
        install_class: also build/install the ``sae`` object class (``ceph.install_class()``);
            idempotent, pass False if the caller just did it.
        scan_library: also build the class's scan as a client library on the Spark nodes, which
            only a mode that may scan objects in the task (``Mode.pushback``: auto) loads; without
            it the options carry no ``scan_library`` and such a mode is refused by the data source
            (measured on a new 2-core machine: the library's compile was 19 s of the build).
        out_dir: local directory for the jar (default :func:`cache_dir`).
    Returns:
        A :class:`SubmitSpec`; ``report`` says per node what changed ("no changes" when rerun).
    """
    report = StageReport("connector build")
    missing = sorted(set(SYSTEM_PACKAGES) - set(spark.options.system_packages))
    if missing:
        raise UsageError(f"connector build: the Spark deployment lacks system_packages {', '.join(missing)}; "
                         f"give SparkOptions(system_packages=[...]) sae.connector.SYSTEM_PACKAGES and install")
    nodes = list(dict.fromkeys([spark.driver_node, *spark.worker_nodes]))
    # The class, the jar and the scan library build at once, each on its own nodes (measured on
    # 2 cores: 70 s one after another, each a single compiler process).
    with ThreadPoolExecutor(max_workers=3) as pool:
        installing = pool.submit(ceph.install_class) if install_class else None
        compiling = pool.submit(connector_jar, spark, out_dir=Path(out_dir) if out_dir else None, stage=report.stage)
        building = pool.submit(ceph.install_scan_library, nodes) if scan_library else None
        (jar, built), library = compiling.result(), building.result() if building else None
        installed = installing.result() if installing else None
    class_build = None
    if installed is not None:
        class_build = installed.details["key"]
        for node, o in installed.nodes.items():
            report.add(node, o.changed, f"object class: {o.message}", log=False)
    linked = ceph.link_client_conf(nodes)
    conf_path = ceph.shared_client_conf
    for node in nodes:
        what = [w for w, c in (("compiled the data source", built and node == spark.driver_node),
                               (f"linked {conf_path}", linked.nodes[node].changed),
                               *([(library.nodes[node].message, library.nodes[node].changed)] if library else []))
                if c]
        prev = report.nodes.get(node)
        changed = bool(what) or bool(prev and prev.changed)
        msg = "; ".join(what) or f"{jar.name} up to date"
        report.add(node, changed, f"{prev.message}; {msg}" if prev else msg)
    return SubmitSpec(
        py_files=[], jars=[str(jar)],
        conf={"spark.driver.extraClassPath": JNA_JAR, "spark.executor.extraClassPath": JNA_JAR,
              "spark.executor.extraJavaOptions": ARROW_JAVA_OPTIONS,
              "spark.executorEnv.CEPH_CONF": conf_path},
        env={"CEPH_CONF": conf_path}, options={"ceph_conf": conf_path, "ceph_user": ceph.users.scan.id,
                                             **({"scan_library": library.details["path"]} if library else {})},
        write_options={"ceph_conf": conf_path, "ceph_user": ceph.users.write.id},
        report=report, class_build=class_build)
