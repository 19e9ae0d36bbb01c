"""The Java data source's generated sources, rendered whenever the jar is compiled (part of its
cache key), never kept in the tree: ``ProtocolSpec.java`` (the scan protocol's constants, from
rados_deploy's spec, :mod:`rados_deploy.scan_protocol`), ``OptionSpec.java`` (the tuning
options, :mod:`sae.connector.options`) and ``Mode.java`` (one constant per connector reader of
:mod:`sae.planning.readers`, holding its :class:`~sae.connector.options.Mode`)."""
from __future__ import annotations

import json

from rados_deploy.scan_protocol import SPEC, ScanProtocol

from . import options as connector_options

FILE = "sae/connector/ProtocolSpec.java"
"""Where the protocol's constants go among the data source's sources."""
_HEAD = "// Generated from {what} by sae.connector.spec_java when the jar is built; do not edit.\npackage sae.connector;\n\n"


def _bytes(b: bytes) -> str:
    return "{" + ", ".join(f"'{chr(c)}'" for c in b) + "}"


def _strings(items) -> str:
    return "List.of(" + ", ".join(json.dumps(s) for s in items) + ")"


def _const(name: str) -> str:
    return name.upper().replace("-", "_")


def _doc(text: str) -> str:
    """``text`` as a Javadoc comment (a ``*/`` or a ``\\u`` in it would end or escape the source)."""
    return "/** " + text.replace("*/", "* /").replace("\\u", "\\ u") + " */"


def _class(name: str, doc: str, fields: list[str], what: str, imports: str = "import java.util.List;\n\n") -> str:
    body = "\n".join(f"  {f}" for f in fields)
    return (_HEAD.format(what=what) + imports + f"/** {doc} */\n"
            f"final class {name} {{\n  private {name}() {{}}\n\n{body}\n}}\n")


def render(spec: ScanProtocol = SPEC) -> str:
    """The Java source of ``sae.connector.ProtocolSpec``."""
    fields = [f"static final int VERSION = {spec.version};",
              f"static final byte[] REQUEST_MAGIC = {_bytes(spec.request_magic)};",
              f"static final byte[] REPLY_MAGIC = {_bytes(spec.reply_magic)};",
              f"static final byte[] ERROR_MAGIC = {_bytes(spec.error_magic)};",
              *(f"static final int FLAG_{_const(k)} = {v};" for k, v in spec.flags.items()),
              f"static final List<String> CODECS = {_strings(spec.codecs)};",
              f"static final List<String> CMP_OPS = {_strings(spec.cmp_ops)};",
              f"static final int DEFAULT_BATCH_ROWS = {spec.default_batch_rows};",
              "/** Aggregate functions, by their code in an aggregate request. */",
              f"static final List<String> AGGREGATES = {_strings(spec.aggregate_functions)};",
              f"static final int MAX_GROUP_COLUMNS = {spec.max_group_columns};",
              f"static final int MAX_AGGREGATES = {spec.max_aggregates};",
              f"static final int MAX_LIMIT = {spec.max_limit};",
              f"static final int MAX_SORT_KEYS = {spec.max_sort_keys};",
              "/** Bits of a top-k request's sort key flags. */",
              *(f"static final int KEY_{_const(k)} = {v};" for k, v in spec.key_flags.items()),
              "/** The Arrow types (Arrow C++ type id names) the class orders: min, max, top-k sort keys. */",
              f"static final List<String> ORDERED_TYPES = {_strings(spec.ordered_types)};",
              "/** The Arrow types the class groups by. */",
              f"static final List<String> GROUPED_TYPES = {_strings(spec.grouped_types)};",
              "/** The Arrow types the class sums, each to the type of its sum. */",
              "static final java.util.Map<String, String> SUMS = java.util.Map.of("
              + ", ".join(f"{json.dumps(k)}, {json.dumps(v)}" for k, v in spec.sums.items()) + ");",
              "/** Formats of a successful reply's body, by their code in the reply header. */",
              f"static final List<String> BODIES = {_strings(spec.bodies)};",
              f"static final int MAX_BATCH_ROWS = {spec.max_batch_rows};",
              "/** A filter tree's limits: deeper or larger ones stay in Spark. */",
              f"static final int MAX_FILTER_DEPTH = {spec.max_filter_depth};",
              f"static final int MAX_FILTER_NODES = {spec.max_filter_nodes};",
              *(f"static final int NODE_{_const(k)} = 0x{v:02x};" for k, v in spec.nodes.items()),
              *(f"static final int LITERAL_{_const(k)} = {v};" for k, v in spec.literals.items()),
              "/** Names of the stats a successful reply carries, in wire order. */",
              f"static final List<String> STATS = {_strings(spec.stat_names)};",
              "/** Unit of each stat (ns, count, bytes). */",
              f"static final List<String> STAT_UNITS = {_strings(s.unit for s in spec.stats)};",
              "/** What each stat measures. */",
              f"static final List<String> STAT_DOCS = {_strings(s.doc for s in spec.stats)};"]
    return _class("ProtocolSpec", "The scan protocol's constants (docs/protocol.md).", fields,
                  "rados_deploy's cls/scan_protocol.json")


def render_options(options=None) -> str:
    """The Java source of ``sae.connector.OptionSpec``: one :class:`Options.Int`, ``Choice`` or
    ``Flag`` per tuning option, with the modes it applies to."""
    fields = []
    for o in (options or connector_options.OPTIONS).values():
        modes = "m -> true" if o.needs is None else f"m -> m.{o.needs}"
        args = {"int": f"{o.minimum}L, {o.maximum}L, {o.default}L",
                "choice": f"{_strings(o.choices)}, {json.dumps(o.default)}",
                "bool": "true" if o.default else "false"}[o.kind]
        kind = {"int": "Int", "choice": "Choice", "bool": "Flag"}[o.kind]
        fields += [_doc(o.doc),
                   f"static final Options.{kind} {_const(o.name)} = new Options.{kind}({json.dumps(o.name)}, {args}, "
                   f"{modes});"]
    return _class("OptionSpec", "The data source's tuning options (docs/connector.md).", fields,
                  "sae/connector/options.json")


def render_modes(readers=None) -> str:
    """The Java source of ``sae.connector.Mode``: one constant per connector reader, in the
    readers' order."""
    if readers is None:
        from ..planning.readers import READERS   # the planner's readers import the connector's build
        readers = READERS.values()
    flags = connector_options.FLAGS
    constants = [f"  {_doc(r.definition)}\n  {_const(r.reads.mode.name)}({json.dumps(r.reads.mode.name)}, "
                 + ", ".join("true" if getattr(r.reads.mode, f) else "false" for f in flags) + ")"
                 for r in readers if r.connector]
    return (_HEAD.format(what="the connector readers of sae/planning/readers.py")
            + "import java.util.Arrays;\nimport java.util.Locale;\nimport java.util.function.Predicate;\n"
            "import java.util.stream.Collectors;\n\n"
            "/** How the data source reads (option {@code mode}): one constant per reader of sae's that reads\n"
            " * through the connector, saying what the reader leaves to the OSDs. */\n"
            "enum Mode {\n" + ",\n".join(constants) + ";\n\n"
            "  /** The option's value that selects this mode. */\n  final String option;\n"
            + "".join(f"  final boolean {f};\n" for f in flags) +
            "\n  Mode(String option, " + ", ".join(f"boolean {f}" for f in flags) + ") {\n"
            "    this.option = option;\n" + "".join(f"    this.{f} = {f};\n" for f in flags) + "  }\n\n"
            "  /** The mode an option value names; IllegalArgumentException naming the option otherwise. */\n"
            "  static Mode parse(String value) {\n"
            "    String v = value.strip().toLowerCase(Locale.ROOT);\n"
            "    for (Mode m : values()) {\n      if (m.option.equals(v)) return m;\n    }\n"
            "    throw Options.bad(\"mode\", value, \"use one of \" + names(m -> true));\n  }\n\n"
            "  /** The names of the modes {@code which} holds for, comma-separated. */\n"
            "  static String names(Predicate<Mode> which) {\n"
            "    return Arrays.stream(values()).filter(which).map(m -> m.option).collect(Collectors.joining(\", \"));\n"
            "  }\n}\n")


def sources() -> dict[str, str]:
    """Every generated source, by its path among the data source's sources."""
    return {FILE: render(), "sae/connector/OptionSpec.java": render_options(),
            "sae/connector/Mode.java": render_modes()}
