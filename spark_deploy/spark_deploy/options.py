"""What a Spark deployment should look like: :class:`SparkOptions`, from Python or a YAML file."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import yaml

from metareserve import validate
from metareserve.errors import UsageError

from .software import tarball_name

PINNED_PYTHON = ("pyarrow==26.0.1", "pandas<3")
_MEMORY = re.compile(r"[0-9]+[kmgt]?", re.IGNORECASE | re.ASCII)


def check_memory(value, what: str) -> None:
    """UsageError unless ``value`` is a JVM memory size as Spark takes it (``512m``, ``2g``)."""
    if not isinstance(value, str) or not _MEMORY.fullmatch(value):
        raise UsageError(f"{what} must look like 512m or 2g, not {value!r}")


def check_conf(conf, what: str) -> None:
    """UsageError unless ``conf`` maps Spark properties (``spark.*``) to values."""
    if not isinstance(conf, dict):
        raise UsageError(f"{what} must be a dict")
    if not all(isinstance(k, str) and k.startswith("spark.") for k in conf):
        raise UsageError(f"{what} keys must be Spark properties (spark.*)")


@dataclasses.dataclass
class SparkOptions:
    """Options of a Spark standalone deployment.

    ``version`` pins pyspark from PyPI unless ``spark_source`` names a Spark tarball (path or
    URL). ``python_packages`` join the nodes' Python env; ``system_packages`` (Debian package
    names, e.g. a library a job's jars load) are installed with Java on every node.
    ``env`` reaches daemons, executors and the driver; ``conf`` adds spark-defaults entries;
    ``prefix`` replaces the per-node state directory (default
    ``reservation.node_dir(node, "spark")``; ``{node}`` in it is replaced by the node name).
    """

    version: str = "4.3.0"
    spark_source: str | None = None
    worker_cores: int = 1
    worker_memory: str = "2g"
    executor_memory: str = "1g"
    master_port: int = 7077
    master_ui_port: int = 8080
    worker_port: int = 7078
    worker_ui_port: int = 8081
    metrics_namespace: str = "sae"
    python_packages: list = dataclasses.field(default_factory=list)
    system_packages: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)
    conf: dict = dataclasses.field(default_factory=dict)
    prefix: str | None = None

    def __post_init__(self):
        self.validate()

    def validate(self, source: str = "SparkOptions") -> "SparkOptions":
        """Check types and ranges; UsageError naming ``source`` and the field otherwise."""
        ports = ("master_port", "master_ui_port", "worker_port", "worker_ui_port")
        for name in ports:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
                raise UsageError(f"{source}: {name} must be a port number (1-65535), not {value!r}")
        clash = {getattr(self, a) for a in ports if a.startswith("master")} & \
                {getattr(self, a) for a in ports if a.startswith("worker")}
        if clash or self.master_port == self.master_ui_port or self.worker_port == self.worker_ui_port:
            raise UsageError(f"{source}: master and worker ports must differ (a node may run both)")
        if not isinstance(self.worker_cores, int) or isinstance(self.worker_cores, bool) or self.worker_cores < 1:
            raise UsageError(f"{source}: worker_cores must be a positive integer, not {self.worker_cores!r}")
        for name in ("worker_memory", "executor_memory"):
            check_memory(getattr(self, name), f"{source}: {name}")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(self.metrics_namespace)):
            raise UsageError(f"{source}: metrics_namespace must be an identifier, not {self.metrics_namespace!r}")
        for name, kind in (("python_packages", list), ("system_packages", list), ("env", dict)):
            if not isinstance(getattr(self, name), kind):
                raise UsageError(f"{source}: {name} must be a {kind.__name__}")
        if not all(isinstance(k, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k) for k in self.env):
            raise UsageError(f"{source}: env keys must be environment variable names")
        check_conf(self.conf, f"{source}: conf")
        if self.prefix is not None:
            check_prefix(self.prefix, f"{source}: prefix")
        if self.spark_source is not None:
            tarball_name(self.spark_source)
        return self

    @property
    def requirements(self) -> list[str]:
        """Python requirements of the node venv (pyspark only when Spark comes from PyPI)."""
        spark = [] if self.spark_source else [f"pyspark=={self.version}"]
        return [*spark, *PINNED_PYTHON, *self.python_packages]

    @classmethod
    def from_dict(cls, data, source: str = "<options>") -> "SparkOptions":
        """Options from a mapping (e.g. parsed YAML); unknown keys are a UsageError naming ``source``."""
        if not isinstance(data, dict):
            raise UsageError(f"{source}: expected a mapping of Spark options")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"{source}: unknown Spark option(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        try:
            return cls(**data)
        except UsageError as e:
            raise UsageError(str(e).replace("SparkOptions", source, 1)) from None

    @classmethod
    def load(cls, path) -> "SparkOptions":
        """Options from a YAML file (a mapping of field names)."""
        p = Path(path)
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except FileNotFoundError:
            raise UsageError(f"{p}: Spark options file not found") from None
        except yaml.YAMLError as e:
            raise UsageError(f"{p}: malformed YAML: {getattr(e, 'problem', e)}") from None
        return cls.from_dict(data, str(p))


def check_prefix(prefix, what: str) -> None:
    """A per-node state directory: an absolute path of safe characters at least two levels deep
    (uninstall removes it), ``{node}`` standing for the node name."""
    try:
        path = validate.path(str(prefix).replace("{node}", "node"), what)
    except UsageError as e:
        raise UsageError(str(e)) from None
    if not path.startswith("/") or len([p for p in path.split("/") if p]) < 2:
        raise UsageError(f"{what} {prefix!r} must be an absolute directory at least two levels deep "
                         f"(such as /srv/spark/{{node}}): uninstall removes it")
