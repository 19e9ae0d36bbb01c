"""Build the connector for spark-submit: the object class (through rados_deploy), the JVM data
source jar (compiled from jvm/ on the driver node against that node's Spark jars and JNA), and
the configuration."""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from metareserve import StageReport

FORMAT = "sae-ceph"
JDK = "openjdk-17-jdk-headless"
JNA = "libjna-java"
#: Debian's JNA (libjna-java), put on the driver's and executors' system class path (it loads its
#: native part from the system's JNI directory, once per JVM).
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
    SparkSession, then reads with ``spark.read.format(format).options(**options).load(path)``.
    """

    py_files: list[str]
    jars: list[str]
    conf: dict[str, str]
    env: dict[str, str]
    format: str = FORMAT
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    register: list[str] = dataclasses.field(default_factory=list)
    report: StageReport | None = None

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


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(_HERE).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def connector_jar(spark, *, out_dir: Path | None = None, stage: str = "connector build") -> tuple[Path, bool]:
    """Compile the data source with javac on the driver node against that node's Spark jars and
    JNA and fetch the jar; returns (local jar path, whether it was built now)."""
    sources = jvm_sources()
    key = _digest(sources)
    out = (out_dir or cache_dir()) / f"sae-connector-{key}.jar"
    if out.exists():
        return out, False
    node = spark.driver_node
    work = f"{spark.paths(node).work}/connector-{key}"
    spark.cluster.run(["rm", "-rf", work], nodes=[node], stage=stage)
    for src in sources:
        rel = src.relative_to(_JVM)
        spark.cluster.write(f"{work}/src/{rel}", src.read_text(), nodes=[node], stage=stage)
    home = spark.spark_home(node)
    script = (f"set -e; cd {work}; mkdir -p classes; find src -name '*.java' > sources.txt; "
              f"javac --release 17 -nowarn -cp '{home}/jars/*:{JNA_JAR}' -d classes @sources.txt; "
              f"jar cf sae-connector.jar -C classes . -C src META-INF")
    spark.cluster.run(script, nodes=[node], stage=stage, timeout=600,
                      hint=f"javac needs {JDK}, {JNA} and Spark's jars under {home}/jars")
    local = out.parent / f".fetch-{key}"
    spark.cluster.get(f"{work}/sae-connector.jar", str(local), nodes=[node], stage=stage)
    (local / node / "sae-connector.jar").replace(out)
    return out, True


def conf_link(ceph, nodes: list[str], *, stage: str = "connector build") -> tuple[str, dict]:
    """One ceph.conf path valid on every node, so executors anywhere share one ``ceph_conf``
    option: a link to the node's client conf, kept if it already names any node's client conf
    (nodes of a local cluster share the disk, hence the link). Returns (path, node → changed)."""
    path = f"{ceph.reservation.state_root}/connector/ceph.conf"
    valid = " ".join(sorted({ceph.client_conf(n) for n in nodes}))
    changed = {}
    for node in nodes:   # one by one: they may share the link
        r = ceph.cluster.run(
            f"mkdir -p $(dirname {path}); t=$(readlink {path} || true); "
            f"for v in {valid}; do if [ \"$t\" = \"$v\" ] && [ -r {path} ]; then echo same; exit 0; fi; done; "
            f"ln -sfn {ceph.client_conf(node)} {path}", nodes=[node], stage=stage)
        changed[node] = r[node]["stdout"].strip() != "same"
    return path, changed


def build(*, spark, ceph, install_class: bool = True, out_dir=None) -> SubmitSpec:
    """Build everything a Spark app needs to read through the connector.

    Args:
        spark: a started :class:`spark_deploy.SparkCluster` (the jar is compiled on its driver).
        ceph: the :class:`rados_deploy.CephCluster` holding the data; the Spark nodes must be its
            ceph-clients (librados2 and libcephfs2 there).
        install_class: also build/install the ``sae`` object class (``ceph.install_class()``);
            idempotent, pass False if the caller just did it.
        out_dir: local directory for the jar (default :func:`cache_dir`).
    Returns:
        A :class:`SubmitSpec`; ``report`` says per node what changed ("no changes" when rerun).
    """
    report = StageReport("connector build")
    if install_class:
        for node, o in ceph.install_class().nodes.items():
            report.add(node, o.changed, f"object class: {o.message}", log=False)
    nodes = list(dict.fromkeys([spark.driver_node, *spark.worker_nodes]))
    apt = spark.cluster.apt_install(stage=f"{report.stage} apt", nodes=nodes,
                                    per_node=lambda n: [JDK, JNA] if n.name == spark.driver_node else [JNA])
    jar, built = connector_jar(spark, out_dir=Path(out_dir) if out_dir else None, stage=report.stage)
    conf_path, linked = conf_link(ceph, nodes, stage=report.stage)
    for node in nodes:
        what = [w for w, c in ((f"installed {', '.join(apt[node]['installed'])}", apt[node]["installed"]),
                               ("compiled the data source", built and node == spark.driver_node),
                               (f"linked {conf_path}", linked[node])) if c]
        prev = report.nodes.get(node)
        changed = bool(what) or bool(prev and prev.changed)
        msg = "; ".join(what) or f"{jar.name} up to date"
        report.add(node, changed, f"{prev.message}; {msg}" if prev else msg)
    return SubmitSpec(
        py_files=[], jars=[str(jar)],
        conf={"spark.driver.extraClassPath": JNA_JAR, "spark.executor.extraClassPath": JNA_JAR,
              "spark.executor.extraJavaOptions": ARROW_JAVA_OPTIONS,
              "spark.executorEnv.CEPH_CONF": conf_path},
        env={"CEPH_CONF": conf_path}, options={"ceph_conf": conf_path}, report=report)
