"""No shell string is built from a variable unless the variable is quoted where it is put in.

Scans every package's source for the three ways a string reaches a shell: ``cluster.run(<str>)``
(metareserve runs a string through the node's shell), ``["sh", "-c", <str>]`` and
``shell=True``. In such a string every interpolated value must be ``shlex.quote(...)`` or
``shlex.join(...)``, or a module constant (an UPPER_CASE name); a string variable is followed to its
assignments in the same function. A new unquoted interpolation fails this test, naming file and line.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ["metareserve/metareserve", "spark_deploy/spark_deploy", "rados_deploy/rados_deploy",
            "data_deploy/data_deploy", "monitor_deploy/monitor_deploy", "experiments/sae"]


def _is_quoting(expr) -> bool:
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("quote", "join") and getattr(expr.func.value, "id", "") == "shlex")


def _stringish(expr, assigns) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.JoinedStr):
        return True
    if isinstance(expr, ast.BinOp):
        return _stringish(expr.left, assigns) or _stringish(expr.right, assigns)
    if isinstance(expr, ast.Name):
        return any(_stringish(v, {}) for v in assigns.get(expr.id, ()))
    return _is_quoting(expr)


def _unquoted(expr, assigns, seen=()) -> list[str]:
    """The interpolated parts of a shell string that are neither quoted nor constants."""
    if isinstance(expr, ast.Constant) or _is_quoting(expr):
        return []
    if isinstance(expr, ast.Name):
        if expr.id.isupper():
            return []
        if expr.id in assigns and expr.id not in seen:
            return [bad for v in assigns[expr.id] for bad in _unquoted(v, assigns, (*seen, expr.id))]
        return [expr.id]
    if isinstance(expr, ast.JoinedStr):
        return [bad for v in expr.values if isinstance(v, ast.FormattedValue)
                for bad in _unquoted(v.value, assigns, seen)]
    if isinstance(expr, ast.BinOp):
        return _unquoted(expr.left, assigns, seen) + _unquoted(expr.right, assigns, seen)
    if isinstance(expr, ast.Attribute) and expr.attr.isupper():
        return []
    return [ast.unparse(expr)]


def _assignments(fn) -> dict[str, list]:
    out: dict[str, list] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(t, ast.Name):
                            out.setdefault(t.id, []).append(v)
    return out


def shell_strings_from_variables() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] + [tree]
            for scope in scopes:
                assigns = _assignments(scope)
                for node in ast.walk(scope):
                    shells = []
                    if isinstance(node, ast.Call):
                        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                        if name == "run" and node.args and _stringish(node.args[0], assigns):
                            shells.append(node.args[0])
                        if any(k.arg == "shell" and getattr(k.value, "value", None) is True for k in node.keywords):
                            shells.append(node.args[0] if node.args else node)
                    if isinstance(node, ast.List):
                        e = node.elts
                        shells += [e[i + 2] for i in range(len(e) - 2)
                                   if getattr(e[i], "value", None) in ("sh", "bash")
                                   and getattr(e[i + 1], "value", None) == "-c"]
                    for shell in shells:
                        for bad in _unquoted(shell, assigns):
                            found.append(f"{path.relative_to(REPO)}:{node.lineno}: {bad}")
    return sorted(set(found))


def test_no_shell_string_is_built_from_an_unquoted_variable():
    assert shell_strings_from_variables() == []


def test_the_scan_finds_what_it_looks_for(tmp_path, monkeypatch):
    bad = tmp_path / "metareserve" / "metareserve"
    bad.mkdir(parents=True)
    (bad / "x.py").write_text(
        "import shlex, subprocess\n"
        "def f(cluster, prefix, name):\n"
        "    cluster.run(f'rm -rf {prefix}/x', stage='s')\n"                      # found
        "    script = 'mkdir ' + name\n"
        "    cluster.run(script, stage='s')\n"                                    # found
        "    subprocess.run(['sh', '-c', f'echo {name}'])\n"                      # found
        "    cluster.run(f'rm -rf {shlex.quote(prefix)}', stage='s')\n"           # quoted: fine
        "    cluster.run(['rm', '-rf', prefix], stage='s')\n")                    # argv: fine
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGES", ["metareserve/metareserve"])
    assert sorted(f.split(": ", 1)[1] for f in shell_strings_from_variables()) == ["name", "name", "prefix"]
