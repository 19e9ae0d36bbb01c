"""Build the connector for spark-submit: the object class (through rados_deploy), the
executor-side Python package as a zip, the Spark session extension jar, and the configuration."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import zipfile
from pathlib import Path

from metareserve import StageReport

from .spark.source import FORMAT

PACKAGE = "sae_ceph"
EXTENSION = "sae.connector.SessionExtension"
JDK = "openjdk-17-jdk-headless"
_HERE = Path(__file__).parent
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


@dataclasses.dataclass
class SubmitSpec:
    """What a Spark application needs to read through the connector.

    ``py_files``/``jars``/``conf``/``env`` go to :meth:`spark_deploy.SparkCluster.submit`; the app
    calls each ``register`` entry (``"module:function"``) with its SparkSession, then reads with
    ``spark.read.format(format).options(**options).load(path)``.
    """

    py_files: list[str]
    jars: list[str]
    conf: dict[str, str]
    env: dict[str, str]
    format: str = FORMAT
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    register: list[str] = dataclasses.field(default_factory=lambda: [f"{PACKAGE}:register"])
    report: StageReport | None = None

    def submit_kwargs(self) -> dict:
        """Keyword arguments for ``SparkCluster.submit``."""
        return {"py_files": list(self.py_files), "jars": list(self.jars), "conf": dict(self.conf),
                "env": dict(self.env)}


def cache_dir() -> Path:
    """Where built artifacts are kept on the controller (``$SAE_HOME/connector``)."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "connector"


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(_HERE).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def python_zip(out_dir: Path | None = None) -> Path:
    """The executor package (``spark/``) zipped as top-level ``sae_ceph`` (byte-identical for
    identical sources, so a rebuild changes nothing)."""
    files = sorted((_HERE / "spark").glob("*.py"))
    out = (out_dir or cache_dir()) / f"{PACKAGE}-{_digest(files)}.zip"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for f in files:
                z.writestr(zipfile.ZipInfo(f"{PACKAGE}/{f.name}", _ZIP_TIME), f.read_bytes())
        tmp.replace(out)
    return out


def extension_jar(spark, *, out_dir: Path | None = None, stage: str = "connector build") -> tuple[Path, bool]:
    """Compile the session extension with javac on the driver node against that node's Spark
    jars and fetch it; returns (local jar path, whether it was built now)."""
    sources = sorted((_HERE / "jvm").rglob("*.java"))
    key = _digest(sources)
    out = (out_dir or cache_dir()) / f"sae-connector-{key}.jar"
    if out.exists():
        return out, False
    node = spark.driver_node
    spark.cluster.apt_install([JDK], nodes=[node], stage=f"{stage} apt")
    work = f"{spark.paths(node).work}/connector-{key}"
    spark.cluster.run(["mkdir", "-p", f"{work}/src", f"{work}/classes"], nodes=[node], stage=stage)
    for src in sources:
        rel = src.relative_to(_HERE / "jvm")
        spark.cluster.write(f"{work}/src/{rel}", src.read_text(), nodes=[node], stage=stage)
    home = spark.spark_home(node)
    script = (f"set -e; cd {work}; find src -name '*.java' > sources.txt; "
              f"javac --release 17 -cp '{home}/jars/*' -d classes @sources.txt; "
              f"jar cf sae-connector.jar -C classes .")
    spark.cluster.run(script, nodes=[node], stage=stage, timeout=600,
                      hint=f"javac needs {JDK} and Spark's jars under {home}/jars")
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
        ceph: the :class:`rados_deploy.CephCluster` holding the data.
        install_class: also build/install the ``sae`` object class (``ceph.install_class()``);
            idempotent, pass False if the caller just did it.
        out_dir: local directory for the zip and the jar (default :func:`cache_dir`).
    Returns:
        A :class:`SubmitSpec`; ``report`` says per node what changed ("no changes" when rerun).
    """
    report = StageReport("connector build")
    if install_class:
        for node, o in ceph.install_class().nodes.items():
            report.add(node, o.changed, f"object class: {o.message}", log=False)
    out = Path(out_dir) if out_dir else None
    zipped = python_zip(out)
    jar, built = extension_jar(spark, out_dir=out, stage=report.stage)
    nodes = list(dict.fromkeys([spark.driver_node, *spark.worker_nodes]))
    conf_path, linked = conf_link(ceph, nodes, stage=report.stage)
    for node in nodes:
        what = [w for w, c in (("compiled the session extension", built and node == spark.driver_node),
                               (f"linked {conf_path}", linked[node])) if c]
        prev = report.nodes.get(node)
        changed = bool(what) or bool(prev and prev.changed)
        msg = "; ".join(what) or f"{zipped.name} and {jar.name} up to date"
        report.add(node, changed, f"{prev.message}; {msg}" if prev else msg)
    return SubmitSpec(
        py_files=[str(zipped)], jars=[str(jar)],
        conf={"spark.sql.python.filterPushdown.enabled": "true", "spark.sql.extensions": EXTENSION,
              "spark.executorEnv.CEPH_CONF": conf_path},
        env={"CEPH_CONF": conf_path}, options={"ceph_conf": conf_path}, report=report)
