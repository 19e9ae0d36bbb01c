"""The readers a workload reads its data with (``workload.reader``), each defined once: its name,
legend label and colour, whether it is a baseline offloading is measured against, and how it
reads (:class:`ConnectorRead`: the sae-ceph connector in one of its modes, a
:class:`~sae.connector.options.Mode`, from which the data source's ``Mode.java`` is rendered;
:class:`SparkFiles`: Spark's own Parquet or CSV reader over a CephFS mount; :class:`InMemory`:
read once per application and kept in the executors' memory, by Spark's ``.cache()`` or by sae's
indexed cache).

Adding a reader is one entry in :data:`READERS` (docs/conventions.md, "Adding a reader"); the
spec, the connector, the run stage, the cost model, the report, the figures and the benchmarks
all read it here.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from metareserve.errors import UsageError

from ..connector.build import SubmitSpec
from ..connector.options import Mode
from . import queries
from .queries import Query


@dataclasses.dataclass(frozen=True)
class ReadSource:
    """What a Spark application reads: each ``register`` entry (``"module:function"``) is called
    with the session, then ``spark.read.format(format).options(**options)`` (with
    ``.schema(schema)`` when set: the columns of CSV files, which store none) ``.load(path)``."""

    format: str
    path: str
    options: dict[str, str]
    register: tuple[str, ...] = ()
    schema: str | None = None
    keep: str | None = None
    """What the application keeps of the read (:class:`InMemory`): None, ``cache`` or ``index``."""

    def app_config(self) -> dict:
        """Plain data for the application's JSON argument (``sae/app/run_points.py``)."""
        return {"format": self.format, "path": self.path, "options": dict(self.options),
                "register": list(self.register), **({"schema": self.schema} if self.schema else {}),
                **({"keep": self.keep} if self.keep else {})}


_DDL_TYPES = {"bool": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT",
              "float": "FLOAT", "double": "DOUBLE", "string": "STRING", "date32[day]": "DATE",
              "timestamp[us]": "TIMESTAMP_NTZ", "timestamp[us, tz=UTC]": "TIMESTAMP"}


def spark_ddl(schema) -> str:
    """A pyarrow schema as the Spark DDL Spark reads its Arrow and Parquet types as (what a CSV
    read is given: the data's own schema, so every reader sees the same types)."""
    try:
        return ", ".join(f"`{f.name}` {_DDL_TYPES[str(f.type)]}" for f in schema)
    except KeyError as e:
        raise UsageError(f"data: column type {e.args[0]} has no Spark CSV type here; "
                         f"use one of {', '.join(_DDL_TYPES)}") from None


def _csv_schema(fmt: str) -> str | None:
    """The DDL a read of stored format ``fmt`` is given: the data's schema for CSV, else none."""
    if fmt != "csv":
        return None
    from data_deploy import SCHEMA   # every dataset is cast to it (generated or ingested)
    return spark_ddl(SCHEMA)


@dataclasses.dataclass(frozen=True)
class ConnectorRead:
    """Through the sae-ceph connector in ``mode`` (what the mode leaves to the OSDs; the data
    source's ``Mode.java`` is rendered from the connector readers' modes)."""

    mode: Mode
    needs_mount: ClassVar[bool] = False
    keep: ClassVar[None] = None   # reads the stored objects at every query

    def why_not(self, query: Query) -> None:
        """Why it cannot answer ``query``: it answers every query."""
        return None

    def source(self, path: str, *, build: SubmitSpec, mount: str | None, options: dict[str, str],
               fmt: str = "parquet") -> ReadSource:
        """The read of CephFS ``path`` (objects stored as ``fmt``): the connector's ``options``
        (compression, batch size, ...) on top of what its build needs (Ceph configuration and user)."""
        return ReadSource(build.format, path, {**build.options, **options, "mode": self.mode.name},
                          tuple(build.register), _csv_schema(fmt))


@dataclasses.dataclass(frozen=True)
class SparkFiles:
    """Spark's own reader of the stored format over the CephFS mount: Parquet (no options), or CSV
    (a header line, the data's schema given)."""

    needs_mount: ClassVar[bool] = True
    mode: ClassVar[None] = None   # no connector mode
    keep: ClassVar[None] = None   # reads the stored files at every query

    def why_not(self, query: Query) -> None:
        """Why it cannot answer ``query``: it answers every query."""
        return None

    def source(self, path: str, *, build: SubmitSpec | None, mount: str | None, options: dict[str, str],
               fmt: str = "parquet") -> ReadSource:
        """The read of CephFS ``path`` (files stored as ``fmt``) through the mount at ``mount``."""
        if fmt == "csv":
            return ReadSource("csv", f"file://{mount}{path}", {"header": "true"}, schema=_csv_schema(fmt))
        return ReadSource("parquet", f"file://{mount}{path}", {})


KEEPS = ("cache", "index")
"""What an :class:`InMemory` reader keeps: Spark's own cache, or sae's indexed cache."""


@dataclasses.dataclass(frozen=True)
class InMemory:
    """Read once per Spark application through ``via`` and kept in the executors' memory
    (``keep``): ``cache``, Spark's own ``.cache()`` of the DataFrame, which every query then reads;
    ``index``, sae's indexed cache (:mod:`sae.indexed`, the Indexed DataFrame) on the queries' key
    (:data:`sae.planning.queries.KEY`), which answers only the queries that say how the index
    answers them (``Query.index``) and needs Spark ``min_spark`` or later (its jar is built against
    Spark 4's classic API). The application builds the copy before a point's first query and records
    its time and memory apart from the queries' (docs/results.md)."""

    keep: str
    via: SparkFiles = SparkFiles()
    min_spark: int = 0
    mode: ClassVar[None] = None   # no connector mode

    @property
    def needs_mount(self) -> bool:
        return self.via.needs_mount

    def why_not(self, query: Query) -> str | None:
        """Why it cannot answer ``query``; None when it can."""
        if self.keep == "index" and query.index is None:
            able = ", ".join(name for name, q in queries.QUERIES.items() if q.index)
            return f"the index answers lookups and joins on the key {queries.KEY} ({able}), which {query.name} is not"
        return None

    def source(self, path: str, *, build: SubmitSpec | None, mount: str | None, options: dict[str, str],
               fmt: str = "parquet") -> ReadSource:
        """``via``'s read of CephFS ``path``, kept as ``keep`` says."""
        return dataclasses.replace(self.via.source(path, build=build, mount=mount, options=options, fmt=fmt),
                                   keep=self.keep)


@dataclasses.dataclass(frozen=True)
class Reader:
    """One reader: ``name`` (the value of ``workload.reader``), ``label`` and ``colour`` (figures),
    ``baseline`` (offloading readers are compared against every baseline in the summary), how
    it ``reads``, its ``definition`` (one line, for the report's readers list) and the stored
    formats (``data.format``) it ``cannot_read``, each with why (refused at plan time)."""

    name: str
    label: str
    colour: str
    baseline: bool
    reads: ConnectorRead | SparkFiles | InMemory
    definition: str = ""
    cannot_read: tuple[tuple[str, str], ...] = ()

    def why_not(self, fmt: str) -> str | None:
        """Why this reader cannot read stored format ``fmt``; None when it can."""
        return dict(self.cannot_read).get(fmt)

    def why_not_answer(self, query: Query) -> str | None:
        """Why this reader cannot answer ``query``; None when it can."""
        return self.reads.why_not(query)

    @property
    def connector(self) -> bool:
        """Whether it reads through the connector (reply compression and batch size apply)."""
        return isinstance(self.reads, ConnectorRead)


OFFLOAD = Reader("offload", "offload", "tab:green", False, ConnectorRead(Mode("offload", pushdown=True)),
                 "the sae-ceph connector with the filter and the projection pushed into the Ceph OSDs, "
                 "which return only the rows and columns the query keeps")
"""The connector with the filters and the projection in the OSDs."""
OFFLOAD_INDEX = Reader("offload-index", "offload + OSD index", "tab:olive", False,
                       ConnectorRead(Mode("offload-index", pushdown=True, index=True)),
                       "offload, each OSD first probing the object's index of the key (the pickup time, "
                       "built beside each object in its omap when the dataset is deployed): an object holding "
                       "none of a lookup's or join's keys is answered without reading a column",
                       (("csv", "the OSD index is of Parquet objects"), ("ipc", "the OSD index is of Parquet objects")))
"""Offload with the OSD index of the key (rados_deploy.osd_index)."""
AUTO = Reader("auto", "auto", "tab:purple", False, ConnectorRead(Mode("auto", pushdown=True, pushback=True)),
              "the sae-ceph connector deciding per object: the scan (filter, projection, aggregates, "
              "top-k) pushed into the OSD as offload does, or the object read whole and the same scan "
              "run by the Spark task (the class's code as a library), whichever its cost model, fed by "
              "the OSDs' reported scan work, says costs less (pushback), and the objects that fit in a "
              "task's waits for its pushed replies scanned by the task meanwhile")
"""The connector choosing per object between offload and reading the object whole (pushback)."""
NO_OFFLOAD = Reader("no-offload", "no-offload", "tab:orange", True, ConnectorRead(Mode("no-offload", pushdown=False)),
                    "the same connector, the OSDs returning every row and column; Spark filters "
                    "(the thesis's baseline)")
"""The same connector, the OSDs returning every row and column (the thesis's baseline)."""
VANILLA = Reader("vanilla", "vanilla", "tab:blue", True, SparkFiles(),
                 "Spark's own Parquet (or CSV) reader over a CephFS mount: the stored files are read "
                 "whole and Spark filters", (("ipc", "Spark has no reader of Arrow IPC files"),))
"""Vanilla Spark Parquet (or CSV) over a CephFS mount."""
INDEXED = Reader("indexed", "indexed", "tab:red", False, InMemory("index", min_spark=4),
                 "sae's indexed cache (the Indexed DataFrame of Uta et al.) of the dataset read by vanilla, "
                 "built once per application: its rows hash-partitioned on the pickup time with a hash index "
                 "per partition; a lookup reads only the partitions of its keys, a join looks the probe's "
                 "keys up", VANILLA.cannot_read)
"""sae's indexed cache of the vanilla read: key lookups and indexed joins."""
CACHE = Reader("cache", "cache", "tab:brown", True, InMemory("cache"),
               "Spark's own .cache() of the dataset read by vanilla (compressed column batches in the "
               "executors' memory), built once per application; every query reads the cached rows",
               VANILLA.cannot_read)
"""Spark's own cache of the vanilla read (the indexed cache's baseline)."""

READERS = {r.name: r for r in (OFFLOAD, OFFLOAD_INDEX, AUTO, NO_OFFLOAD, VANILLA, INDEXED, CACHE)}
"""Every reader by name, in the order figures and summaries list them."""
STANDARD = (OFFLOAD, NO_OFFLOAD, VANILLA)
"""The readers an experiment compares unless it names its own: offload and the thesis's two
baselines (``auto`` is asked for by name, as experiments/contention.py does)."""
def _names() -> tuple[str, ...]:
    return tuple(READERS)


def _baselines() -> tuple[str, ...]:
    return tuple(name for name, r in READERS.items() if r.baseline)


def _offloading() -> tuple[str, ...]:
    return tuple(name for name, r in READERS.items() if not r.baseline)


_DERIVED = {"NAMES": _names, "BASELINES": _baselines, "OFFLOADING": _offloading}


def __getattr__(name: str):
    """``NAMES`` (every reader's), ``BASELINES`` and ``OFFLOADING`` (the readers the summary
    compares against each baseline): derived from :data:`READERS` whenever they are read, so a
    reader is one entry there and nothing else."""
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(name: str, where: str = "workload.reader") -> Reader:
    """The reader called ``name``; UsageError naming ``where`` and the readers otherwise."""
    try:
        return READERS[name]
    except (KeyError, TypeError):
        raise UsageError(f"{where} {name!r} is not one of {', '.join(READERS)}") from None


def names(*readers: Reader) -> list[str]:
    """The names of ``readers`` (a sweep's ``reader`` axis); the :data:`STANDARD` ones when none is given."""
    return [r.name for r in readers or STANDARD]


def ratio_pair(present) -> tuple[str, str] | None:
    """(offloading reader, baseline): the first of each among the reader names ``present``, for
    a figure's baseline / offload ratio; None without both."""
    present = set(present)
    subject = next((n for n in _offloading() if n in present), None)
    base = next((n for n in _baselines() if n in present), None)
    return (subject, base) if subject and base else None


def order(name: str) -> int:
    """Where reader ``name`` comes in :data:`READERS` (unknown names last)."""
    return list(READERS).index(name) if name in READERS else len(READERS)
