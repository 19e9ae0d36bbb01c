"""The sae class's index beside each object (docs/protocol.md, "Index").

:func:`build` runs the class's ``index`` method on every RADOS object behind the Parquet files of
a CephFS directory, from a Ceph node (:mod:`rados_deploy.probe`): per object, the rows holding
each value of one key column, in the object's omap. A second build of an unchanged object changes
nothing; a rewritten object (another size or footer) gets a new index. A scan request with the
index flag then probes it (see ``cls/scan_index.h``).
"""
from __future__ import annotations

import dataclasses
import struct

from metareserve.errors import OperationalError, UsageError

from .scan_protocol import SPEC

STAGE = "sae index"
FORMAT = 2
"""The header's format, as the class writes it (``cls/scan_index.cc``)."""


def index_request(column: str) -> bytes:
    """The ``index`` method's input: the index magic, the protocol version, the column's name."""
    name = column.encode()
    if not 1 <= len(name) <= 0xFFFF:
        raise UsageError(f"index: the key column's name must be 1..65535 bytes, not {column!r}")
    return SPEC.index_magic + struct.pack("<HH", SPEC.version, len(name)) + name


@dataclasses.dataclass(frozen=True)
class IndexHeader:
    """An object's index as its header (omap ``SPEC.index_header_key``) describes it."""

    size: int      # bytes of the object it was built from
    footer: int    # hash of its Parquet footer
    buckets: int
    rows: int      # rows indexed (NULLs are not)
    keys: int      # distinct values
    bytes: int     # the index's bytes in the omap
    build_ns: int  # how long its build took in the OSD
    column: str

    @classmethod
    def parse(cls, text: str | None) -> "IndexHeader | None":
        """The header's fields; None for no header or one of another format."""
        parts = (text or "").split(" ", 8)
        if len(parts) != 9 or parts[0] != str(FORMAT):
            return None
        try:
            return cls(*map(int, parts[1:8]), parts[8])
        except ValueError:
            return None


@dataclasses.dataclass(frozen=True)
class ObjectIndex:
    """One object's index: the rows it indexes, its bytes in the omap, the seconds its build took."""

    object: str
    rows: int
    bytes: int
    build_s: float


@dataclasses.dataclass(frozen=True)
class IndexReport:
    """What a build did over a directory's objects."""

    column: str
    objects: int
    built: int        # objects whose index was (re)built
    unchanged: int    # objects whose index was up to date
    rows: int
    keys: int         # distinct values per object, summed
    bytes: int        # the indexes' bytes in the omaps
    seconds: float    # the build calls' wall time
    per_object: tuple[ObjectIndex, ...] = ()   # by object name

    @property
    def build_s(self) -> float:
        """The OSDs' seconds building the indexes there are now (up-to-date ones included), summed."""
        return sum(o.build_s for o in self.per_object)

    def line(self) -> str:
        return (f"index of {self.column}: {self.objects} objects ({self.built} built, {self.unchanged} up to date), "
                f"{self.rows} rows, {self.keys} keys, {self.bytes} bytes, {self.seconds:.2f} s "
                f"({self.build_s:.2f} s of building in the OSDs)")


def build(cc, path: str, column: str, *, suffixes: tuple[str, ...] = (".parquet",), in_flight: int = 8) -> IndexReport:
    """Index ``column`` of every object behind the files under CephFS ``path`` of ``cc`` (a
    :class:`~rados_deploy.cluster.CephCluster`); :class:`OperationalError` naming the first object
    the class refused (an unknown column, a type the index does not hold, an object that is not
    Parquet: the OSD's log has the class's message)."""
    if not path.startswith("/") or "\0" in path:
        raise UsageError(f"index: {path!r} is not an absolute CephFS path; give the dataset's directory, e.g. /data/taxi")
    request = index_request(column)
    node = cc.topology.mons[0]
    got = cc.probe("index", stage=STAGE, fs_name=cc.fs_name, path=path, cls=cc.class_name,
                   request=request.hex(), header_key=SPEC.index_header_key, suffixes=list(suffixes),
                   in_flight=in_flight)
    if got["errors"]:
        oid, errno = sorted(got["errors"].items())[0]
        raise OperationalError(f"[{node} {STAGE}] the class refused to index column {column!r} of {path} "
                               f"({len(got['errors'])} of {len(got['headers'])} objects; object {oid}: errno {errno}): "
                               f"the column must exist and hold integers, booleans, dates, timestamps or strings "
                               f"(the OSD log says which)")
    headers = {oid: [IndexHeader.parse(h) for h in pair] for oid, pair in got["headers"].items()}
    missing = [oid for oid, (_, after) in headers.items() if after is None or after.column != column]
    if missing:
        raise OperationalError(f"[{node} {STAGE}] object {missing[0]} of {path} has no index of {column!r} after "
                               f"its build: reinstall the class (rados_deploy install_class)")
    after = [a for _, a in headers.values()]
    unchanged = sum(b == a for b, a in headers.values())
    per_object = tuple(ObjectIndex(oid, a.rows, a.bytes, a.build_ns / 1e9) for oid, (_, a) in sorted(headers.items()))
    return IndexReport(column, len(after), len(after) - unchanged, unchanged, sum(a.rows for a in after),
                       sum(a.keys for a in after), sum(a.bytes for a in after), got["seconds"], per_object)
