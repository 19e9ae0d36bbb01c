"""An indexed cache in Spark's memory: the Indexed DataFrame of Uta, Ghit, Dave, Rellermeyer and
Boncz (IPDPS 2022), for PySpark.

:func:`create_index` hash-partitions a DataFrame's rows on a key column into the executors'
memory, each partition holding its rows as Spark's UnsafeRow bytes in append-only chunks plus a
hash map from key to rows (the JVM side, package ``sae.indexed`` under ``jvm/``). The returned
:class:`IndexedFrame` answers point lookups (:meth:`~IndexedFrame.get_rows`: a job over the
partitions the keys hash to only), indexed equi-joins (:meth:`~IndexedFrame.join`: the probe side
shuffled to the index's partitions), appends that make a new version and leave the old one as
it was (:meth:`~IndexedFrame.append_rows`), and says what it holds (:meth:`~IndexedFrame.memory`).
Every answer is the one Spark's own filter or inner join gives over the same rows.

The session needs the jar on its class path::

    spark = SparkSession.builder.config("spark.jars", str(sae.indexed.jar())).getOrCreate()
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import struct
from collections.abc import Iterable

from pyspark.errors import IllegalArgumentException
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from metareserve.errors import UsageError

from .build import cache_dir, jar, jvm_sources, spark_jars

__all__ = ["create_index", "IndexedFrame", "IndexMemory", "PartitionMemory", "jar", "cache_dir", "jvm_sources",
           "spark_jars", "KEY_TYPES"]

KEY_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DateType, T.TimestampType, T.TimestampNTZType,
             T.StringType)
"""The types a key column may have."""
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


@dataclasses.dataclass(frozen=True)
class PartitionMemory:
    """What one partition of an index version holds (``partition`` -1: all of them summed).
    Bytes include what the version shares with the versions it was appended to."""

    partition: int
    rows: int
    null_key_rows: int
    """Rows whose key is null: kept (the frame's DataFrame returns them), matched by no lookup."""
    keys: int
    """Distinct non-null keys."""
    row_bytes: int
    """The rows in Spark's UnsafeRow format."""
    header_bytes: int
    """8 bytes a row: its size and the link to the previous row of its key."""
    chunk_bytes: int
    """The chunks holding rows and headers."""
    index_bytes: int
    """The key maps' tables."""
    maps: int
    """Key maps a lookup probes (one, plus one per append until they are merged)."""
    build_seconds: float
    """Time the partition took to build (its own rows only, for an append; summed for -1)."""

    @classmethod
    def _of(cls, j) -> PartitionMemory:
        return cls(j.partition(), j.rows(), j.nullKeyRows(), j.keys(), j.rowBytes(), j.headerBytes(),
                   j.chunkBytes(), j.indexBytes(), j.maps(), j.buildNanos() / 1e9)


@dataclasses.dataclass(frozen=True)
class IndexMemory:
    """An index version's memory per partition and in all, and its build time."""

    partitions: tuple[PartitionMemory, ...]
    total: PartitionMemory
    build_seconds: float
    """Wall time of the create or append call (its job included)."""

    @property
    def index_share(self) -> float:
        """Key maps against row bytes (the paper reports under 2 %)."""
        return self.total.index_bytes / self.total.row_bytes if self.total.row_bytes else 0.0


class IndexedFrame:
    """One version of an index (see the module): lookups, joins, appends, memory."""

    def __init__(self, jframe, session):
        self._j = jframe
        self._session = session
        self.key = jframe.keyColumn()
        self.partitions = jframe.numPartitions()
        self.version = jframe.version()
        self.schema = T.StructType.fromJson(json.loads(jframe.schema().json()))
        self._key_type = self.schema[self.key].dataType

    def get_rows(self, keys) -> DataFrame:
        """The rows whose key is ``keys`` (one value) or one of ``keys`` (an iterable), as a
        DataFrame of the source's schema held on the driver: what ``df.filter(col(key).isin(keys))``
        returns. None matches nothing; dates and times may be given as Python objects. Runs one
        job, over the partitions the keys hash to only."""
        packed = self._packed(keys, "get_rows")
        return DataFrame(_jvm(lambda: self._j.getRowsPacked(packed)), self._session)

    def partitions_of(self, keys) -> list[int]:
        """The partitions :meth:`get_rows` of ``keys`` reads."""
        packed = self._packed(keys, "partitions_of")
        return list(_jvm(lambda: self._j.partitionsOfPacked(packed)))

    def join(self, other: DataFrame, column: str) -> DataFrame:
        """The inner join of the index with ``other`` on ``other[column]`` = the key: the index's
        columns, then ``other``'s, as ``df.join(other, df[key] == other[column])`` gives. ``other``
        is shuffled to the index's partitions (now, with adaptive execution on) and looks its keys up
        when the answer is read; the index's rows stay where they are."""
        _field(other.schema, column, "join")
        return DataFrame(_jvm(lambda: self._j.join(other._jdf, column)), self._session)

    def append_rows(self, df: DataFrame) -> IndexedFrame:
        """A new version with ``df``'s rows added (columns matched by name, the same types); this
        version stays readable and unchanged. Builds the new version's partitions before returning."""
        return IndexedFrame(_jvm(lambda: self._j.appendRows(df._jdf)), self._session)

    @property
    def df(self) -> DataFrame:
        """This version's rows as a DataFrame whose ``==``, ``eqNullSafe`` and ``isin`` filters on the key
        (and ANDs and ORs of them) read only the partitions and rows of those keys."""
        return DataFrame(self._j.toDF(), self._session)

    def memory(self) -> IndexMemory:
        """Rows, keys and bytes per partition and in all, and the build time."""
        parts = tuple(PartitionMemory._of(p) for p in self._j.partitionStats())
        return IndexMemory(parts, PartitionMemory._of(self._j.memory()), self._j.buildNanos() / 1e9)

    def unpersist(self) -> None:
        """Drop this version's cached partitions (newer versions keep what they share)."""
        self._j.unpersist()

    def _packed(self, keys, what: str) -> bytes:
        """``keys`` as :meth:`IndexedFrame.getRowsPacked` takes them (keys that match nothing left out):
        one call through Py4J however many keys (Py4J converts a list an element per call)."""
        if keys is None or isinstance(keys, (str, bytes, int, datetime.date)) or not isinstance(keys, Iterable):
            keys = [keys]
        values = [v for v in (self._internal(k, what) for k in keys) if v is not None]
        if isinstance(self._key_type, T.StringType):
            return b"".join(struct.pack("<i", len(b)) + b for b in (v.encode() for v in values))
        return struct.pack(f"<{len(values)}q", *values)

    def _internal(self, k, what: str):
        """The key's internal value (days for a date, microseconds for a time); None if it equals no key."""
        t = self._key_type
        if k is None:
            return None
        if isinstance(t, _INTEGRAL) and isinstance(k, int) and not isinstance(k, bool):
            return k if -2**63 <= k < 2**63 else None
        if isinstance(t, T.StringType) and isinstance(k, str):
            return k
        if isinstance(t, T.DateType) and isinstance(k, datetime.date) and not isinstance(k, datetime.datetime):
            return t.toInternal(k)
        if isinstance(t, (T.TimestampType, T.TimestampNTZType)) and isinstance(k, datetime.datetime):
            return t.toInternal(k)
        raise UsageError(f"{what}: key {k!r} is {type(k).__name__}; the index key {self.key} is "
                         f"{t.simpleString()}: give keys of that type")

    def __repr__(self) -> str:
        return f"IndexedFrame(key={self.key!r}, partitions={self.partitions}, version={self.version})"


def create_index(df: DataFrame, column: str, partitions: int | None = None) -> IndexedFrame:
    """Index ``df`` (from any reader) on ``column`` in ``partitions`` partitions (default: the
    session's default parallelism), cached in the executors' memory; builds it before returning."""
    f = _field(df.schema, column, "create_index")
    if not isinstance(f.dataType, KEY_TYPES) or isinstance(f.dataType, T.StringType) and \
            getattr(f.dataType, "collation", "UTF8_BINARY") != "UTF8_BINARY":
        raise UsageError(f"create_index: column {f.name} is {f.dataType.simpleString()}; index a column of "
                         f"{', '.join(t.typeName() for t in KEY_TYPES)}")
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise UsageError(f"create_index: partitions must be a whole number of 1 or more, not {partitions!r}")
    session = df.sparkSession
    cls = session._jvm.sae.indexed.IndexedFrame
    from py4j.java_gateway import JavaClass
    if not isinstance(cls, JavaClass):
        raise UsageError("create_index: the session has no sae.indexed classes; start it with "
                         ".config('spark.jars', str(sae.indexed.jar()))")
    args = (df._jdf, f.name) if partitions is None else (df._jdf, f.name, partitions)
    jframe = _jvm(lambda: cls.create(*args))
    return IndexedFrame(jframe, session)


def _field(schema: T.StructType, column: str, what: str) -> T.StructField:
    exact = [f for f in schema.fields if f.name == column]
    loose = exact or [f for f in schema.fields if f.name.lower() == str(column).lower()]
    if len(loose) != 1:
        why = "is ambiguous" if loose else "is missing"
        raise UsageError(f"{what}: column {column!r} {why}; the columns are {', '.join(schema.names)}")
    return loose[0]


def _jvm(call):
    """``call()``; a JVM IllegalArgumentException (bad input the Java side found) as a UsageError."""
    try:
        return call()
    except IllegalArgumentException as e:
        raise UsageError(str(e).split("\n\nJVM stacktrace:", 1)[0]) from None
