"""The wire protocol between the controller and a shipped remote module.

A remote module's source is sent once per connection, followed by :data:`LOOP`, which rebinds
the module's ``sae_emit`` (``print`` when the module runs locally) to stream a line back; each call is a JSON request ``{"fn", "args", "kwargs"}`` answered by zero or more
``{"log": line}`` messages and one ``{"result": value}`` or ``{"error", "traceback"}``.
"""
import inspect
import json

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
    """The source sent for ``module``: the module's source + the request loop."""
    return inspect.getsource(module) + "\n" + LOOP


def request(fn: str, args, kwargs) -> str:
    return json.dumps({"fn": fn, "args": list(args), "kwargs": dict(kwargs)})


def call_local(module, fn: str, *args, **kwargs):
    """Call a remote module's function in this process, as the node would (for tests)."""
    return json.loads(json.dumps(getattr(module, fn)(*args, **kwargs)))
