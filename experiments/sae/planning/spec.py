"""The experiment API: what an experiment file declares, validated before anything runs.

An experiment file is a Python module that defines ``experiment = Experiment(...)``. Sections
(cluster, spark, ceph, monitor, data, workload) are frozen dataclasses; a :class:`Sweep` varies
their fields; ``profiles`` override sections for e.g. ``tiny`` (local cluster, CI) and ``paper``
(CloudLab, the paper's parameters); ``stages`` replace built-in stages with own functions.
"""
from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import traceback
from pathlib import Path
from typing import Callable

from data_deploy import SCHEMA as TAXI_SCHEMA
from data_deploy import (GENERATORS, MAX_MULTIPLIER, MAX_ROWS, MAX_SEED, check_codec, check_format, check_page_rows,
                         check_object_size, ingestible)
from metareserve import LinkRate, parse_size
from metareserve.validate import name as validate_name
from metareserve.errors import UsageError
from metareserve.layout import ROLES
from metareserve.providers import Provider
from monitor_deploy import MonitorOptions
from rados_deploy import CephOptions
from spark_deploy import SparkOptions, check_conf, check_memory, ships_arrow_compression
from spark_deploy.maven import S3A

from . import capacities, figures, queries, readers, writers
from .stages import STAGES
from ..connector.options import OPTIONS as CONNECTOR_OPTIONS
from ..connector.options import WORKLOAD

SIZES = ("osd_size", "object_size")
"""Size parameters: any spelling in an experiment file, bytes once validated."""
_OFFLOAD_GONE = ("workload.offload was folded into workload.reader: use reader='offload' or "
                 "'no-offload' (or 'vanilla'), e.g. Sweep(cartesian={'reader': [...]})")
STORES = ("memstore", "bluestore")
MAX_REPETITIONS = 10_000     # the thesis ran 21; beyond this a typo, not an experiment
MAX_PAUSE = 3600.0           # seconds between repetitions
MAX_POINTS = 10_000          # sweep points of one experiment
MAX_WRITE_TASKS = 100_000    # workload.write_tasks: Stocator's largest Teragen wrote in hundreds
DRIFT_MIN = 3                # measured repetitions of the drift check at least
MAX_STORAGE_LOAD = 4.0      # cluster.storage_load: a second tenant may oversubscribe storage cores 4x
MAX_STORAGE_SCANS = 64      # cluster.storage_scans: a second application's scan calls in flight at once
MAX_KEYS = 1_000_000        # workload.keys: keys of one lookup
MAX_APPEND_ROWS = 10**9     # workload.append_rows: rows of one append
WINDOW_MARGIN = 1.0
"""The metric-window rule: with monitoring on, ``pause`` must be at least the scrape interval
plus this many seconds, so the quiet gap between two repetitions holds a scrape even after the
local cluster's CPU exporter's lag (0.5 s) and each repetition's counters are read just before and
just after it (docs/results.md, "During the query"). Checked at plan time for every point."""


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    """How many nodes and which roles they play (``layout``: role → node names; None = default),
    and the hosts' capacities, emulated on the local provider (:mod:`sae.planning.capacities`): ``cores``
    (``"sides"``: storage and compute hosts on disjoint halves of the machine's cores;
    ``"split"``: as ``sides``, and where a side has more hosts than cores each host gets an equal
    share of them as a CPU quota; ``"shared"``: every host every core; or node → cores such as
    ``{"node1": "1"}``),
    ``link_rate`` (each host's link, both directions: ``"100mbit"``, ``"1.25gbit/core"`` per core
    of the host, ``"unlimited"``) and ``host_memory`` (each host's limit). None: the provider's
    default (local: ``sides`` and ``1.25gbit/core``, no memory limit; other providers: nothing
    emulated, and a value is refused). A resolved point holds them parsed: cpusets as
    :class:`~metareserve.CpuSet`, a :class:`~metareserve.LinkRate`, a :class:`~metareserve.Size`.

    ``storage_load``: a second tenant on the storage side, on any provider: the share of each
    storage host's cores (0 to :data:`MAX_STORAGE_LOAD`; 0.5: half of them) that a CPU load
    (stress-ng, in the host's cgroup) keeps busy while the point's queries run
    (:mod:`sae.running.tenant_load`); what it got is measured per repetition (``tenant_cpu_s``).
    ``storage_scans``: a second application on the storage side, on any provider: a librados
    client on the first storage host keeping this many calls of the object class's scan in flight
    (0 to :data:`MAX_STORAGE_SCANS`), every column of every object of the point's data at 1 %,
    over and over, while the point's queries run; the OSD work it causes is the storage side's,
    its client's own CPU is measured per repetition (``tenant_scan_cpu_s``), and so are its
    calls (``tenant_scans``)."""

    nodes: int = 3
    layout: dict | None = None
    cores: str | dict | None = None
    link_rate: str | LinkRate | None = None
    host_memory: str | int | None = None
    storage_load: float = 0.0
    storage_scans: int = 0

    @property
    def second_tenant(self) -> bool:
        """Whether a second tenant (a CPU load or another application's scans) keeps the storage
        hosts busy, between queries too."""
        return bool(self.storage_load or self.storage_scans)

    @property
    def capacity_params(self) -> dict:
        """The capacity fields in their canonical written form (changed in place between points,
        without rebuilding the stack)."""
        cores = {n: str(c) for n, c in self.cores.items()} if isinstance(self.cores, dict) else self.cores
        return {"cores": cores, "link_rate": None if self.link_rate is None else str(self.link_rate),
                "host_memory": None if self.host_memory is None else str(self.host_memory),
                "storage_load": self.storage_load, "storage_scans": self.storage_scans}


@dataclasses.dataclass(frozen=True)
class SparkSpec:
    """Spark standalone options (per worker) and extra ``conf`` for the application; ``version``:
    the pyspark release from PyPI, ``pyarrow``: the pyarrow release of the Spark nodes' Python
    (both sweepable: each pair is installed beside the others, once, and the start stage switches
    the daemons, and for a new version the connector's build, to the point's). ``jit: quick``
    compiles the applications with C1 only (cheaper cold starts, lower peak speed: for smoke
    tests; reports say so)."""

    version: str = SparkOptions.version
    pyarrow: str = SparkOptions.pyarrow
    worker_cores: int = 1
    worker_memory: str = "2g"
    executor_memory: str = "1g"
    driver_memory: str = "1g"
    conf: dict = dataclasses.field(default_factory=dict)
    jit: str = SparkOptions.jit


@dataclasses.dataclass(frozen=True)
class CephSpec:
    """Ceph OSD store and size, whether Ceph's PG autoscaler runs on the CephFS pools
    (``pg_autoscale``: off by default, as the thesis ran after finding it slowed repeated runs;
    switched in place on the running stack, off putting the computed PG counts back), and the
    pyarrow release whose Arrow C++ the object class is built against (``class_arrow``; sweepable:
    the start stage installs that build, restarting the OSDs, on the running stack), and whether
    a RADOS Gateway serves S3 (``rgw``: the S3 writers write through it; the start stage starts it
    on the running stack)."""

    store: str = "memstore"
    osd_size: int | str = "4GiB"
    osds_per_node: int = 1
    pg_autoscale: bool = False
    class_arrow: str = CephOptions.class_arrow
    rgw: bool = False


@dataclasses.dataclass(frozen=True)
class MonitorSpec:
    """Prometheus monitoring (metric windows per repetition) on or off."""

    enabled: bool = True
    scrape_interval: str = "2s"


@dataclasses.dataclass(frozen=True)
class DataSpec:
    """The dataset: generated (``generator``, ``rows``, ``seed``) or an ``input`` Parquet path,
    split into objects of ``object_size`` stored as ``format`` (``parquet``: one row group per
    object; ``ipc``: Arrow IPC files of one record batch, which vanilla and auto cannot read) with
    the codec ``stored_compression`` (``none``, ``snappy``, ``gzip``, ``zstd``, ...: data_deploy's
    ``CODECS_BY_FORMAT``), inflated by link/copy multipliers. ``page_rows`` (Parquet): data pages
    of at most that many rows, a page index, and dictionaries only for columns whose values fit one
    dictionary page (what lets the OSD index read a matching object's pages alone, docs/protocol.md,
    "Index"); None: the writer's pages and no page index."""

    generator: str = "taxi"
    rows: int = 200_000
    seed: int = 0
    input: str | None = None
    object_size: int | str = "8MiB"
    link_multiplier: int = 1
    copy_multiplier: int = 1
    stored_compression: str = "none"
    format: str = "parquet"
    page_rows: int | None = None


READ_OPTIONS = WORKLOAD
"""The workload fields that say how the reader reads: the connector's options a workload sets
(:data:`sae.connector.options.WORKLOAD`, each a field of the same name), which
:meth:`Workload.connector_options` passes; points that differ only in these and the reader are
one comparison, whose repetitions take turns (:func:`sae.running.execute.comparison_key`)."""


@dataclasses.dataclass(frozen=True)
class Workload:
    """The query: ``query`` names one of :data:`sae.planning.queries.QUERIES` (``sql``: the
    experiment's own statement, query ``sql``), whose filter keeps rows whose ``column`` lies
    below the threshold that lets ``selectivity`` percent of rows pass; ``scan`` (the default)
    checksums ``columns`` (empty: every column) of the kept rows. Read by
    ``reader`` (a name in :data:`sae.planning.readers.READERS`). ``compression`` is the connector's reply compression
    (zstd: its measured default, docs/connector.md); vanilla reads Parquet as stored.
    ``batch_size`` (rows per Arrow batch) and ``objects_per_partition`` (objects per Spark task;
    None: the connector's choice, docs/connector.md, "Partitions and calls") tune the connector;
    None keeps its default.
    ``whole_objects`` (offload): an object whose every row passes a query for every column comes
    back as stored (docs/connector.md); False makes the class decode, filter and re-encode it
    anyway, which is what an experiment about the storage side's decoding measures.
    ``operators`` (offload): a query's GROUP BY and COUNT/SUM/MIN/MAX/AVG run in the OSDs as
    per-object partials, and its ORDER BY ... LIMIT (or LIMIT) as per-object top rows, where the
    class computes them exactly (docs/connector.md); False leaves them to Spark (the filter and
    projection are still pushed). ``pushback`` (auto): ``cost``, its cost model's choice per
    object; ``never``, every object pushed; ``always``, every object read whole and scanned in
    the Spark task: the two ways its choice lies between, measured alone; ``half``, a fixed
    split: the last half of each task's objects kept back, read whole and scanned while the
    others' pushed replies are awaited.

    The key queries (:data:`sae.planning.queries.KEY_VIEWS`; docs/results.md, "Keys, probes and
    appends"): ``keys``, how many pickup times a ``key-lookup`` looks up; ``probe``, the percent
    of the data's pickup times in a ``key-join``'s probe table. ``append_rows`` (key queries):
    before every ``append_every``-th repetition of the point (warm-ups counted; the first
    before repetition ``append_every``) a batch of that many new rows is appended to what every
    reader reads, so each repetition of a series reads the rows of the batches before it.
    ``lose_executor``: before that repetition of the point (warm-ups counted; its last where it
    has fewer) the application kills one of its executors (SIGKILL: its cached blocks and shuffle
    files go with it), once for the points compared with each other, and waits for the cluster
    manager's replacement; None: never.

    ``writer`` (a name in :data:`sae.planning.writers.WRITERS`) makes the point a write job
    instead of a query: ``write`` names the job (:data:`sae.planning.writers.JOBS`; ``copy``
    and ``query`` read the dataset with ``reader``), ``write_rows`` is how many rows teragen
    generates and ``write_tasks`` in how many tasks (one output file each for Spark's writers, as
    in Stocator's jobs; None: the application's default parallelism) (docs/results.md, "Writes").
    None: the point reads."""

    reader: str = readers.OFFLOAD.name
    compression: str = CONNECTOR_OPTIONS["compression"].default
    batch_size: int | None = None
    objects_per_partition: int | None = None
    whole_objects: bool = True
    operators: bool = True
    pushback: str = CONNECTOR_OPTIONS["pushback"].default
    column: str = "total_amount"
    selectivity: float = 100.0
    columns: tuple = ()
    query: str = queries.SCAN.name
    sql: str | None = None
    keys: int = 1
    probe: float = 1.0
    append_rows: int = 0
    append_every: int = 5
    lose_executor: int | None = None
    writer: str | None = None
    write: str = "copy"
    write_rows: int = 1_000_000
    write_tasks: int | None = None
    offload: dataclasses.InitVar[object] = None   # gone: a one-line hint for old experiment files

    def __post_init__(self, offload):
        if offload is not None:
            raise UsageError(f"Workload(offload={offload!r}): {_OFFLOAD_GONE}")
        if self.sql is not None and self.query == queries.SCAN.name:
            object.__setattr__(self, "query", queries.CUSTOM)   # Workload(sql=...) is query 'sql'

    @property
    def question(self) -> queries.Query:
        """The query this workload asks (:mod:`sae.planning.queries`)."""
        return queries.get(self.query, self.sql)

    def connector_options(self) -> dict[str, str]:
        """The one mapping from this workload to the connector's tuning options
        (:data:`READ_OPTIONS`, each left out at the connector's default; the reader adds its
        ``mode``, :meth:`read_source`)."""
        rendered = {name: CONNECTOR_OPTIONS[name].render(getattr(self, name)) for name in READ_OPTIONS}
        return {name: value for name, value in rendered.items() if value is not None}

    def read_source(self, path: str, *, build, mount: str | None, fmt: str = "parquet") -> readers.ReadSource:
        """What the application reads for CephFS ``path`` (files stored as ``fmt``) with this
        workload's reader (``build``: the connector's :class:`~sae.connector.SubmitSpec`,
        ``mount``: the CephFS mount point)."""
        return readers.get(self.reader).reads.source(path, build=build, mount=mount,
                                                     options=self.connector_options(), fmt=fmt)


SECTIONS = {"cluster": ClusterSpec, "spark": SparkSpec, "ceph": CephSpec, "monitor": MonitorSpec,
            "data": DataSpec, "workload": Workload}


@dataclasses.dataclass(frozen=True)
class Sweep:
    """Sweep axes: every combination of ``cartesian`` axes × the ``zipped`` axes taken in step,
    kept where ``where(point)`` is true. Axis names are fields (``selectivity``) or dotted
    (``workload.selectivity``); ``point`` given to ``where`` maps the same names to values.

    ``repetitions`` gives some points their own number of repetitions (warm-ups included), axis
    → {value: repetitions}: ``{"selectivity": {1: 6, 100: 6}}`` runs the 1 % and 100 % points 6
    times and the others ``Experiment.repetitions`` times; a point several entries match gets the
    largest (:meth:`repetitions_of`)."""

    cartesian: dict = dataclasses.field(default_factory=dict)
    zipped: dict = dataclasses.field(default_factory=dict)
    where: Callable[[dict], bool] | None = None
    repetitions: dict = dataclasses.field(default_factory=dict)

    def repetitions_of(self, axes: dict, default: int) -> int:
        """The repetitions of the point with ``axes``: the largest entry of :attr:`repetitions`
        that matches it, else ``default``."""
        counts = [table[v] for axis, table in self.repetitions.items() for v in table
                  if axis in axes and _same_value(axes[axis]) == _same_value(v)]
        return max(counts, default=default)

    def points(self) -> list[dict]:
        """The sweep's points as {axis name: value}, in declaration order."""
        names = list(self.cartesian)
        lengths = {len(v) for v in self.zipped.values()}
        if len(lengths) > 1:
            raise UsageError(f"sweep: zipped axes {', '.join(self.zipped)} differ in length")
        zipped = [dict(zip(self.zipped, vals)) for vals in zip(*self.zipped.values())] or [{}]
        out = []
        for combo in itertools.product(*(self.cartesian[n] for n in names)):
            for z in zipped:
                point = dict(zip(names, combo), **z)
                if self.where is None or self._keeps(point):
                    out.append(point)
        return out

    def _keeps(self, point: dict) -> bool:
        """``where(point)``; what it raises becomes a UsageError naming it and its line."""
        try:
            return self.where(point)
        except Exception as e:   # the experiment file's own code may raise anything
            code = getattr(self.where, "__code__", None)
            raise UsageError(f"sweep.where raised {raised(e, code.co_filename if code else None)} for the point "
                             f"{point}; fix the function") from None


def raised(error: BaseException, filename=None) -> str:
    """What an experiment file's own code raised, for a one-line error: ``ZeroDivisionError:
    division by zero at line 3`` (:func:`line_in` ``filename``)."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}{': ' + text if text else ''} at line {line_in(error, filename)}"


def line_in(error: BaseException, filename=None) -> str:
    """The last line of ``filename`` (default: of any file) in ``error``'s traceback; ``?``."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if filename is None or Path(f.filename).resolve() == Path(filename).resolve()]
    return str(frames[-1].lineno) if frames else "?"


PROFILE_FIELDS = ("cluster", "spark", "ceph", "monitor", "data", "workload", "sweep", "repetitions", "warmup",
                  "pause", "stages", "description", "figures", "drift")
"""What a profile may set: a section (a dict of field overrides, merged into the experiment's, or a
whole section object) or an experiment-level value, replaced whole."""


@dataclasses.dataclass(frozen=True)
class Profile:
    """One profile (``Experiment.profiles[name]``): the fields it sets (None: left as the
    experiment has it). Sections take a dict of field overrides (``data={"rows": 10}``, merged into
    the experiment's section) or a whole section object; the others replace the experiment's value.
    A dict in an experiment file (``{"data": {...}, "repetitions": 2}``, what
    :func:`sae.planning.profiles.tiny` returns) is converted at load by :meth:`of`, which names
    the experiment, profile and field of a bad key in one line. Reads like a mapping of the fields
    it sets (``dict(profile, repetitions=5)``)."""

    cluster: "dict | ClusterSpec | None" = None
    spark: "dict | SparkSpec | None" = None
    ceph: "dict | CephSpec | None" = None
    monitor: "dict | MonitorSpec | None" = None
    data: "dict | DataSpec | None" = None
    workload: "dict | Workload | None" = None
    sweep: "Sweep | None" = None
    repetitions: int | None = None
    warmup: int | None = None
    pause: float | None = None
    stages: dict | None = None
    description: str | None = None
    figures: tuple | None = None
    drift: bool | None = None

    @classmethod
    def of(cls, value, where: str) -> "Profile":
        """``value`` (a Profile or a dict of profile fields) as a checked Profile; UsageError
        naming ``where`` (experiment and profile) and the field."""
        if isinstance(value, Profile):
            items = dict(value)
        elif isinstance(value, dict):
            items = value
        else:
            raise UsageError(f"{where}: a profile is a Profile(...) or a dict of options "
                             f"({', '.join(PROFILE_FIELDS)}), not {value!r}")
        for key, v in items.items():
            if key not in PROFILE_FIELDS:
                raise UsageError(f"{where}: unknown option {key!r} (options: {', '.join(PROFILE_FIELDS)})")
            if key in SECTIONS:
                if isinstance(v, dict):
                    _replace(SECTIONS[key](), v, f"{where} {key}")   # names an unknown field
                elif not isinstance(v, SECTIONS[key]):
                    raise UsageError(f"{where}: {key} must be a dict of {SECTIONS[key].__name__} fields or a "
                                     f"{SECTIONS[key].__name__}, not {v!r}")
            elif key == "sweep" and not isinstance(v, Sweep):
                raise UsageError(f"{where}: sweep must be a Sweep, not {v!r}")
            elif key in ("repetitions", "warmup") and (isinstance(v, bool) or not isinstance(v, int)):
                raise UsageError(f"{where}: {key} must be an integer, not {v!r}")
            elif key == "pause" and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise UsageError(f"{where}: pause must be a number of seconds, not {v!r}")
        return value if isinstance(value, Profile) else cls(**items)

    def keys(self) -> list[str]:
        """The fields this profile sets."""
        return [f for f in PROFILE_FIELDS if getattr(self, f) is not None]

    def __getitem__(self, key: str):
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self.keys())

    def items(self) -> list[tuple]:
        return [(k, getattr(self, k)) for k in self.keys()]


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment: stack, data, workload, sweep, repetitions (the first ``warmup`` of each
    point are kept in raw data but left out of statistics), profiles, stage overrides and the
    ``figures`` its report draws (names in :data:`sae.planning.figures.FIGURES`; the report
    adds the standard ones).

    ``pause`` seconds separate repetitions so their metric windows do not overlap; with
    monitoring on it must be at least the scrape interval plus :data:`WINDOW_MARGIN` (checked at
    plan time for every point).
    """

    name: str
    cluster: ClusterSpec = ClusterSpec()
    spark: SparkSpec = SparkSpec()
    ceph: CephSpec = CephSpec()
    monitor: MonitorSpec = MonitorSpec()
    data: DataSpec = DataSpec()
    workload: Workload = Workload()
    sweep: Sweep = Sweep()
    repetitions: int = 3
    warmup: int = 1
    pause: float = 3.0   # the default 2-s scrapes + WINDOW_MARGIN
    profiles: dict = dataclasses.field(default_factory=dict)
    stages: dict = dataclasses.field(default_factory=dict)
    description: str = ""
    figures: tuple[str, ...] = ("points",)
    drift: bool = False
    """The drift check: the reference point (the first point that runs on the last stack) is run
    again at the end of the run, as many measured repetitions as its own (at least
    :data:`DRIFT_MIN`), kept out of every other statistic; the report compares its end with its
    start (``sae.results.analysis.summary.drift``)."""

    def __post_init__(self):
        """Profiles given as dicts become :class:`Profile` objects (checked, one line naming the
        experiment, profile and field)."""
        if not isinstance(self.profiles, dict):
            raise UsageError(f"experiment {self.name!r}: profiles must map profile names to profiles, "
                             f"not {self.profiles!r}")
        object.__setattr__(self, "profiles", {
            name: Profile.of(value, f"experiment {self.name!r} profile {name!r}")
            for name, value in self.profiles.items()})

    def runnable_profiles(self) -> list[str | None]:
        """The profiles a run can use: each declared one, and None (the values as written) when
        no ``tiny`` profile is the default (:meth:`default_profile`)."""
        return [*self.profiles, *([] if "tiny" in self.profiles else [None])]

    def default_profile(self, profile: str | None) -> str | None:
        """``profile`` if given, else ``tiny`` when the experiment has one, else None."""
        if profile is not None:
            return profile
        return "tiny" if "tiny" in self.profiles else None

    def with_profile(self, profile: str | None) -> "Experiment":
        """This experiment with profile ``profile``'s overrides applied (validated)."""
        if profile is None:
            return self
        if profile not in self.profiles:
            known = ", ".join(self.profiles) or "none"
            raise UsageError(f"experiment {self.name!r} has no profile {profile!r} (profiles: {known})")
        changes = {}
        for key, value in self.profiles[profile].items():
            if key in SECTIONS and isinstance(value, dict):
                changes[key] = _replace(getattr(self, key), value, f"profile {profile} {key}")
            else:
                changes[key] = value
        return dataclasses.replace(self, **changes)


def check_every_setting_runs(experiment: Experiment) -> None:
    """No setting in a file that cannot run: a top-level value (one that differs from its
    default: a section field, the sweep, repetitions, ...) that every profile a run can use
    (:meth:`Experiment.runnable_profiles`) replaces, by setting it or by sweeping it, never runs;
    UsageError naming the experiment, the field and the profiles."""
    runnable = experiment.runnable_profiles()
    if None in runnable:   # the values as written run
        return
    default = Experiment(name=experiment.name)
    written = []
    for key in PROFILE_FIELDS:
        value, plain = getattr(experiment, key), getattr(default, key)
        if key in SECTIONS:
            written += [f"{key}.{f.name}" for f in dataclasses.fields(value)
                        if getattr(value, f.name) != getattr(plain, f.name)]
        elif key == "sweep":
            if value.cartesian or value.zipped or value.where is not None:
                written.append(key)
        elif value != plain:
            written.append(key)

    def replaced(name: str, profile: Profile) -> bool:
        key, _, field = name.partition(".")
        given = profile[key] if key in profile.keys() else None
        if field and isinstance(given, dict):
            if field in given:
                return True
        elif given is not None:
            return True
        if field:   # a field the profile's sweep varies
            sweep = profile.sweep or experiment.sweep
            return any(axis_target(a) == (key, field) for a in {**sweep.cartesian, **sweep.zipped})
        return False
    for name in written:
        if all(replaced(name, experiment.profiles[p]) for p in runnable):
            raise UsageError(f"experiment {experiment.name!r}: {name} is set but every profile replaces it "
                             f"({', '.join(runnable)}), so it never runs; remove it, or move one profile's "
                             f"value to the top level and drop it from that profile")


def _replace(section, values: dict, where: str):
    fields = {f.name for f in dataclasses.fields(section)}
    unknown = set(values) - fields
    if "offload" in unknown and isinstance(section, Workload):
        raise UsageError(f"{where}: {_OFFLOAD_GONE}")
    if unknown:
        raise UsageError(f"{where}: unknown option {', '.join(sorted(unknown))} "
                         f"(options: {', '.join(sorted(fields))})")
    return dataclasses.replace(section, **values)


def axis_target(name: str) -> tuple[str, str]:
    """(section, field) an axis name refers to; UsageError for unknown names."""
    if "." in name:
        section, _, field = name.partition(".")
        if section in SECTIONS and field in {f.name for f in dataclasses.fields(SECTIONS[section])}:
            return section, field
    else:
        hits = [(s, name) for s, cls in SECTIONS.items()
                if name in {f.name for f in dataclasses.fields(cls)}]
        if len(hits) == 1:
            return hits[0]
    if name.rpartition(".")[2] == "offload":
        raise UsageError(f"sweep: axis {name!r}: {_OFFLOAD_GONE}")
    known = sorted(f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls))
    raise UsageError(f"sweep: unknown axis {name!r} (axes: {', '.join(known)})")


@dataclasses.dataclass(frozen=True)
class PointSpec:
    """One resolved sweep point: every section with the point's axes applied and sizes in bytes
    (a size's spelling is not its identity), plus the deployers' own options built from them.
    Building one is validation: a bad value raises UsageError naming ``where``."""

    cluster: ClusterSpec
    spark: SparkSpec
    ceph: CephSpec
    monitor: MonitorSpec
    data: DataSpec
    workload: Workload
    where: dataclasses.InitVar[str] = "point"
    ceph_options: CephOptions = dataclasses.field(init=False, repr=False, compare=False)
    spark_options: SparkOptions = dataclasses.field(init=False, repr=False, compare=False)
    monitor_options: MonitorOptions | None = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self, where):
        object.__setattr__(self, "cluster", capacities.parse_cluster(self.cluster, where))
        _check(self, where)
        try:
            self._build_options()
        except UsageError as e:   # as the deployers would, after reserving
            raise UsageError(f"{where}: {e}") from None

    def _build_options(self) -> None:
        sized = {"ceph": dataclasses.replace(self.ceph, osd_size=parse_size(self.ceph.osd_size, what="osd_size")),
                 "data": dataclasses.replace(self.data, object_size=parse_size(self.data.object_size,
                                                                               what="object_size"))}
        for name, value in sized.items():
            object.__setattr__(self, name, value)
        ceph, spark = ceph_options(self.ceph), spark_options(self.spark)
        if self.ceph.rgw:   # the S3 writers' jars on the Spark nodes (sae.planning.writers)
            spark = dataclasses.replace(spark, maven_jars=list(S3A))
        options = {"ceph_options": ceph, "spark_options": spark,
                   "monitor_options": monitor_options(self.monitor, spark, ceph) if self.monitor.enabled else None}
        for name, value in options.items():
            object.__setattr__(self, name, value)

    @classmethod
    def resolve(cls, experiment: "Experiment", axes: dict, where: str = "point") -> "PointSpec":
        """The experiment's sections with ``axes`` ({axis name: value}) applied, validated."""
        changes: dict[str, dict] = {s: {} for s in SECTIONS}
        for name, value in axes.items():
            section, field = axis_target(name)
            changes[section][field] = value
        return cls(**{s: dataclasses.replace(getattr(experiment, s), **changes[s]) for s in SECTIONS},
                   where=where)

    @classmethod
    def from_params(cls, params: dict, where: str = "point") -> "PointSpec":
        """The point :meth:`params` wrote (e.g. into a run's plan.yaml)."""
        return cls(**{s: _replace(SECTIONS[s](), params[s], f"{where} {s}") for s in SECTIONS}, where=where)

    def params(self) -> dict:
        """Plain data, section → field → value (plan.yaml, point ids, result columns)."""
        params = {s: dataclasses.asdict(getattr(self, s)) for s in SECTIONS}
        params["cluster"].update(self.cluster.capacity_params)
        return params


def ceph_options(ceph: CephSpec) -> CephOptions:
    """The one translation of a ``ceph`` section into rados_deploy's options."""
    return CephOptions(store=ceph.store, osd_size=ceph.osd_size, osds_per_node=ceph.osds_per_node,
                       pg_autoscale=ceph.pg_autoscale, class_arrow=ceph.class_arrow, rgw=ceph.rgw)


def monitor_options(monitor: MonitorSpec, spark: SparkOptions, ceph: CephOptions) -> MonitorOptions:
    """The one translation of a ``monitor`` section into monitor_deploy's options, scraping the
    ports the Spark daemons and the Ceph mgr serve on."""
    return MonitorOptions(scrape_interval=monitor.scrape_interval, spark_master_ui_port=spark.master_ui_port,
                          spark_worker_ui_port=spark.worker_ui_port, ceph_mgr_port=ceph.mgr_prometheus_port)


def spark_options(spark: SparkSpec) -> SparkOptions:
    """The one translation of a ``spark`` section into spark_deploy's options (the application's
    driver memory and ``conf`` travel with the submit, checked as Spark would)."""
    check_memory(spark.driver_memory, "spark: driver_memory")
    check_conf(spark.conf, "spark: conf")
    return SparkOptions.from_dict({"version": spark.version, "pyarrow": spark.pyarrow, "worker_cores": spark.worker_cores,
                                   "worker_memory": spark.worker_memory, "executor_memory": spark.executor_memory,
                                   "jit": spark.jit},
                                  source="spark")


def _check(point: PointSpec, where: str) -> None:
    """Check one resolved point with each of :data:`CHECKS`; UsageError naming ``where`` and the
    bad value."""
    for check in CHECKS:
        try:
            check(point)
        except UsageError as e:
            raise UsageError(f"{where}: {e}") from None


def _cluster(point: PointSpec) -> None:
    """Node count, the second tenants' share of the storage side, and the layout's roles."""
    c = point.cluster
    _int(c.nodes, 1, "cluster.nodes", maximum=Provider.max_nodes)
    if not _number_in(c.storage_load, 0, MAX_STORAGE_LOAD):
        raise UsageError(f"cluster.storage_load {c.storage_load!r} is not a share of each storage host's cores "
                         f"from 0 to {MAX_STORAGE_LOAD:g} (0.5: half of them busy with a second tenant's CPU load)")
    _int(c.storage_scans, 0, "cluster.storage_scans (a second application's scan calls in flight)",
         maximum=MAX_STORAGE_SCANS)
    if c.layout is None:
        return
    if not isinstance(c.layout, dict):
        raise UsageError("cluster.layout must map roles to node names")
    for role, names in c.layout.items():
        if role not in ROLES:
            raise UsageError(f"unknown role {role!r} in cluster.layout (roles: {', '.join(ROLES)})")
        for n in [names] if isinstance(names, str) else names:
            if not isinstance(n, str) or not n:
                raise UsageError(f"cluster.layout role {role} names {n!r}, not a node name")


def _ceph_and_monitor(point: PointSpec) -> None:
    """The OSD store, size and count, the autoscaler switch, monitoring on or off (the Spark
    section is checked by :class:`SparkOptions` when the point's options are built)."""
    ceph = point.ceph
    if ceph.store not in STORES:
        raise UsageError(f"ceph.store {ceph.store!r} is not one of {', '.join(STORES)}")
    parse_size(ceph.osd_size, what="ceph.osd_size")
    _int(ceph.osds_per_node, 1, "ceph.osds_per_node")
    _bool(ceph.pg_autoscale, "ceph.pg_autoscale")
    _bool(ceph.rgw, "ceph.rgw")
    _bool(point.monitor.enabled, "monitor.enabled")


def _data(point: PointSpec) -> None:
    """The dataset: generated or ingested, its objects' size, format, codec and multipliers."""
    d = point.data
    if d.generator not in GENERATORS:
        raise UsageError(f"data.generator {d.generator!r} is not one of {', '.join(GENERATORS)}")
    _int(d.seed, 0, "data.seed", maximum=MAX_SEED)
    if d.input is None:
        _int(d.rows, 1, "data.rows", maximum=MAX_ROWS)
    elif not isinstance(d.input, str) or not ingestible(d.input):
        raise UsageError(f"data.input {d.input!r} is not a Parquet or CSV file or a directory of them on this machine")
    check_object_size(d.object_size, "data.object_size")
    _int(d.link_multiplier, 1, "data.link_multiplier", maximum=MAX_MULTIPLIER)
    check_format(d.format, "data.format")
    check_codec(d.stored_compression, "data.stored_compression", fmt=d.format)
    check_page_rows(d.page_rows, d.format, "data.page_rows")
    _int(d.copy_multiplier, 1, "data.copy_multiplier", maximum=MAX_MULTIPLIER)


def _reader(point: PointSpec) -> None:
    """The reader is one of :data:`~sae.planning.readers.READERS` and reads the stored format."""
    w, fmt = point.workload, point.data.format
    if w.reader not in readers.READERS:
        hint = "; " + _OFFLOAD_GONE if w.reader == "connector" else ""
        raise UsageError(f"workload.reader {w.reader!r} is not one of {', '.join(readers.READERS)}{hint}")
    if why := readers.READERS[w.reader].why_not(fmt):
        able = ", ".join(r.name for r in readers.READERS.values() if not r.why_not(fmt))
        raise UsageError(f"workload.reader {w.reader} cannot read data.format {fmt}: {why}; use one of {able}")
    question = w.question   # UsageError for an unknown query
    if why := readers.READERS[w.reader].why_not_answer(question):
        able = ", ".join(r.name for r in readers.READERS.values() if not r.why_not_answer(question))
        raise UsageError(f"workload.reader {w.reader} cannot answer workload.query {w.query}: {why}; "
                         f"use one of {able}")
    need = getattr(readers.READERS[w.reader].reads, "min_spark", 0)
    major = point.spark.version.split(".")[0]
    if need and major.isdigit() and int(major) < need:
        raise UsageError(f"workload.reader {w.reader} needs Spark {need} or later (its jar is built against Spark "
                         f"{need}'s API), not spark.version {point.spark.version}")


def _read_options(point: PointSpec) -> None:
    """How the reader reads: each of :data:`READ_OPTIONS` as the connector checks it (in the
    modes it applies to), and reply compression that the point's Spark can decode."""
    w, reader = point.workload, readers.READERS[point.workload.reader]
    for name in READ_OPTIONS:
        option, value = CONNECTOR_OPTIONS[name], getattr(w, name)
        option.check(value, f"workload.{name}")
        if option.render(value) is not None and not option.applies_to(reader.reads.mode):
            takers = ", ".join(r.name for r in readers.READERS.values() if option.applies_to(r.reads.mode))
            raise UsageError(f"workload.{name} {value} applies to reader {takers} only, not {w.reader}")
    if w.compression != "none" and reader.connector \
            and ships_arrow_compression(point.spark.version) is False:   # None: not a version, SparkOptions says
        raise UsageError(f"workload.compression {w.compression} needs Arrow's compression module in Spark, which "
                         f"Spark {point.spark.version} does not ship (Spark 4.1 and later do): use compression none")


def _question(point: PointSpec) -> None:
    """The columns and the query exist in the data, and the stored format can answer the query."""
    w, d = point.workload, point.data
    cols = w.columns
    if isinstance(cols, str) or not all(isinstance(c, str) and c for c in cols):
        raise UsageError(f"workload.columns must be a list of column names, not {cols!r}")
    if d.input is None:   # generated taxi data: the schema is known now
        unknown = [c for c in [*cols, w.column] if c not in TAXI_SCHEMA.names]
        if unknown:
            raise UsageError(f"workload: unknown column(s) {', '.join(map(repr, unknown))} (the taxi data has "
                             f"{', '.join(TAXI_SCHEMA.names)})")
    if w.question.joins_zones and d.format == "csv":   # w.question: UsageError for an unknown query
        raise UsageError(f"workload.query {w.query} joins the zones table, which is stored as Parquet; data.format "
                         f"csv takes the queries over trips alone")
    sel = w.selectivity
    if isinstance(sel, bool) or not isinstance(sel, (int, float)):
        raise UsageError(f"selectivity {sel!r} is not a number (the percent of rows kept, above 0 and at most 100)")
    if not 0 < sel <= 100:
        raise UsageError(f"selectivity {sel!r} is outside (0, 100] percent")


def _keyed(point: PointSpec) -> None:
    """The key queries' parameters: the keys of a lookup, the probe's share, the appends and the
    lost executor."""
    w = point.workload
    _int(w.keys, 1, "workload.keys (keys of one lookup)", maximum=MAX_KEYS)
    if not _number_in(w.probe, 0, 100) or w.probe == 0:
        raise UsageError(f"workload.probe {w.probe!r} is not a percent of the data's keys above 0 and at most 100")
    _int(w.append_rows, 0, "workload.append_rows (rows of one append)", maximum=MAX_APPEND_ROWS)
    _int(w.append_every, 1, "workload.append_every (repetitions between appends)", maximum=MAX_REPETITIONS)
    if w.append_rows and not w.question.views:
        keyed = ", ".join(name for name, q in queries.QUERIES.items() if q.views)
        raise UsageError(f"workload.append_rows {w.append_rows} applies to the key queries ({keyed}), not "
                         f"workload.query {w.query}; set append_rows 0")
    if w.lose_executor is not None:
        _int(w.lose_executor, 1, "workload.lose_executor (the repetition an executor is lost before)",
             maximum=MAX_REPETITIONS)


def _write(point: PointSpec) -> None:
    """A write job: a known writer and job, a Gateway for the S3 writers, rows for teragen."""
    w = point.workload
    if w.writer is None:
        return
    writer, job = writers.get(w.writer), writers.job(w.write)
    if writer.interface == "s3" and not point.ceph.rgw:
        raise UsageError(f"workload.writer {w.writer} writes through S3, which needs the RADOS Gateway: set ceph.rgw "
                         f"true")
    _int(w.write_rows, 1, "workload.write_rows (rows teragen generates)", maximum=MAX_ROWS)
    if w.write_tasks is not None:
        _int(w.write_tasks, 1, "workload.write_tasks (tasks teragen writes in)", maximum=MAX_WRITE_TASKS)
        if not job.generates:
            makers = ", ".join(j.name for j in writers.JOBS.values() if j.generates)
            raise UsageError(f"workload.write_tasks {w.write_tasks}: only {makers} chooses its tasks (the {w.write} job "
                             f"writes in the tasks its input comes in); leave it unset or write {makers}")
    if w.query != queries.SCAN.name or w.append_rows or w.lose_executor is not None:
        raise UsageError(f"workload.writer {w.writer}: a write job ({job.name}) asks no query; leave workload.query, "
                         f"append_rows and lose_executor unset")
    if readers.READERS[w.reader].reads.keep:
        raise UsageError(f"workload.writer {w.writer}: the {job.name} job reads the dataset with workload.reader, "
                         f"which cannot be {w.reader} (it keeps the data in memory); use one of "
                         f"{', '.join(n for n, r in readers.READERS.items() if not r.reads.keep)}")


CHECKS = (_cluster, _ceph_and_monitor, _data, _reader, _read_options, _question, _keyed, _write)
"""The checks of a resolved point, in the order their sections are written."""


def _bool(value, what: str) -> None:
    if not isinstance(value, bool):
        raise UsageError(f"{what} must be true or false, not {value!r}")


def _number_in(value, lo: float, hi: float) -> bool:
    """Whether ``value`` is a real number (not a bool, not NaN) from ``lo`` to ``hi``."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and lo <= value <= hi


def _int(value, minimum: int, what: str, maximum: int | None = None) -> None:
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or maximum is not None and value > maximum):
        upper = f" and <= {maximum}" if maximum is not None else ""
        raise UsageError(f"{what} must be an integer >= {minimum}{upper}, not {value!r}")


def _signature(fn) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):   # not callable, or a built-in without one
        return ""


def _takes_one(fn) -> bool:
    """Whether ``fn`` is a function that can be called with one positional argument (a stage's
    ``StageInput``)."""
    try:
        inspect.signature(fn).bind(None)
    except (TypeError, ValueError):
        return False
    return True


def validate(experiment: Experiment) -> list[tuple[dict, PointSpec]]:
    """Validate an experiment (after its profile); returns (axes, resolved point) per sweep
    point, in sweep order."""
    where = f"experiment {experiment.name!r}"
    try:
        validate_name(experiment.name, "name")
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None
    for key in SECTIONS:
        if not isinstance(getattr(experiment, key), SECTIONS[key]):
            raise UsageError(f"{where}: {key} must be a {SECTIONS[key].__name__}")
    if not isinstance(experiment.sweep, Sweep):
        raise UsageError(f"{where}: sweep must be a Sweep")
    for stage, fn in experiment.stages.items():
        if stage not in STAGES:
            raise UsageError(f"{where}: unknown stage {stage!r} (stages: {', '.join(STAGES)})")
        if not _takes_one(fn):
            raise UsageError(f"{where}: stage {stage!r} must be a function taking one StageInput and returning a "
                             f"StageResult (sae.running), not {getattr(fn, '__name__', repr(fn))}"
                             f"{_signature(fn)}")
    if isinstance(experiment.figures, str) or not isinstance(experiment.figures, (list, tuple)):
        raise UsageError(f"{where}: figures must be a list of figure names, not {experiment.figures!r}")
    for figure in experiment.figures:
        if figure not in figures.FIGURES:
            raise UsageError(f"{where}: figures: unknown figure {figure!r} (figures: {', '.join(figures.names())})")
    _int(experiment.repetitions, 1, f"{where}: repetitions", maximum=MAX_REPETITIONS)
    if not _number_in(experiment.pause, 0, MAX_PAUSE):
        raise UsageError(f"{where}: pause must be a number of seconds from 0 to {MAX_PAUSE}, "
                         f"not {experiment.pause!r}")
    if isinstance(experiment.warmup, bool) or not isinstance(experiment.warmup, int) \
            or not 0 <= experiment.warmup < experiment.repetitions:
        raise UsageError(f"{where}: warmup must be an integer in [0, repetitions), not {experiment.warmup!r}")
    for axis, values in {**experiment.sweep.cartesian, **experiment.sweep.zipped}.items():
        axis_target(axis)
        if not isinstance(values, (list, tuple)) or not values:
            raise UsageError(f"{where}: sweep axis {axis!r} has no values; give a non-empty list")
    _check_sweep_repetitions(experiment, where)
    if not isinstance(experiment.drift, bool):
        raise UsageError(f"{where}: drift must be true or false, not {experiment.drift!r}")
    if not isinstance(experiment.description, str):
        raise UsageError(f"{where}: description must be a string, not {experiment.description!r}")
    size = math.prod(len(v) for v in experiment.sweep.cartesian.values()) * max(
        [len(v) for v in experiment.sweep.zipped.values()] or [1])
    if size > MAX_POINTS:
        raise UsageError(f"{where}: the sweep has {size} points, more than {MAX_POINTS}; sweep fewer values")
    axes_list = experiment.sweep.points()
    if not axes_list:
        raise UsageError(f"{where}: the sweep is empty (its 'where' filter keeps no point)")
    points, seen = [], {}
    for i, axes in enumerate(axes_list):
        spec = PointSpec.resolve(experiment, axes, f"{where} point {i} {_axes_text(axes)}".rstrip())
        check_metric_window(experiment.pause, spec, f"{where} point {i} {_axes_text(axes)}".rstrip())
        key = repr(_same_value(spec.params()))
        if key in seen:   # e.g. object sizes "4M" and "4MiB", selectivities 1 and 1.0: the same point
            raise UsageError(f"{where}: sweep points {seen[key]} ({_axes_text(points[seen[key]][0])}) and {i} "
                             f"({_axes_text(axes)}) are the same point; list each value once")
        seen[key] = i
        points.append((axes, spec))
    return points


def _check_sweep_repetitions(experiment: Experiment, where: str) -> None:
    """``Sweep.repetitions``: axis → {value of that axis: repetitions above the warm-ups}."""
    sweep = experiment.sweep
    if not isinstance(sweep.repetitions, dict):
        raise UsageError(f"{where}: sweep repetitions must map an axis to {{value: repetitions}}, "
                         f"not {sweep.repetitions!r}")
    axes = {**sweep.cartesian, **sweep.zipped}
    for axis, table in sweep.repetitions.items():
        if axis not in axes:
            raise UsageError(f"{where}: sweep repetitions: {axis!r} is not an axis of the sweep "
                             f"(axes: {', '.join(axes) or 'none'})")
        if not isinstance(table, dict) or not table:
            raise UsageError(f"{where}: sweep repetitions: {axis!r} must map values of the axis to "
                             f"repetitions, e.g. {{{axes[axis][0]!r}: 5}}, not {table!r}")
        known = [_same_value(v) for v in axes[axis]]
        for value, count in table.items():
            if _same_value(value) not in known:
                raise UsageError(f"{where}: sweep repetitions: {axis}={value!r} is not a value of the axis "
                                 f"({', '.join(map(str, axes[axis]))})")
            _int(count, experiment.warmup + 1, f"{where}: sweep repetitions {axis}={value}",
                 maximum=MAX_REPETITIONS)


def check_metric_window(pause: float, spec: PointSpec, where: str) -> None:
    """The metric-window rule (:data:`WINDOW_MARGIN`) for one resolved point; UsageError naming
    ``where``, the pause and the scrape interval."""
    if spec.monitor_options is None:
        return
    interval = spec.monitor_options.interval_seconds
    if pause < interval + WINDOW_MARGIN:
        raise UsageError(f"{where}: pause {pause:g} s is shorter than monitor.scrape_interval "
                         f"{spec.monitor.scrape_interval} plus {WINDOW_MARGIN:g} s, so a repetition's "
                         f"counters may be read from its neighbours' scrapes; set pause >= "
                         f"{interval + WINDOW_MARGIN:g} or a shorter scrape interval")


def _same_value(value):
    """``value`` with numbers as floats, so 1 and 1.0 compare as the one value they are."""
    if isinstance(value, dict):
        return {k: _same_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_same_value(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _axes_text(axes: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in axes.items())
