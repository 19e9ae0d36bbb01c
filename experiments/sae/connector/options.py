"""The sae-ceph data source's modes and tuning options.

A :class:`Mode` (option ``mode``) says what a reader leaves to the OSDs; each connector reader of
:mod:`sae.planning.readers` holds its own, and ``Mode.java`` is rendered from them. The tuning
options are defined once in ``options.json``: sae checks a workload's against them when it plans
(:meth:`Option.check`), and the data source checks the same rules when Spark opens it
(``Options.java``, from ``OptionSpec.java``; both rendered by :mod:`sae.connector.spec_java`). A
bound, default or list of choices written as a name in the file is the scan protocol's constant
(:data:`rados_deploy.scan_protocol.SPEC`), so the protocol's limits stay its own."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from metareserve.errors import UsageError
from rados_deploy.scan_protocol import SPEC, ScanProtocol

FILE = Path(__file__).with_name("options.json")
FORMAT = "sae-ceph"


@dataclasses.dataclass(frozen=True)
class Mode:
    """One of the data source's modes: ``name`` (the option's value), whether the filters and the
    projection go to the OSDs (``pushdown``), whether each object may be read whole and scanned in
    the Spark task instead (``pushback``, by a cost model: docs/connector.md), and whether each
    scan asks the OSD to probe the object's index for the filter's key values (``index``: the
    index flag; rados_deploy.osd_index builds the index)."""

    name: str
    pushdown: bool
    pushback: bool = False
    index: bool = False


FLAGS = tuple(f.name for f in dataclasses.fields(Mode) if f.name != "name")
"""What a mode says about how it reads; an option's ``needs`` names one."""


@dataclasses.dataclass(frozen=True)
class Option:
    """One option: a whole number (``minimum`` to ``maximum``, or its ``default``), a switch
    (``default`` a bool) or one of ``choices``; ``needs``: the :data:`FLAGS` a mode must have for
    the option to apply (None: every mode; the others refuse it); ``workload``: a field of sae's
    Workload of the same name sets it; ``write``: it applies to writes only."""

    name: str
    default: int | bool | str
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    needs: str | None = None
    workload: bool = False
    write: bool = False

    @property
    def kind(self) -> str:
        """``int``, ``bool`` or ``choice``."""
        return "choice" if self.choices else "bool" if isinstance(self.default, bool) else "int"

    def check(self, value, where: str) -> None:
        """Refuse ``value`` (as a workload holds it: None for the default) where the data source
        would: UsageError naming ``where`` and the rule."""
        if value is None and self.kind == "int":
            return
        if self.kind == "choice":
            if value not in self.choices:
                raise UsageError(f"{where} {value!r} is not one of {', '.join(self.choices)}")
        elif self.kind == "bool":
            if not isinstance(value, bool):
                raise UsageError(f"{where} must be true or false, not {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int) or not self.minimum <= value <= self.maximum:
            raise UsageError(f"{where} must be an integer >= {self.minimum} and <= {self.maximum}, not {value!r} "
                             f"(the {FORMAT} option {self.name}: {self.doc})")

    def render(self, value) -> str | None:
        """``value`` as the data source's option string; None (the option left out) for the
        default."""
        if value is None or value == self.default:
            return None
        return str(value).lower() if isinstance(value, bool) else str(value)

    def applies_to(self, mode: Mode | None) -> bool:
        """Whether the option applies to ``mode`` (None: a reader without the connector)."""
        return self.needs is None or mode is not None and getattr(mode, self.needs)


def load(path: Path = FILE, protocol: ScanProtocol = SPEC) -> dict[str, Option]:
    """The options in ``path``, protocol names resolved; UsageError naming the file and option
    otherwise."""
    def constant(v):   # a name in the file is the protocol's constant of that name
        if not isinstance(v, str):
            return v
        if v.startswith("_") or not hasattr(protocol, v):
            raise ValueError(f"{v!r} names no constant of the scan protocol")
        return getattr(protocol, v)
    known = {"default", "doc", "min", "max", "choices", "needs", "workload", "write"}
    out = {}
    try:
        for name, o in json.loads(path.read_text())["options"].items():
            if set(o) - known:
                raise ValueError(f"{name}: unknown keys {', '.join(sorted(set(o) - known))}")
            if "choices" in o:
                option = Option(name, o["default"], o["doc"], choices=tuple(constant(o["choices"])))
            elif isinstance(o["default"], bool):
                option = Option(name, o["default"], o["doc"])
            else:
                option = Option(name, constant(o["default"]), o["doc"], constant(o["min"]), constant(o["max"]))
            out[name] = dataclasses.replace(option, needs=o.get("needs"), workload=o.get("workload", False),
                                            write=o.get("write", False))
            _valid(out[name])
    except (OSError, ValueError, KeyError, TypeError) as e:
        what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise UsageError(f"{path}: not a valid options spec ({what}); fix the file") from None
    return out


def _valid(o: Option) -> None:
    ints = (o.minimum, o.maximum, o.default) if o.kind == "int" else (0, 0, 0)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in ints) or ints[0] > ints[1]:
        raise ValueError(f"{o.name}: an int option has whole numbers min <= max and a whole-number default")
    if o.kind == "choice" and o.default not in o.choices:
        raise ValueError(f"{o.name}: default {o.default!r} is not one of its choices")
    if not isinstance(o.workload, bool) or not isinstance(o.write, bool) or o.needs not in (None, *FLAGS):
        raise ValueError(f"{o.name}: workload and write are true or false, needs one of {', '.join(FLAGS)}")


OPTIONS = load()
"""Every tuning option by name."""
WORKLOAD = tuple(name for name, o in OPTIONS.items() if o.workload)
"""The options a workload sets, each from its field of the same name."""
