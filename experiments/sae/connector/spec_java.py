"""The scan protocol's constants for the Java data source: ``ProtocolSpec.java``, rendered from
rados_deploy's spec (:mod:`rados_deploy.scan_protocol`) whenever the jar is compiled, never kept
in the tree."""
from __future__ import annotations

import json

from rados_deploy.scan_protocol import SPEC, ScanProtocol

FILE = "sae/connector/ProtocolSpec.java"
"""Where the rendered source goes among the data source's sources."""


def _bytes(b: bytes) -> str:
    return "{" + ", ".join(f"'{chr(c)}'" for c in b) + "}"


def _strings(items) -> str:
    return "List.of(" + ", ".join(json.dumps(s) for s in items) + ")"


def _const(name: str) -> str:
    return name.upper()


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
              "/** Formats of a successful reply's body, by their code in the reply header. */",
              f"static final List<String> BODIES = {_strings(spec.bodies)};",
              f"static final int MAX_BATCH_ROWS = {spec.max_batch_rows};",
              *(f"static final int NODE_{_const(k)} = 0x{v:02x};" for k, v in spec.nodes.items()),
              *(f"static final int LITERAL_{_const(k)} = {v};" for k, v in spec.literals.items()),
              "/** Names of the stats a successful reply carries, in wire order. */",
              f"static final List<String> STATS = {_strings(spec.stat_names)};",
              "/** Unit of each stat (ns, count, bytes). */",
              f"static final List<String> STAT_UNITS = {_strings(s.unit for s in spec.stats)};",
              "/** What each stat measures. */",
              f"static final List<String> STAT_DOCS = {_strings(s.doc for s in spec.stats)};"]
    body = "\n".join(f"  {f}" for f in fields)
    return ("// Generated from rados_deploy's cls/scan_protocol.json by sae.connector.spec_java when the jar is\n"
            "// built; do not edit (docs/protocol.md).\n"
            "package sae.connector;\n\nimport java.util.List;\n\n"
            "/** The scan protocol's constants (docs/protocol.md). */\n"
            f"final class ProtocolSpec {{\n  private ProtocolSpec() {{}}\n\n{body}\n}}\n")
