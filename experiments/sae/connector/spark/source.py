"""The ``sae-ceph`` Spark data source: Parquet files in CephFS, one partition per RADOS object,
filters and projection executed by the ``sae`` object class inside the OSDs.

Runs in the Spark driver's planning workers and in executor Python workers; needs only pyspark,
pyarrow and Debian's ``rados``/``cephfs`` bindings. Options (all strings):

=====================  ====================================================================
``path``               CephFS file or directory (``load(path)``); ``*.parquet`` files are read
``offload``            ``true`` (default): scan in the OSDs; ``false``: read whole objects and
                       decode and filter on the client
``compression``        reply body compression: ``none``, ``lz4`` (default), ``zstd``
``batch_size``         rows per Arrow batch (default 65536)
``columns``            comma-separated columns to narrow the DataFrame to (each query is also
                       pruned to the columns it uses by the session extension)
``ceph_conf``          client ceph.conf (default ``$CEPH_CONF``)
``objects_per_partition``  objects one task scans with parallel asynchronous calls (default 1)
``max_reply``          largest reply accepted, bytes (default 8x the object size, at least 64 MiB)
``timeout``            seconds before a RADOS call fails instead of hanging (default 120)
=====================  ====================================================================
"""
from __future__ import annotations

import glob
import importlib.util
import math
import os
import stat
import sys
import threading

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualNullSafe, EqualTo, GreaterThan,
                                    GreaterThanOrEqual, In, InputPartition, IsNotNull, IsNull, LessThan,
                                    LessThanOrEqual, Not, StringContains, StringEndsWith, StringStartsWith)
from pyspark.sql.types import DoubleType, FloatType, StructType

from .protocol import Request, ScanError, columns_of, decode_error, to_expression

FORMAT = "sae-ceph"
CLASS, METHOD = "sae", "scan"
_CMP = {EqualTo: "==", LessThan: "<", LessThanOrEqual: "<=", GreaterThan: ">", GreaterThanOrEqual: ">="}
_STRING = {StringStartsWith: "starts_with", StringEndsWith: "ends_with", StringContains: "contains"}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def ceph_bindings():
    """Debian's ``rados`` and ``cephfs`` modules, loaded from dist-packages if this python lacks them."""
    try:
        import cephfs
        import rados
        return rados, cephfs
    except ImportError:
        pass
    tag = "cpython-%d%d" % sys.version_info[:2]
    for name in ("rados", "cephfs"):
        found = glob.glob(f"/usr/lib/python3/dist-packages/{name}.{tag}-*.so")
        if not found:
            raise RuntimeError(f"{FORMAT}: Ceph python bindings for {name} ({tag}) are missing on this "
                               "host; install python3-rados and python3-cephfs (rados_deploy does)")
        spec = importlib.util.spec_from_file_location(name, found[0])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules["rados"], sys.modules["cephfs"]


class Options:
    """Validated data source options; ValueError naming the option and the fix otherwise."""

    def __init__(self, options: dict):
        o = {k.lower(): v for k, v in options.items()}
        self.path = o.get("path") or _bad("path", None, "give the CephFS directory: load('/data/taxi')")
        self.offload = _bool(o.get("offload", "true"), "offload")
        self.compression = o.get("compression", "lz4").lower()
        if self.compression not in ("none", "lz4", "zstd"):
            _bad("compression", self.compression, "use none, lz4 or zstd")
        self.batch_size = _int(o.get("batch_size", "65536"), "batch_size", 1, 1 << 24)
        self.objects_per_partition = _int(o.get("objects_per_partition", "1"), "objects_per_partition", 1, 1 << 16)
        self.max_reply = _int(o.get("max_reply", "0"), "max_reply", 0, 1 << 31)
        self.timeout = _int(o.get("timeout", "120"), "timeout", 1, 86400)
        self.ceph_conf = o.get("ceph_conf") or os.environ.get("CEPH_CONF") or _bad(
            "ceph_conf", None, "pass .option('ceph_conf', PATH) or set CEPH_CONF")
        self.columns = [c.strip() for c in o.get("columns", "").split(",") if c.strip()]


def _bad(name, value, fix):
    raise ValueError(f"{FORMAT} option {name}={value!r} is invalid; {fix}")


def _bool(v: str, name: str) -> bool:
    if str(v).lower() in ("true", "1", "yes", "on"):
        return True
    if str(v).lower() in ("false", "0", "no", "off"):
        return False
    return _bad(name, v, "use true or false")


def _int(v: str, name: str, lo: int, hi: int) -> int:
    try:
        n = int(v)
    except ValueError:
        n = None
    if n is None or not lo <= n <= hi:
        _bad(name, v, f"use a whole number in {lo}..{hi}")
    return n


_CONN: dict = {}
_CONN_LOCK = threading.Lock()


def _cluster(conf: str, timeout: int):
    """One connected librados handle (and mounted libcephfs) per process and ceph.conf."""
    with _CONN_LOCK:
        if conf not in _CONN:
            rados, _ = ceph_bindings()
            r = rados.Rados(conffile=conf, conf={"rados_osd_op_timeout": str(timeout),
                                                 "rados_mon_op_timeout": str(timeout)})
            r.connect(timeout=timeout)
            _CONN[conf] = r
        return _CONN[conf]


def _mount(conf: str):
    _, cephfs = ceph_bindings()
    fs = cephfs.LibCephFS(conffile=conf)
    fs.mount()
    return fs


class _CephFile:
    """A read-only file object over a CephFS file, so pyarrow reads only the footer."""

    def __init__(self, fs, path: str, size: int):
        self.fs, self.fd, self.size, self.pos, self.closed = fs, fs.open(path, os.O_RDONLY, 0), size, 0, False

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def tell(self):
        return self.pos

    def read(self, n=-1):
        n = self.size - self.pos if n is None or n < 0 else min(n, self.size - self.pos)
        data = self.fs.read(self.fd, self.pos, n) if n > 0 else b""
        self.pos += len(data)
        return data

    def readable(self):
        return True

    def seekable(self):
        return True

    def close(self):
        if not self.closed:
            self.fs.close(self.fd)
            self.closed = True


def list_objects(fs, path: str) -> list[dict]:
    """The ``*.parquet`` files under ``path`` (a file or directory) as RADOS objects:
    ``[{"path", "oid", "pool", "size"}]`` sorted by path; ValueError if a file spans objects."""
    if stat.S_ISDIR(fs.stat(path).st_mode):
        d = fs.opendir(path)
        names = []
        try:
            while (e := fs.readdir(d)) is not None:
                name = e.d_name.decode()
                if name.endswith(".parquet"):
                    names.append(f"{path.rstrip('/')}/{name}")
        finally:
            fs.closedir(d)
        files = sorted(names)
    else:
        files = [path]
    out = []
    for f in files:
        s = fs.stat(f)
        osize = int(fs.getxattr(f, "ceph.file.layout.object_size").decode())
        if s.st_size > osize:
            raise ValueError(f"{FORMAT}: {f} is {s.st_size} bytes but its objects hold {osize}: it spans "
                             "several RADOS objects; deploy it with data_deploy (one file = one object)")
        out.append({"path": f, "oid": "%x.00000000" % s.st_ino, "size": s.st_size,
                    "pool": fs.getxattr(f, "ceph.file.layout.pool").decode()})
    return out


class SaeCephDataSource(DataSource):
    """``spark.read.format("sae-ceph").option(...).load(path)``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        """The first file's Parquet schema (or the ``columns`` option's subset of it)."""
        from pyspark.sql.pandas.types import from_arrow_schema
        opts = Options(self.options)
        fs = _mount(opts.ceph_conf)
        try:
            objs = list_objects(fs, opts.path)
            if not objs:
                raise ValueError(f"{FORMAT}: no *.parquet files under {opts.path}; deploy data there first")
            f = _CephFile(fs, objs[0]["path"], objs[0]["size"])
            try:
                schema = pq.read_schema(f)
            finally:
                f.close()
        finally:
            fs.shutdown()
        if opts.columns:
            missing = [c for c in opts.columns if c not in schema.names]
            if missing:
                _bad("columns", ",".join(missing), f"the files have {', '.join(schema.names)}")
            schema = pa.schema([schema.field(c) for c in opts.columns])
        return from_arrow_schema(schema)

    def reader(self, schema: StructType) -> "SaeCephReader":
        return SaeCephReader(Options(self.options), schema)


class ObjectsPartition(InputPartition):
    """The objects (dicts from :func:`list_objects`) one task scans."""


class SaeCephReader(DataSourceReader):
    """Turns the filters Spark offers into the class's filter tree and scans object by object."""

    def __init__(self, options: Options, schema: StructType):
        self.options, self.schema = options, schema
        self.columns = schema.fieldNames()
        self.filter: dict | None = None
        self._floating = {f.name for f in schema.fields if isinstance(f.dataType, (FloatType, DoubleType))}

    def pushFilters(self, filters):
        """Accept every filter the class evaluates exactly as Spark; yield back the others."""
        accepted = []
        for f in filters:
            node = self._translate(f)
            if node is None:
                yield f
            else:
                accepted.append(node)
        if accepted:
            self.filter = accepted[0] if len(accepted) == 1 else {"and": accepted}

    def _column(self, f) -> str | None:
        attr = getattr(f, "attribute", ())
        return attr[0] if len(attr) == 1 and attr[0] in self.columns else None

    def _translate(self, f) -> dict | None:
        if isinstance(f, Not):
            inner = self._translate(f.child)
            return None if inner is None else {"not": inner}
        col = self._column(f)
        if col is None:
            return None
        if isinstance(f, IsNull):
            return {"is_null": col}
        if isinstance(f, IsNotNull):
            return {"is_not_null": col}
        if isinstance(f, EqualNullSafe):
            if f.value is None:
                return {"is_null": col}
            return None if not _literal_ok(f.value) else {
                "and": [{"is_not_null": col}, {"cmp": "==", "column": col, "value": f.value}]}
        if type(f) in _CMP:
            op = _CMP[type(f)]
            # Spark orders NaN above every number, Arrow compares it false: keep > and >= on
            # floating columns in Spark.
            if not _literal_ok(f.value) or (col in self._floating and op in (">", ">=")):
                return None
            return {"cmp": op, "column": col, "value": f.value}
        if isinstance(f, In):
            values = list(f.value)
            if not values or not all(_literal_ok(v) for v in values):
                return None
            return {"in": col, "values": values}
        if type(f) in _STRING and isinstance(f.value, str):
            return {_STRING[type(f)]: col, "pattern": f.value}
        return None

    def partitions(self):
        """One partition per ``objects_per_partition`` objects of the dataset."""
        fs = _mount(self.options.ceph_conf)
        try:
            objs = list_objects(fs, self.options.path)
        finally:
            fs.shutdown()
        k = self.options.objects_per_partition
        return [ObjectsPartition(objs[i:i + k]) for i in range(0, len(objs), k)]

    def read(self, partition: ObjectsPartition):
        """Arrow batches of the partition's objects (offloaded, or decoded here)."""
        from pyspark.sql.pandas.types import to_arrow_schema
        target = to_arrow_schema(self.schema, timezone="UTC")
        r = _cluster(self.options.ceph_conf, self.options.timeout)
        fetch = self._scan if self.options.offload else self._raw
        for batch in fetch(r, partition.value):
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays(
                    [batch.column(f.name).cast(f.type) for f in target], schema=target)

    def _reply_limit(self, size: int) -> int:
        return self.options.max_reply or min(1 << 30, max(64 << 20, 8 * size))

    def _scan(self, r, objs: list[dict]):
        """Offload: asynchronous ``scan`` calls on every object, replies decoded in order."""
        done, replies = threading.Condition(), {}

        def finished(i):
            def cb(completion, data):
                with done:
                    replies[i] = (completion.get_return_value(), data)
                    done.notify_all()
            return cb

        pending = []
        for i, o in enumerate(objs):
            limit = self._reply_limit(o["size"])
            req = Request(columns=self.columns, filter=self.filter, codec=self.options.compression,
                          batch_rows=self.options.batch_size, max_reply=limit).encode()
            ioctx = r.open_ioctx(o["pool"])
            pending.append((ioctx, ioctx.aio_execute(o["oid"], CLASS, METHOD, req, length=limit + 4096,
                                                     oncomplete=finished(i))))
        try:
            for i, o in enumerate(objs):
                with done:
                    done.wait_for(lambda: i in replies)
                ret, data = replies.pop(i)
                if ret < 0 or data is None:
                    raise OSError(-ret, f"{FORMAT}: scan of {o['path']} (object {o['oid']}) failed: "
                                        f"{os.strerror(-ret)}; is the sae class installed on the OSDs?")
                err = decode_error(data)
                if err is not None:
                    raise ScanError(err.errno, f"{o['path']} (object {o['oid']}): {err.message}")
                yield from pa.ipc.open_stream(pa.py_buffer(data))
        finally:
            for ioctx, c in pending:
                c.wait_for_complete()
                ioctx.close()

    def _raw(self, r, objs: list[dict]):
        """No offload: read each whole object, decode and filter here."""
        need = list(dict.fromkeys(self.columns + columns_of(self.filter)))
        expr = to_expression(self.filter) if self.filter is not None else None
        for o in objs:
            ioctx = r.open_ioctx(o["pool"])
            try:
                data = ioctx.read(o["oid"], length=o["size"]) if o["size"] else b""
            finally:
                ioctx.close()
            pf = pq.ParquetFile(pa.BufferReader(data))
            for batch in pf.iter_batches(batch_size=self.options.batch_size, columns=need):
                table = pa.Table.from_batches([batch])
                if expr is not None:
                    table = table.filter(expr)
                yield from table.select(self.columns).to_batches()


def _literal_ok(v) -> bool:
    if isinstance(v, bool) or isinstance(v, str):
        return True
    if isinstance(v, int):
        return _INT64[0] <= v <= _INT64[1]
    return isinstance(v, float) and math.isfinite(v)


def register(spark) -> None:
    """Register the ``sae-ceph`` format with a SparkSession."""
    spark.dataSource.register(SaeCephDataSource)
