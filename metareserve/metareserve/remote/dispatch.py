"""The wire protocol between the controller and a shipped remote module.

A remote module's source is sent once per connection (:func:`program`: after the node-side
prelude, :mod:`metareserve.remote.prelude`, and the node-side modules it imports), followed by
:data:`LOOP`, which rebinds
the module's ``sae_emit`` (``print`` when the module runs locally) to stream a line back; each call is a JSON request ``{"fn", "args", "kwargs"}`` answered by zero or more
``{"log": line}`` messages and one ``{"result": value}`` or ``{"error", "traceback"}``.
"""
import ast
import importlib
import inspect
import json
import sys
import threading

from . import prelude

LOOP = '''
import json as _sae_json
import traceback as _sae_tb
def sae_emit(line):
    channel.send(_sae_json.dumps({"log": str(line)}))
for _sae_req in channel:
    _sae_r = _sae_json.loads(_sae_req)
    try:
        _sae_out = globals()[_sae_r["fn"]](*_sae_r["args"], **_sae_r["kwargs"])
        channel.send(_sae_json.dumps({"result": _sae_out}))
    except BaseException as _sae_e:
        channel.send(_sae_json.dumps({"error": "%s: %s" % (type(_sae_e).__name__, _sae_e),
                                      "traceback": _sae_tb.format_exc()}))
'''


def program(module) -> str:
    """The source sent for ``module``: one self-contained program of the prelude, the node-side
    modules ``module`` imports, the module itself and the request loop.

    A node module imports other node-side code (stdlib only itself) with top-level absolute
    ``from package.module import names`` lines; each such module's source goes ahead of it
    (recursively, once each), the line is dropped, and every part runs in one namespace. Their
    ``from __future__`` imports become one line at the top.
    """
    parts: list[str] = []
    seen: set[str] = set()
    with _PARSING:
        for m in (prelude, module):
            _ship(m, parts, seen)
    return "\n".join(["from __future__ import annotations", *parts, LOOP])


_PARSING = threading.Lock()
"""One ``ast.parse`` at a time: Debian 12's CPython 3.11.2 keeps the AST conversion's recursion
depth per interpreter, so parses in parallel threads (one per node) fail with "SystemError: AST
constructor recursion depth mismatch" (CPython gh-106905)."""


def _ship(module, parts: list[str], seen: set[str]) -> None:
    """Append ``module``'s source (its node-side imports first, then without them) to ``parts``."""
    name = module.__name__
    if name in seen:
        return
    seen.add(name)
    source = inspect.getsource(module)
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            raise ValueError(f"{name}: node modules import node-side code absolutely, not {'.' * node.level}"
                             f"{node.module or ''}")
        if node.module != "__future__":
            if node.module.partition(".")[0] in sys.stdlib_module_names:
                continue      # the node has it
            _ship(importlib.import_module(node.module), parts, seen)
        lines[node.lineno - 1:node.end_lineno] = [""] * (node.end_lineno - node.lineno + 1)
    parts.append(f"# node module {name}\n" + "\n".join(lines))


def request(fn: str, args, kwargs) -> str:
    return json.dumps({"fn": fn, "args": list(args), "kwargs": dict(kwargs)})


def call_local(module, fn: str, *args, **kwargs):
    """Call a remote module's function in this process, as the node would (for tests)."""
    return json.loads(json.dumps(getattr(module, fn)(*args, **kwargs)))
