"""The scan protocol of the ``sae`` object class, defined once in ``cls/scan_protocol.json``.

Every side takes its constants from that file: the class build renders ``protocol.h`` from it
(:func:`cxx_header`, see :mod:`rados_deploy.objclass`), the connector renders its Java constants
from :data:`SPEC` and its Python codec reads :data:`SPEC`. So a version bump is one edit of the
JSON (and of the code that speaks the new format), never four hand-kept copies.
"""
from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

from metareserve.errors import UsageError

HEADER_NAME = "protocol.h"
UNITS = ("ns", "count", "bytes")


@dataclasses.dataclass(frozen=True)
class Stat:
    """One number every successful reply carries (``unit``: ns, count or bytes)."""

    name: str
    unit: str
    doc: str


@dataclasses.dataclass(frozen=True)
class ScanProtocol:
    """The protocol's constants (docs/protocol.md has the byte layout that uses them)."""

    version: int
    request_magic: bytes
    index_magic: bytes
    index_header_key: str
    reply_magic: bytes
    error_magic: bytes
    flags: dict
    codecs: tuple
    default_batch_rows: int
    max_batch_rows: int
    max_filter_depth: int
    max_filter_nodes: int
    aggregate_functions: tuple
    max_group_columns: int
    max_aggregates: int
    max_limit: int
    max_sort_keys: int
    key_flags: dict
    ordered_types: tuple
    grouped_types: tuple
    sums: dict
    nodes: dict
    cmp_ops: tuple
    literals: dict
    bodies: tuple
    stats: tuple
    errnos: dict

    @property
    def stat_names(self) -> tuple:
        return tuple(s.name for s in self.stats)


def spec_path() -> Path:
    """The spec file inside the installed package."""
    return Path(str(resources.files(__package__).joinpath("cls", "scan_protocol.json")))


def load(path=None) -> ScanProtocol:
    """Read and check the spec; :class:`UsageError` naming the file and the field otherwise."""
    path = Path(path) if path else spec_path()
    try:
        raw = json.loads(path.read_text())
        req, agg, topk, filt, types = raw["request"], raw["aggregate"], raw["top_k"], raw["filter"], raw["types"]
        reply, err = raw["reply"], raw["error"]
        spec = ScanProtocol(
            version=_int(raw["version"], "version", 1, 0xFFFF),
            request_magic=_magic(req["magic"], "request.magic"), index_magic=_magic(raw["index"]["magic"], "index.magic"),
            index_header_key=_key(raw["index"]["header_key"], "index.header_key"),
            reply_magic=_magic(reply["magic"], "reply.magic"),
            error_magic=_magic(err["magic"], "error.magic"),
            flags={k: _int(v, f"request.flags.{k}", 1, 0x8000) for k, v in req["flags"].items()},
            codecs=tuple(req["codecs"]),
            default_batch_rows=_int(req["default_batch_rows"], "request.default_batch_rows", 1, 1 << 31),
            max_batch_rows=_int(req["max_batch_rows"], "request.max_batch_rows", 1, 1 << 31),
            max_filter_depth=_int(req["max_filter_depth"], "request.max_filter_depth", 1, 1 << 16),
            max_filter_nodes=_int(req["max_filter_nodes"], "request.max_filter_nodes", 1, 1 << 16),
            aggregate_functions=tuple(agg["functions"]),
            max_group_columns=_int(agg["max_group_columns"], "aggregate.max_group_columns", 0, 0xFFFF),
            max_aggregates=_int(agg["max_aggregates"], "aggregate.max_aggregates", 1, 0xFFFF),
            max_limit=_int(topk["max_limit"], "top_k.max_limit", 1, 0xFFFFFFFF),
            max_sort_keys=_int(topk["max_sort_keys"], "top_k.max_sort_keys", 0, 0xFFFF),
            key_flags={k: _int(v, f"top_k.key_flags.{k}", 1, 0x80) for k, v in topk["key_flags"].items()},
            ordered_types=_types(types["ordered"], "types.ordered"), grouped_types=_types(types["grouped"], "types.grouped"),
            sums=dict(zip(_types(types["sums"], "types.sums"), _types(types["sums"].values(), "types.sums"))),
            nodes={k: _int(v, f"filter.nodes.{k}", 1, 0xFF) for k, v in filt["nodes"].items()},
            cmp_ops=tuple(filt["cmp_ops"]),
            literals={k: _int(v, f"filter.literals.{k}", 1, 0xFF) for k, v in filt["literals"].items()},
            bodies=tuple(reply["bodies"]),
            stats=tuple(Stat(s["name"], s["unit"], s["doc"]) for s in reply["stats"]),
            errnos={k: _int(v, f"error.errnos.{k}", 1, 4095) for k, v in err["errnos"].items()})
    except (OSError, ValueError, KeyError, TypeError) as e:
        what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise UsageError(f"{path}: not a valid scan protocol spec ({what}); fix the file") from None
    magics = {spec.request_magic, spec.index_magic, spec.reply_magic, spec.error_magic}
    bad = [s.name for s in spec.stats if s.unit not in UNITS or not s.name.isidentifier()]
    if len(magics) != 4 or b"\xff\xff\xff\xff" in magics or bad or len(set(spec.stat_names)) != len(spec.stats) \
            or len(set(spec.nodes.values())) != len(spec.nodes):
        raise UsageError(f"{path}: magics must differ from each other and from an IPC stream's start, node tags and "
                         f"stat names must be unique, units one of {', '.join(UNITS)} (bad stats: {bad}); fix the file")
    return spec


def _int(v, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{what} must be a whole number in {lo}..{hi}, not {v!r}")
    return v


def _types(names, what: str) -> tuple:
    """Arrow C++ type id names (``INT8``, ``LARGE_STRING``)."""
    names = tuple(names)
    if not all(isinstance(n, str) and n.isidentifier() and n.isupper() for n in names):
        raise ValueError(f"{what} must name Arrow type ids such as INT64 or LARGE_STRING, not {list(names)!r}")
    return names


def _key(v, what: str) -> str:
    if not isinstance(v, str) or not v.isascii() or not v.isprintable() or not 1 <= len(v) <= 64 or '"' in v:
        raise ValueError(f"{what} must be 1..64 printable ASCII characters without quotes, not {v!r}")
    return v


def _magic(v, what: str) -> bytes:
    if not isinstance(v, str) or len(v.encode()) != 4 or not v.isascii():
        raise ValueError(f"{what} must be 4 ASCII characters, not {v!r}")
    return v.encode()


def _chars(magic: bytes) -> str:
    return ", ".join(f"'{chr(b)}'" for b in magic)


def cxx_header(spec: ScanProtocol) -> str:
    """``protocol.h``: the spec as C++ constants (namespace ``sae::protocol``)."""
    lines = ["// Generated from scan_protocol.json by rados_deploy.scan_protocol.cxx_header when the class is",
             "// built; do not edit (docs/protocol.md).",
             "#pragma once", "", "#include <cstdint>", "",
             f"#define SAE_SCAN_PROTOCOL {spec.version}", "", "namespace sae::protocol {", "",
             f"inline constexpr uint16_t kVersion = {spec.version};",
             f"inline constexpr char kRequestMagic[4] = {{{_chars(spec.request_magic)}}};",
             f"inline constexpr char kIndexMagic[4] = {{{_chars(spec.index_magic)}}};",
             f'inline constexpr char kIndexHeaderKey[] = "{spec.index_header_key}";',
             f"inline constexpr char kReplyMagic[4] = {{{_chars(spec.reply_magic)}}};",
             f"inline constexpr char kErrorMagic[4] = {{{_chars(spec.error_magic)}}};",
             *(f"inline constexpr uint16_t kFlag{_camel(k)} = {v};" for k, v in spec.flags.items()),
             f"inline constexpr uint16_t kKnownFlags = {sum(spec.flags.values())};",
             *(f"inline constexpr uint8_t kCodec{_camel(c)} = {i};" for i, c in enumerate(spec.codecs)),
             f"inline constexpr uint8_t kCodecCount = {len(spec.codecs)};",
             f"inline constexpr uint32_t kDefaultBatchRows = {spec.default_batch_rows};",
             f"inline constexpr uint32_t kMaxBatchRows = {spec.max_batch_rows};",
             f"inline constexpr int kMaxFilterDepth = {spec.max_filter_depth};",
             f"inline constexpr int kMaxFilterNodes = {spec.max_filter_nodes};",
             *(f"inline constexpr uint8_t kAgg{_camel(f)} = {i};" for i, f in enumerate(spec.aggregate_functions)),
             f"inline constexpr uint8_t kAggFunctionCount = {len(spec.aggregate_functions)};",
             f"inline constexpr uint16_t kMaxGroupColumns = {spec.max_group_columns};",
             f"inline constexpr uint16_t kMaxAggregates = {spec.max_aggregates};",
             f"inline constexpr uint32_t kMaxLimit = {spec.max_limit};",
             f"inline constexpr uint16_t kMaxSortKeys = {spec.max_sort_keys};",
             *(f"inline constexpr uint8_t kKey{_camel(k)} = {v};" for k, v in spec.key_flags.items()),
             f"inline constexpr uint8_t kKnownKeyFlags = {sum(spec.key_flags.values())};",
             *(f"inline constexpr uint8_t kNode{_camel(k)} = 0x{v:02x};" for k, v in spec.nodes.items()),
             *(f"inline constexpr uint8_t kLiteral{_camel(k)} = {v};" for k, v in spec.literals.items()),
             *(f"inline constexpr uint16_t kBody{_camel(b)} = {i};" for i, b in enumerate(spec.bodies)),
             f"inline constexpr uint8_t kCmpOpCount = {len(spec.cmp_ops)};", "",
             "// The Arrow types the class orders (min, max, top-k sort keys), groups by, and sums (and",
             "// the type of the sum): X(type id), X(type id, sum's type id).",
             "#define SAE_ORDERED_TYPES(X) " + " ".join(f"X({t})" for t in spec.ordered_types),
             "#define SAE_GROUPED_TYPES(X) " + " ".join(f"X({t})" for t in spec.grouped_types),
             "#define SAE_SUMMED_TYPES(X) " + " ".join(f"X({t}, {s})" for t, s in spec.sums.items()), "",
             "// The reply's stats, in wire order (one u64 each).",
             "enum Stat : int {",
             *(f"  k{_camel(s.name)} = {i},  // {s.unit}: {s.doc}" for i, s in enumerate(spec.stats)),
             f"  kStatCount = {len(spec.stats)}",
             "};", "",
             "inline constexpr const char* kStatNames[kStatCount] = {" +
             ", ".join(f'"{s.name}"' for s in spec.stats) + "};", "",
             "}  // namespace sae::protocol", ""]
    return "\n".join(lines)


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


SPEC = load()
"""The protocol this package's class speaks."""
