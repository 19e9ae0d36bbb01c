"""The scan request and reply of the sae object class (docs/protocol.md).

The protocol is defined once, in rados_deploy's ``cls/scan_protocol.json``
(:mod:`rados_deploy.scan_protocol`): this codec reads its constants from there, as the class
build (``protocol.h``) and the Java data source (``ProtocolSpec.java``) render theirs.

A filter is a small tree of dicts (JSON-friendly, so test vectors can hold it)::

    {"and": [node, ...]}  {"or": [node, ...]}  {"not": node}
    {"cmp": "<", "column": "total_amount", "value": 12.5}     # ==, !=, <, <=, >, >=
    {"is_null": "col"}  {"is_not_null": "col"}  {"in": "col", "values": [1, 2]}
    {"starts_with": "col", "pattern": "ab"}  (also "ends_with", "contains")

Literal values are bool, int (int64), float (float64), str or a timestamp (protocol 6) as a
one-key dict of microseconds since 1970-01-01 00:00: ``{"timestamp_us": n}`` (no time zone) or
``{"timestamp_us_utc": n}`` (in UTC). An aggregate request (protocol 3)
names group columns and ``(function, column)`` aggregates instead of a projection; :func:`aggregate`
is the reference of what the class computes for it. A top-k request (protocol 3) names a ``limit``
and ``(column, descending, nulls_first)`` sort keys; :func:`top_k` is its reference. A request for a
CSV object (protocol 4) carries the object's schema (:func:`csv_schema`). The Spark side
is Java (``jvm/sae/connector/Protocol.java``); this Python codec is the reference the test vectors
are made and checked with. Needs only the standard library and rados_deploy (and pyarrow for
:func:`to_expression`, :func:`aggregate` and :func:`top_k`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import operator
import struct

from rados_deploy.scan_protocol import SPEC

MAGIC = SPEC.request_magic
ERROR_MAGIC = SPEC.error_magic
REPLY_MAGIC = SPEC.reply_magic
VERSION = SPEC.version
FLAG_ERRORS_IN_BAND = SPEC.flags["errors_in_band"]
FLAG_WHOLE_OBJECT = SPEC.flags["whole_object"]
"""The client also takes the object as stored (a Parquet file) when it asked for every column and
every row passes (docs/protocol.md)."""
FLAG_AGGREGATE = SPEC.flags["aggregate"]
"""An aggregate section follows the filter; set by :meth:`Request.encode` when there are aggregates."""
FLAG_TOP_K = SPEC.flags["top_k"]
"""A top-k section follows the filter; set by :meth:`Request.encode` when there is a limit."""
FLAG_INDEX = SPEC.flags["index"]
"""Probe the object's index (rados_deploy.osd_index) for the filter's key values: an object that
holds none of them is answered without reading a column."""
FLAG_CSV = SPEC.flags["csv"]
"""The object is CSV and a schema section ends the request; set by :meth:`Request.encode` when there is a ``csv`` schema."""
_DESCENDING, _NULLS_FIRST = SPEC.key_flags["descending"], SPEC.key_flags["nulls_first"]
AGGREGATES = SPEC.aggregate_functions
"""Aggregate functions by their code: count_star, count, sum, min, max."""
BODIES = SPEC.bodies
"""Formats of a successful reply's body: ``arrow_ipc`` (an IPC stream), ``parquet`` (the object)."""
CODECS = {name: i for i, name in enumerate(SPEC.codecs)}
CMP_OPS = SPEC.cmp_ops
STATS = SPEC.stat_names
"""Names of the numbers a successful reply carries, in wire order (units: ``SPEC.stats``)."""
_NODES = SPEC.nodes
_AND, _OR, _NOT, _CMP, _IS_NULL, _IS_NOT_NULL, _IN = (_NODES[k] for k in ("and", "or", "not", "cmp", "is_null",
                                                                         "is_not_null", "in"))
_STRING_OPS = {k: _NODES[k] for k in ("starts_with", "ends_with", "contains")}
_LIT = SPEC.literals
TIMESTAMPS = {"timestamp_us": None, "timestamp_us_utc": "UTC"}
"""The timestamp literals' keys in a filter tree, and their Arrow time zones."""
_HEADER = struct.Struct("<4sHHB3xIQQ")
_REPLY_HEAD = struct.Struct("<4sHH")


class ProtocolError(ValueError):
    """Bytes that are not a valid request (raised by :func:`decode_request`)."""


class ScanError(Exception):
    """The class refused or failed a scan: ``errno`` plus the class's one-line message."""

    def __init__(self, errno: int, message: str):
        self.errno, self.message = errno, message
        super().__init__(f"errno {errno}: {message}")


@dataclasses.dataclass
class Request:
    """A scan request: projection (empty = all columns), filter tree, codec and limits; or, with
    ``aggregates`` (``(function, column)``, column None for count_star), the kept rows grouped by
    ``group_by`` and aggregated (no projection then); or, with a ``limit``, only the first
    ``limit`` kept rows by ``order_by`` (``(column, descending, nulls_first)``) and their ties, or
    in file order without sort keys. ``csv``: the object is a CSV file with a header line whose
    columns are this schema's (an Arrow IPC schema message, :func:`csv_schema`), by position.
    ``client``: who asks (one query's calls share it; 0 = no one in particular), so the reply can
    say how many of its client's calls ran beside it."""

    columns: list = dataclasses.field(default_factory=list)
    filter: dict | None = None
    codec: str = "none"
    batch_rows: int = 0
    max_reply: int = 0
    client: int = 0
    flags: int = FLAG_ERRORS_IN_BAND
    group_by: list = dataclasses.field(default_factory=list)
    aggregates: list = dataclasses.field(default_factory=list)
    limit: int | None = None
    order_by: list = dataclasses.field(default_factory=list)
    csv: bytes | None = None

    def encode(self) -> bytes:
        """The request bytes the class's ``scan`` method takes."""
        if self.codec not in CODECS:
            raise ValueError(f"codec {self.codec!r} is not one of {', '.join(CODECS)}")
        flags = (self.flags | (FLAG_AGGREGATE if self.aggregates else 0) | (FLAG_TOP_K if self.limit is not None else 0)
                 | (FLAG_CSV if self.csv is not None else 0))
        if flags & FLAG_CSV and self.csv is None:
            raise ValueError("the csv flag without a csv schema")
        if self.group_by and not flags & FLAG_AGGREGATE:
            raise ValueError("group columns without aggregates")
        if self.order_by and self.limit is None:
            raise ValueError("sort keys without a limit")
        out = [_HEADER.pack(MAGIC, VERSION, flags, CODECS[self.codec], self.batch_rows,
                            self.max_reply, self.client), struct.pack("<H", len(self.columns))]
        out += [_name(c) for c in self.columns]
        f = encode_filter(self.filter) if self.filter is not None else b""
        out += [struct.pack("<I", len(f)), f]
        if flags & FLAG_AGGREGATE:
            _check_aggregate(dataclasses.replace(self, flags=flags))
            out += [struct.pack("<H", len(self.group_by)), *map(_name, self.group_by),
                    struct.pack("<H", len(self.aggregates))]
            out += [bytes([AGGREGATES.index(fn)]) + (_name(col) if col is not None else b"")
                    for fn, col in self.aggregates]
        if flags & FLAG_TOP_K:
            _check_top_k(dataclasses.replace(self, flags=flags))
            out.append(struct.pack("<IH", self.limit, len(self.order_by)))
            out += [_name(col) + bytes([desc * _DESCENDING | nulls_first * _NULLS_FIRST])
                    for col, desc, nulls_first in self.order_by]
        if flags & FLAG_CSV:
            out += [struct.pack("<I", len(self.csv)), self.csv]
        return b"".join(out)


def csv_schema(schema) -> bytes:
    """A CSV object's columns (a pyarrow schema, in file order) as a request's ``csv`` section."""
    return schema.serialize().to_pybytes()


def _check_csv_schema(data: bytes) -> None:
    """What the class checks of a csv section: an IPC schema message of named, distinct columns."""
    import pyarrow as pa
    try:
        schema = pa.ipc.read_schema(pa.py_buffer(data))
    except (pa.ArrowInvalid, OSError) as e:
        raise ProtocolError(f"csv schema is not an Arrow IPC schema message: {e}") from None
    if not schema.names:
        raise ProtocolError("csv schema has no columns")
    for i, name in enumerate(schema.names):
        if not name or name in schema.names[:i]:
            raise ProtocolError(f"csv schema names {name!r} twice or empty")


def _check_aggregate(req: Request) -> None:
    """The rules of an aggregate request (docs/protocol.md); :class:`ProtocolError` otherwise."""
    if len(req.group_by) > SPEC.max_group_columns:
        raise ProtocolError(f"more than {SPEC.max_group_columns} group columns")
    if not 1 <= len(req.aggregates) <= SPEC.max_aggregates:
        raise ProtocolError(f"aggregate count not in 1..{SPEC.max_aggregates}")
    for fn, col in req.aggregates:
        if fn not in AGGREGATES:
            raise ProtocolError(f"unknown aggregate function {fn!r}")
        if (col is None) != (fn == "count_star"):
            raise ProtocolError(f"{fn} takes {'no column' if fn == 'count_star' else 'a column'}")
    if req.columns or req.flags & FLAG_WHOLE_OBJECT:
        raise ProtocolError("an aggregate request names no columns and does not take whole objects")


def _check_top_k(req: Request) -> None:
    """The rules of a top-k request (docs/protocol.md); :class:`ProtocolError` otherwise."""
    if req.flags & FLAG_AGGREGATE:
        raise ProtocolError("the aggregate and top-k flags exclude each other")
    if not (isinstance(req.limit, int) and 1 <= req.limit <= SPEC.max_limit):
        raise ProtocolError(f"limit not in 1..{SPEC.max_limit}")
    if len(req.order_by) > SPEC.max_sort_keys:
        raise ProtocolError(f"more than {SPEC.max_sort_keys} sort keys")
    if req.flags & FLAG_WHOLE_OBJECT:
        raise ProtocolError("a top-k request does not take whole objects")


def _name(column: str) -> bytes:
    b = column.encode()
    if not b or len(b) > 0xFFFF:
        raise ValueError(f"column name {column!r} must be 1..65535 bytes")
    return struct.pack("<H", len(b)) + b


def _literal(v) -> bytes:
    if isinstance(v, bool):
        return struct.pack("<BB", _LIT["bool"], v)
    if isinstance(v, int):
        return struct.pack("<Bq", _LIT["int64"], v)
    if isinstance(v, float):
        return struct.pack("<Bd", _LIT["float64"], v)
    if isinstance(v, str):
        b = v.encode()
        return struct.pack("<BI", _LIT["string"], len(b)) + b
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in TIMESTAMPS and type(next(iter(v.values()))) is int:
        (kind, micros), = v.items()
        return struct.pack("<Bq", _LIT[kind], micros)
    raise ValueError(f"literal {v!r} of type {type(v).__name__} cannot be encoded")


def _head(node: dict) -> tuple:
    """(operator key, its argument) of a filter node, e.g. ("cmp", "<") or ("and", [...])."""
    heads = [(k, v) for k, v in node.items() if k not in ("column", "value", "values", "pattern")]
    if len(heads) != 1:
        raise ValueError(f"filter node {node!r} must have exactly one operator key")
    return heads[0]


def encode_filter(node: dict) -> bytes:
    """Encode a filter tree (see the module docstring)."""
    key, arg = _head(node)
    if key in ("and", "or"):
        if not arg:
            raise ValueError(f"'{key}' needs at least one child")
        return struct.pack("<BH", _AND if key == "and" else _OR, len(arg)) + b"".join(map(encode_filter, arg))
    if key == "not":
        return bytes([_NOT]) + encode_filter(arg)
    if key == "cmp":
        return struct.pack("<BB", _CMP, CMP_OPS.index(arg)) + _name(node["column"]) + _literal(node["value"])
    if key in ("is_null", "is_not_null"):
        return bytes([_IS_NULL if key == "is_null" else _IS_NOT_NULL]) + _name(arg)
    if key == "in":
        values = node["values"]
        if not values:
            raise ValueError("'in' needs at least one value")
        return bytes([_IN]) + _name(arg) + struct.pack("<H", len(values)) + b"".join(map(_literal, values))
    if key in _STRING_OPS:
        p = node["pattern"].encode()
        return bytes([_STRING_OPS[key]]) + _name(arg) + struct.pack("<I", len(p)) + p
    raise ValueError(f"unknown filter node {key!r}")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.off, self.nodes = data, 0, 0   # nodes: filter nodes read so far

    def take(self, n: int, what: str) -> bytes:
        if self.off + n > len(self.data):
            raise ProtocolError(f"request truncated reading {what} at byte {self.off}")
        b = self.data[self.off:self.off + n]
        self.off += n
        return b

    def unpack(self, fmt: str, what: str):
        s = struct.Struct("<" + fmt)
        return s.unpack(self.take(s.size, what))

    def name(self) -> str:
        (n,) = self.unpack("H", "column name length")
        if n == 0:
            raise ProtocolError(f"empty column name at byte {self.off}")
        return _text(self.take(n, "column name"), "column name")

    def literal(self):
        (t,) = self.unpack("B", "literal type")
        if t == _LIT["bool"]:
            return self.unpack("B", "bool literal")[0] != 0
        if t == _LIT["int64"]:
            return self.unpack("q", "int64 literal")[0]
        if t == _LIT["float64"]:
            return self.unpack("d", "float64 literal")[0]
        if t == _LIT["string"]:
            (n,) = self.unpack("I", "string literal length")
            return _text(self.take(n, "string literal"), "string literal")
        for kind in TIMESTAMPS:
            if t == _LIT[kind]:
                return {kind: self.unpack("q", "timestamp literal")[0]}
        raise ProtocolError(f"unknown literal type {t}")

    def node(self, depth: int = 0) -> dict:
        if depth > SPEC.max_filter_depth:
            raise ProtocolError(f"filter nested deeper than {SPEC.max_filter_depth}")
        self.nodes += 1
        if self.nodes > SPEC.max_filter_nodes:
            raise ProtocolError(f"filter has more than {SPEC.max_filter_nodes} nodes")
        (tag,) = self.unpack("B", "filter node")
        if tag in (_AND, _OR):
            (n,) = self.unpack("H", "child count")
            if n == 0:
                raise ProtocolError("AND/OR without children")
            return {"and" if tag == _AND else "or": [self.node(depth + 1) for _ in range(n)]}
        if tag == _NOT:
            return {"not": self.node(depth + 1)}
        if tag == _CMP:
            (op,) = self.unpack("B", "comparison operator")
            if op >= len(CMP_OPS):
                raise ProtocolError(f"unknown comparison operator {op}")
            return {"cmp": CMP_OPS[op], "column": self.name(), "value": self.literal()}
        if tag in (_IS_NULL, _IS_NOT_NULL):
            return {"is_null" if tag == _IS_NULL else "is_not_null": self.name()}
        if tag == _IN:
            col = self.name()
            (n,) = self.unpack("H", "IN value count")
            if n == 0:
                raise ProtocolError("IN without values")
            return {"in": col, "values": [self.literal() for _ in range(n)]}
        for key, t in _STRING_OPS.items():
            if t == tag:
                col = self.name()
                (n,) = self.unpack("I", "pattern length")
                return {key: col, "pattern": _text(self.take(n, "pattern"), "pattern")}
        raise ProtocolError(f"unknown filter node 0x{tag:02x}")


def _text(b: bytes, what: str) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError:
        raise ProtocolError(f"{what} is not UTF-8") from None


def decode_request(data: bytes) -> Request:
    """Parse request bytes exactly as the class does; :class:`ProtocolError` if malformed."""
    r = _Reader(data)
    magic, version, flags, codec, rows, max_reply, client = _HEADER.unpack(r.take(_HEADER.size, "header"))
    if magic != MAGIC:
        raise ProtocolError("not a sae scan request (bad magic)")
    if version != VERSION:
        raise ProtocolError(f"request protocol version {version} is not supported")
    if flags & ~sum(SPEC.flags.values()):
        raise ProtocolError("unknown flags")
    if flags & FLAG_AGGREGATE and flags & FLAG_TOP_K:
        raise ProtocolError("the aggregate and top-k flags exclude each other")
    names = {v: k for k, v in CODECS.items()}
    if codec not in names:
        raise ProtocolError(f"unknown codec {codec}")
    (ncols,) = r.unpack("H", "column count")
    columns = [r.name() for _ in range(ncols)]
    (flen,) = r.unpack("I", "filter length")
    start, filt = r.off, None
    if flen > len(data) - start:
        raise ProtocolError("filter length beyond the request")
    if flen:
        filt = r.node()
        if r.off - start != flen:
            raise ProtocolError("filter length does not match its encoding")
    group_by, aggregates = [], []
    if flags & FLAG_AGGREGATE:
        (ngroups,) = r.unpack("H", "group column count")
        if ngroups > SPEC.max_group_columns:
            raise ProtocolError(f"more than {SPEC.max_group_columns} group columns")
        group_by = [r.name() for _ in range(ngroups)]
        (naggs,) = r.unpack("H", "aggregate count")
        if not 1 <= naggs <= SPEC.max_aggregates:
            raise ProtocolError(f"aggregate count not in 1..{SPEC.max_aggregates}")
        for _ in range(naggs):
            (fn,) = r.unpack("B", "aggregate function")
            if fn >= len(AGGREGATES):
                raise ProtocolError(f"unknown aggregate function {fn}")
            aggregates.append((AGGREGATES[fn], None if AGGREGATES[fn] == "count_star" else r.name()))
    limit, order_by = None, []
    if flags & FLAG_TOP_K:
        (limit,) = r.unpack("I", "limit")
        if not 1 <= limit <= SPEC.max_limit:
            raise ProtocolError(f"limit not in 1..{SPEC.max_limit}")
        (nkeys,) = r.unpack("H", "sort key count")
        if nkeys > SPEC.max_sort_keys:
            raise ProtocolError(f"more than {SPEC.max_sort_keys} sort keys")
        for _ in range(nkeys):
            col = r.name()
            (key,) = r.unpack("B", "sort key flags")
            if key & ~(_DESCENDING | _NULLS_FIRST):
                raise ProtocolError(f"unknown sort key flags {key}")
            order_by.append((col, bool(key & _DESCENDING), bool(key & _NULLS_FIRST)))
    csv = None
    if flags & FLAG_CSV:
        (slen,) = r.unpack("I", "csv schema length")
        if slen > len(data) - r.off:
            raise ProtocolError("csv schema length beyond the request")
        csv = r.take(slen, "csv schema")
        _check_csv_schema(csv)
    if r.off != len(data):
        raise ProtocolError(f"{len(data) - r.off} trailing bytes")
    req = Request(columns=columns, filter=filt, codec=names[codec], batch_rows=rows, max_reply=max_reply,
                  client=client, flags=flags, group_by=group_by, aggregates=aggregates, limit=limit,
                  order_by=order_by, csv=csv)
    if flags & FLAG_AGGREGATE:
        _check_aggregate(req)
    if flags & FLAG_TOP_K:
        _check_top_k(req)
    return req


@dataclasses.dataclass
class Reply:
    """A successful scan reply: the call's ``stats`` (:data:`STATS` → int), its body (a
    memoryview into the reply) and the body's format (:data:`BODIES`: ``arrow_ipc``, or
    ``parquet`` for a whole object)."""

    stats: dict
    stream: memoryview
    body: str = "arrow_ipc"


def decode_reply(reply: bytes) -> Reply:
    """Split a successful reply into stats and IPC stream; :class:`ScanError` for an error frame,
    :class:`ProtocolError` for anything else (e.g. a version-1 class, which sends no stats)."""
    err = decode_error(reply)
    if err is not None:
        raise err
    view = memoryview(reply)
    if len(view) < _REPLY_HEAD.size or bytes(view[:4]) != REPLY_MAGIC:
        raise ProtocolError(f"reply does not start with {REPLY_MAGIC.decode()}: the OSDs run an older sae class "
                            f"than protocol {VERSION}; reinstall it (rados_deploy install_class)")
    _, count, body = _REPLY_HEAD.unpack_from(view)
    end = _REPLY_HEAD.size + 8 * count
    if count < len(STATS) or len(view) < end or body >= len(BODIES):
        raise ProtocolError(f"reply header holds {count} stats in {len(view)} bytes and body format {body}; "
                            f"protocol {VERSION} has {len(STATS)} stats and {len(BODIES)} formats")
    values = struct.unpack_from(f"<{count}Q", view, _REPLY_HEAD.size)
    return Reply(dict(zip(STATS, values)), view[end:], BODIES[body])


def reply_framing() -> dict:
    """How a reply is framed, as JSON-friendly values, for a script that decodes replies without
    this package (sae.running.backend's ``backend_scan.py``): magics, head layout, stat names, body formats."""
    return {"magic": REPLY_MAGIC.decode(), "error_magic": ERROR_MAGIC.decode(), "head": _REPLY_HEAD.format,
            "stats": list(STATS), "bodies": list(BODIES)}


def decode_error(reply: bytes) -> ScanError | None:
    """The :class:`ScanError` in an error reply, or None if ``reply`` is a result stream."""
    if reply[:4] != ERROR_MAGIC:
        return None
    errno, n = struct.unpack_from("<II", reply, 4)
    return ScanError(errno, bytes(reply[12:12 + n]).decode(errors="replace"))


def _scalar(value):
    """A literal of a filter tree as a pyarrow scalar."""
    import pyarrow as pa
    if isinstance(value, dict):
        (kind, micros), = value.items()
        return pa.scalar(micros, pa.timestamp("us", TIMESTAMPS[kind]))
    return pa.scalar(value)


def times_as_integers(table):
    """``table`` with its timestamp columns as their int64 values in their own unit, as the test
    vectors hold them (JSON has no timestamps; the vectors' are microseconds)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            table = table.set_column(i, f.name, pc.cast(table.column(i), pa.int64()))
    return table


def to_expression(node: dict):
    """The pyarrow.compute expression of a filter tree (SQL three-valued logic, as the class)."""
    import pyarrow.compute as pc

    key, arg = _head(node)
    if key in ("and", "or"):
        exprs = [to_expression(c) for c in arg]
        out = exprs[0]
        for e in exprs[1:]:
            out = (out & e) if key == "and" else (out | e)
        return out
    if key == "not":
        return ~to_expression(arg)
    if key == "cmp":
        f, v = pc.field(node["column"]), _scalar(node["value"])
        return {"==": f == v, "!=": f != v, "<": f < v, "<=": f <= v, ">": f > v, ">=": f >= v}[arg]
    if key == "is_null":
        return pc.field(arg).is_null()
    if key == "is_not_null":
        return pc.field(arg).is_valid()
    if key == "in":   # NULL for a NULL row, else one lookup per literal type (as the class builds it)
        import pyarrow as pa
        by_type: dict = {}
        for s in map(_scalar, node["values"]):
            by_type.setdefault(str(s.type), (s.type, []))[1].append(s.as_py())
        f = pc.field(arg)
        found = [pc.is_in(f, value_set=pa.array(vs, t)) for _, (t, vs) in sorted(by_type.items())]
        return pc.if_else(f.is_null(), pa.scalar(None, pa.bool_()), functools.reduce(operator.or_, found))
    fn = {"starts_with": pc.starts_with, "ends_with": pc.ends_with, "contains": pc.match_substring}[key]
    return fn(pc.field(arg), node["pattern"])


def columns_of(node: dict | None) -> list[str]:
    """Columns a filter tree refers to, in first-use order."""
    out: list[str] = []

    def walk(n):
        key, arg = _head(n)
        if key in ("and", "or"):
            for c in arg:
                walk(c)
        elif key == "not":
            walk(arg)
        else:
            col = n["column"] if key == "cmp" else arg
            if col not in out:
                out.append(col)
    if node is not None:
        walk(node)
    return out


def aggregate(table, group_by: list, aggregates: list):
    """What the class replies to an aggregate request whose filter kept ``table``'s rows: Spark's
    partial aggregate (docs/protocol.md) as a pyarrow table (groups in first-seen order); raises
    :class:`ScanError` (EINVAL, EOVERFLOW) where the class refuses. Written out row by row, as
    pyarrow's own group_by has other rules for NaN and integer overflow."""
    import pyarrow as pa

    einval, eoverflow = SPEC.errnos["EINVAL"], SPEC.errnos["EOVERFLOW"]
    for name in group_by:
        t = table.schema.field(name).type
        if not _takes(SPEC.grouped_types, t):
            what = f"floating-point column '{name}'" if pa.types.is_floating(t) else f"column '{name}' of type {t}"
            raise ScanError(einval, f"cannot group by {what} in the OSD")
    values = {name: _values(table.column(name)) for name in {*group_by, *(c for _, c in aggregates if c)}}
    keys = zip(*(values[c] for c in group_by)) if group_by else [()] * table.num_rows
    groups: dict = {} if group_by else {(): []}   # NULL is a key value of its own (None == None)
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    out = [pa.array([k[j] for k in groups], table.schema.field(name).type) for j, name in enumerate(group_by)]
    rows = list(groups.values())
    for fn, col in aggregates:
        if fn == "count_star":
            out.append(pa.array([len(r) for r in rows], pa.int64()))
            continue
        t = table.schema.field(col).type
        got = [[values[col][j] for j in r if values[col][j] is not None] for r in rows]
        sum_type = next((s for name, s in SPEC.sums.items() if _takes((name,), t)), None)
        if fn == "count":
            out.append(pa.array([len(g) for g in got], pa.int64()))
        elif fn == "sum" and sum_type == "DOUBLE":
            out.append(pa.array([_double_sum(g) if g else None for g in got], pa.float64()))
        elif fn == "sum" and sum_type == "INT64":
            sums = [sum(g) if g else None for g in got]
            if any(s is not None and not -2 ** 63 <= s < 2 ** 63 for s in sums):
                raise ScanError(eoverflow, f"sum of column '{col}' overflows a 64-bit integer in this object")
            out.append(pa.array(sums, pa.int64()))
        elif fn in ("min", "max") and _takes(SPEC.ordered_types, t):
            out.append(pa.array([_extreme(fn, g) for g in got], t))
        else:
            verb = "sum" if fn == "sum" else f"take the {fn} of"
            raise ScanError(einval, f"cannot {verb} column '{col}' of type {t} in the OSD")
    return pa.Table.from_arrays(out, names=[*group_by, *(f"agg{i}" for i in range(len(aggregates)))])


def top_k(table, order_by: list, limit: int):
    """What the class replies to a top-k request whose filter kept ``table``'s rows (all columns,
    the caller projects): with sort keys ``(column, descending, nulls_first)``, the first ``limit``
    rows in Spark's order plus every row tying with the limit-th on all keys, in that order; without
    keys, the first ``limit`` rows. Raises :class:`ScanError` (EINVAL) for a key type the class
    does not order. Written out with Python comparisons, as pyarrow's sort places NaN otherwise."""
    import functools

    import pyarrow as pa

    keys = []
    for col, desc, nulls_first in order_by:
        f = table.schema.field(col)
        if not _takes(SPEC.ordered_types, f.type):
            raise ScanError(SPEC.errnos["EINVAL"], f"cannot sort by column '{col}' of type {f.type} in the OSD")
        keys.append((_values(table.column(col)), desc, nulls_first))

    def compare(a: int, b: int) -> int:
        for values, desc, nulls_first in keys:
            if c := _compare(values[a], values[b], desc, nulls_first):
                return c
        return 0
    rows = sorted(range(table.num_rows), key=functools.cmp_to_key(compare))
    if keys:
        while limit < len(rows) and compare(rows[limit], rows[limit - 1]) == 0:
            limit += 1
    return table.take(pa.array(rows[:limit], pa.int64()))


def _compare(a, b, descending: bool = False, nulls_first: bool = False) -> int:
    """-1, 0 or 1 as value a comes before, ties with or comes after b in Spark's order: NULLs first
    or last whatever the direction, NaN above every number and equal to NaN, -0.0 equal to 0.0."""
    if a is None or b is None:
        return 0 if a is b else (-1 if (a is None) == nulls_first else 1)
    nan_a, nan_b = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
    c = nan_a - nan_b if nan_a or nan_b else (a > b) - (a < b)
    return -c if descending else c


def _takes(type_ids, t) -> bool:
    """Whether pyarrow type ``t`` is one of ``type_ids`` (Arrow C++ type id names, as the
    protocol's ``types`` lists name them: the types the class orders, groups by, sums)."""
    import pyarrow as pa
    return any(t.id == getattr(pa.lib, f"Type_{name}") for name in type_ids)


def _values(column) -> list:
    """A column's values as Python values that compare as the class compares them: dates and
    timestamps as their integers, strings as UTF-8 bytes (byte-wise, as Spark's UTF8String)."""
    import pyarrow as pa
    t = column.type
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        return column.cast(pa.int32() if pa.types.is_date32(t) else pa.int64()).to_pylist()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [None if v is None else v.encode() for v in column.to_pylist()]
    return column.to_pylist()


def _double_sum(values: list) -> float:
    """A double sum in row order, as the class adds (no compensated summation)."""
    total = 0.0
    for v in values:
        total += v
    return total


def _extreme(fn: str, values: list):
    """min or max in Spark's order (:func:`_compare`; of equal values the first seen stays); None
    without values."""
    best = None
    for v in values:
        if best is None or _compare(v, best, descending=fn == "max") < 0:
            best = v
    return best
