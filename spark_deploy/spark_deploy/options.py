"""What a Spark deployment should look like: :class:`SparkOptions`, from Python or a YAML file."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from metareserve import parse_size, validate
from metareserve.layout import METRICS_PORTS
from metareserve.errors import UsageError
from metareserve.model import read_yaml

from .class_sharing import joined
from .maven import parse_all
from .software import tarball_name

PINNED_PYTHON = ("pandas<3",)
_MEMORY = re.compile(r"([0-9]+)([kmgt]?)", re.IGNORECASE | re.ASCII)
_MEMORY_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_MEMORY = 1 << 44     # 16 TiB: more is a typo, refused here rather than by a JVM on a host
MAX_CORES = 4096
JIT_MODES = ("full", "quick")
QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""``jit="quick"``: compile with C1 only. Measured on a 2-core machine (a tiny experiment, three
readers with one query each, in a fresh application): no-offload's query 20.7 -> 9.8 compute-side
CPU-s, the run 62 -> 48 s."""
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}", re.ASCII)
_REQUIREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?([<>=!~]=?[A-Za-z0-9.*+!_-]+,?)*", re.ASCII)
_DEBIAN = re.compile(r"[a-z0-9][a-z0-9+.-]+", re.ASCII)
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)", re.ASCII)
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9._-]*", re.ASCII)


def memory_bytes(value: str) -> int:
    """Bytes of a JVM memory size as Spark takes it (``512m``, ``2g``; checked by :func:`check_memory`)."""
    m = _MEMORY.fullmatch(value)
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]


def check_memory(value, what: str) -> None:
    """UsageError unless ``value`` is a JVM memory size as Spark takes it (``512m``, ``2g``); for
    a size sae reads elsewhere (``4 GiB``, ``1.5g``) the error says how Spark writes it."""
    m = _MEMORY.fullmatch(value) if isinstance(value, str) else None
    if not m:
        raise UsageError(f"{what} must look like 512m or 2g, not {value!r}{_spark_spelling(value)}")
    if not 0 < memory_bytes(value) <= MAX_MEMORY:
        raise UsageError(f"{what} {value!r} must be above 0 and at most 16t")


def _spark_spelling(value) -> str:
    """``" (Spark writes it 4g)"`` for a size :func:`metareserve.parse_size` reads in whole KiB
    (``4 GiB``, ``1.5g``), else ``""``."""
    try:
        n = parse_size(value, what="memory") if isinstance(value, str) else 0
    except UsageError:
        return ""
    unit = next((u for u in "tgmk" if n and n % _MEMORY_UNITS[u] == 0), None)
    return f" (Spark writes it {n // _MEMORY_UNITS[unit]}{unit})" if unit else ""


def check_conf(conf, what: str) -> None:
    """UsageError unless ``conf`` maps Spark properties (``spark.*``) to values."""
    if not isinstance(conf, dict):
        raise UsageError(f"{what} must be a dict")
    if not all(isinstance(k, str) and k.startswith("spark.") for k in conf):
        raise UsageError(f"{what} keys must be Spark properties (spark.*)")
    for key, value in conf.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or _control(str(value)) \
                or _control(key) or value != value:
            raise UsageError(f"{what} {key!r}: the value must be one line of text or a number, not {value!r}")


JOINED = {"spark.driver.extraJavaOptions": " ", "spark.executor.extraJavaOptions": " ",
          "spark.driver.extraClassPath": ":", "spark.executor.extraClassPath": ":"}
"""Properties that hold a list: :func:`merged_conf` joins their values in order instead of letting
a later conf drop an earlier one's."""


def merged_conf(*confs: dict) -> dict:
    """``confs`` merged in order, later values winning, except :data:`JOINED` properties, whose
    values are joined (e.g. a library's Java options and a user's)."""
    out: dict = {}
    for conf in confs:
        for key, value in conf.items():
            sep = JOINED.get(key)
            out[key] = joined(out[key], value, sep=sep) if sep and key in out else value
    return out


JIT_DEFAULTS = ("spark.driver.defaultJavaOptions", "spark.executor.defaultJavaOptions")
"""Where :func:`jit_conf` puts :data:`QUICK_JIT`: the Java options Spark puts before an
application's own ``extraJavaOptions``."""


def jit_conf(options: "SparkOptions", conf: dict) -> dict:
    """``conf`` (an application's) with ``options.jit`` applied: for ``quick``, :data:`QUICK_JIT`
    first in the driver's and executors' default Java options (the application's or deployment's
    own follow it, so theirs win)."""
    if options.jit != "quick":
        return dict(conf)
    return {**conf, **{key: joined(QUICK_JIT, options.setting(conf, key), sep=" ") for key in JIT_DEFAULTS}}


def _control(text: str) -> bool:
    """Whether ``text`` holds a newline, NUL or another control character."""
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


@dataclasses.dataclass
class SparkOptions:
    """Options of a Spark standalone deployment.

    ``version`` pins pyspark from PyPI unless ``spark_source`` names a Spark tarball (path or
    URL); ``pyarrow`` pins the nodes' Python env's pyarrow (PySpark's Arrow paths: pandas UDFs,
    ``toPandas``; each (version, pyarrow) is an env of its own). ``python_packages`` join that env; ``system_packages`` (Debian package
    names, e.g. a library a job's jars load) are installed with Java on every node.
    ``env`` reaches daemons, executors and the driver; ``conf`` adds spark-defaults entries;
    ``prefix`` replaces the per-node state directory (default
    ``reservation.node_dir(node, "spark")``; ``{node}`` in it is replaced by the node name).
    ``class_sharing`` lets client-mode drivers and their executors map the classes an earlier
    driver loaded (:mod:`spark_deploy.class_sharing`). ``jit`` is how the JVMs of the
    applications :meth:`SparkCluster.submit` starts compile: ``full`` (the JVM's tiered C1 and C2)
    or ``quick`` (C1 only, :func:`jit_conf`): about half the CPU of a cold application's first
    queries on 2 cores, at a lower peak speed; for smoke tests, not for measurements. It is
    applied per submit, so changing it restarts no daemon. ``maven_jars`` (Maven coordinates,
    ``group:artifact:version``; :data:`spark_deploy.maven.S3A` is Hadoop's S3A) are put on every
    node by :meth:`SparkCluster.install`, for the applications that ask for them
    (:meth:`SparkCluster.classpath_conf`).
    """

    version: str = "4.3.0"
    pyarrow: str = "26.0.1"
    spark_source: str | None = None
    worker_cores: int = 1
    worker_memory: str = "2g"
    executor_memory: str = "1g"
    master_port: int = 7077
    master_ui_port: int = METRICS_PORTS["spark-master"]
    worker_port: int = 7078
    worker_ui_port: int = METRICS_PORTS["spark-worker"]
    metrics_namespace: str = "sae"
    python_packages: list = dataclasses.field(default_factory=list)
    system_packages: list = dataclasses.field(default_factory=list)
    maven_jars: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)
    conf: dict = dataclasses.field(default_factory=dict)
    prefix: str | None = None
    class_sharing: bool = True
    jit: str = "full"

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
        if not isinstance(self.worker_cores, int) or isinstance(self.worker_cores, bool) \
                or not 1 <= self.worker_cores <= MAX_CORES:
            raise UsageError(f"{source}: worker_cores must be an integer from 1 to {MAX_CORES}, not {self.worker_cores!r}")
        for name in ("worker_memory", "executor_memory"):
            check_memory(getattr(self, name), f"{source}: {name}")
        if not isinstance(self.metrics_namespace, str) or not _IDENT.fullmatch(self.metrics_namespace):
            raise UsageError(f"{source}: metrics_namespace must be an identifier, not {self.metrics_namespace!r}")
        for name, kind in (("python_packages", list), ("system_packages", list), ("env", dict)):
            if not isinstance(getattr(self, name), kind):
                raise UsageError(f"{source}: {name} must be a {kind.__name__}")
        if not all(isinstance(k, str) and _IDENT.fullmatch(k) for k in self.env):
            raise UsageError(f"{source}: env keys must be environment variable names")
        for key, value in self.env.items():
            if not isinstance(value, str) or _control(value):
                raise UsageError(f"{source}: env {key}: the value must be one line of text, not {value!r}")
        for name, pattern in (("python_packages", _REQUIREMENT), ("system_packages", _DEBIAN)):
            for item in getattr(self, name):
                if not isinstance(item, str) or not pattern.fullmatch(item):
                    raise UsageError(f"{source}: {name}: {item!r} is not a package name (e.g. scipy==1.14.1)")
        if not isinstance(self.version, str) or not _VERSION.fullmatch(self.version):
            raise UsageError(f"{source}: version {self.version!r} is not a pyspark version (e.g. 4.3.0)")
        if validate.release_numbers(self.pyarrow) is None:
            raise UsageError(f"{source}: pyarrow {self.pyarrow!r} is not a pyarrow release (e.g. 26.0.1)")
        if any(_REQUIREMENT_NAME.match(p).group().lower() == "pyarrow" for p in self.python_packages):
            raise UsageError(f"{source}: python_packages names pyarrow, which the pyarrow option sets: "
                             f"use pyarrow: {self.pyarrow!r} instead")
        check_conf(self.conf, f"{source}: conf")
        parse_all(self.maven_jars, f"{source}: maven_jars")
        if self.jit not in JIT_MODES:
            raise UsageError(f"{source}: jit must be one of {', '.join(JIT_MODES)}, not {self.jit!r}")
        if not isinstance(self.class_sharing, bool):
            raise UsageError(f"{source}: class_sharing must be true or false, not {self.class_sharing!r}")
        if self.prefix is not None:
            check_prefix(self.prefix, f"{source}: prefix")
        if self.spark_source is not None:
            tarball_name(self.spark_source)
        return self

    def setting(self, conf: dict, key: str) -> str:
        """An application's value of Spark property ``key``: its own ``conf``, else the
        deployment's (spark-defaults), else empty."""
        return str(conf.get(key) or self.conf.get(key, ""))

    @property
    def requirements(self) -> list[str]:
        """Python requirements of the node venv (pyspark only when Spark comes from PyPI)."""
        spark = [] if self.spark_source else [f"pyspark=={self.version}"]
        return [*spark, f"pyarrow=={self.pyarrow}", *PINNED_PYTHON, *self.python_packages]

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
        return cls.from_dict(read_yaml(p, "Spark options file") or {}, str(p))


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
