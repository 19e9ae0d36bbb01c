"""A run's provenance, kept in its ``versions.lock`` (one file): the controller's packages
(``controller``, part of every ledger key), sae's git commit and dirty flag (``sae``), the command
line (``command``), the copied experiment file (``experiment_file``: ``experiment.py`` in the run
directory), each node's software and platform (``nodes``: Ceph, kernel, CPU model; gathered once the stack
is started), what Spark's nodes run per Spark version (``spark``: version → node → Spark, JDK,
pyarrow and Python of that Spark's environment), what the build stage built from the tree
(``builds``: the object class's build key and the connector jar; the tree may change between the
run's start and its build) and the changes a resume was allowed to make (``changes``).
``sae resume`` compares the recorded provenance with now (:func:`compare`) and refuses in one line
naming what changed, unless ``--allow-changes``; :func:`facts` states it as rows for the report
and the results page. Pure but for reading git."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

NOT_GIT = "not a git checkout"


def git_state(path) -> dict:
    """``{"commit", "dirty", "checkout"}`` of the git checkout holding ``path``; ``commit`` reads
    :data:`NOT_GIT` (and ``dirty`` None) when there is none or git fails: never raises."""
    here = Path(path).resolve()
    here = here if here.is_dir() else here.parent

    def git(*args):
        return subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, timeout=30)
    try:
        top = git("rev-parse", "--show-toplevel")
        head = git("rev-parse", "HEAD")
        if top.returncode or head.returncode:
            return {"commit": NOT_GIT, "dirty": None, "checkout": None}
        status = git("status", "--porcelain", "--untracked-files=no")
        return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if not status.returncode else None,
                "checkout": top.stdout.strip()}
    except (OSError, subprocess.SubprocessError):
        return {"commit": NOT_GIT, "dirty": None, "checkout": None}


def sae_state() -> dict:
    """:func:`git_state` of the checkout the ``sae`` package is imported from."""
    import sae
    return git_state(Path(sae.__file__).parent)


def command(argv: list[str] | None = None) -> str:
    """The command line of a ``sae`` CLI process, or ``python API`` (a notebook, a script)."""
    argv = sys.argv if argv is None else argv
    prog = Path(argv[0]).name if argv else ""
    return " ".join(["sae", *argv[1:]]) if prog == "sae" else "python API"


def record(controller: dict, *, experiment_file: str | None, argv: list[str] | None = None) -> dict:
    """What ``versions.lock`` holds at run start (``nodes`` filled in once the stack runs)."""
    return {"version": 2, "controller": controller, "sae": sae_state(), "command": command(argv),
            "experiment_file": experiment_file, "nodes": {}, "spark": {}, "builds": {}, "changes": []}


def compare(recorded: dict, now: dict) -> list[str]:
    """What differs between recorded provenance and now, one phrase each: sae's commit or dirty
    flag, a controller package, a build, a node's software or platform (only keys both sides
    hold, so an old run or a stack not yet started compares by what it has)."""
    out = []
    old, new = recorded.get("sae") or {}, now.get("sae") or {}
    for key in ("commit", "dirty"):
        if key in old and key in new and old[key] != new[key]:
            out.append(f"sae {key} {_short(old[key])} -> {_short(new[key])}")
    out += [f"{name} {a} -> {b}" for name, a, b in _changed(recorded.get("controller"), now.get("controller"))]
    out += [f"{name} build {a} -> {b}" for name, a, b in _changed(recorded.get("builds"), now.get("builds"))]
    out += _nodes_changed(recorded.get("nodes"), now.get("nodes"))
    old_spark, new_spark = recorded.get("spark") or {}, now.get("spark") or {}
    for version in sorted(set(old_spark) & set(new_spark)):
        out += [f"{change} (Spark {version}'s nodes)" for change in _nodes_changed(old_spark[version], new_spark[version])]
    return out


def spark_nodes(recorded: dict) -> list[dict]:
    """What every Spark node of a versions.lock ran (``spark``, ``pyarrow``, ``java``, ``python``):
    per Spark software under ``spark``, or, in runs written before that section, under ``nodes``."""
    spark = recorded.get("spark") if isinstance(recorded.get("spark"), dict) else {}
    per_node = [n for nodes in spark.values() if isinstance(nodes, dict) for n in nodes.values()] if spark \
        else list((recorded.get("nodes") or {}).values())
    return [n for n in per_node if isinstance(n, dict)]


NOT_RECORDED = "not recorded"


def facts(recorded: dict, *, nodes_named: bool = True) -> list[tuple[str, str]]:
    """A versions.lock as (what, value) rows, in the order a reader checks them: sae's commit and
    dirty flag, the command, Ceph, Spark, the JDK, Python and pyarrow of the Spark nodes, the
    kernel, the CPU (model and logical CPUs) and OS of the nodes, the builds and the controller's
    packages. A value the nodes differ in lists each with its nodes (one value every node holds
    too, with ``nodes_named``); what a run written before it was recorded reads
    :data:`NOT_RECORDED`."""
    sae = recorded.get("sae") or {}
    commit = sae.get("commit") or NOT_RECORDED
    dirty = {True: "dirty: uncommitted changes", False: "clean"}.get(sae.get("dirty"))
    nodes = {n: v for n, v in (recorded.get("nodes") or {}).items() if isinstance(v, dict)}
    spark = {f"{name} (Spark {version})" if len(recorded.get("spark") or {}) > 1 else name: v
             for version, per_node in (recorded.get("spark") or {}).items() if isinstance(per_node, dict)
             for name, v in per_node.items() if isinstance(v, dict)}
    spark = spark or {n: v for n, v in nodes.items() if "spark" in v}   # runs before the spark section

    def across(per_node: dict, key: str, shown=str) -> str:
        return _across({n: shown(v[key]) for n, v in per_node.items() if v.get(key) not in (None, "")}, nodes_named)

    builds = recorded.get("builds") or {}
    controller = recorded.get("controller") or {}
    return [("sae commit", f"{_short(commit)} ({dirty})" if dirty else _short(commit)),
            ("command", str(recorded.get("command") or NOT_RECORDED)),
            ("Ceph", across(nodes, "ceph", _ceph)),
            ("Spark", across(spark, "spark")),
            ("JDK", across(spark, "java", _java)),
            ("Python, pyarrow (Spark nodes)", _across({n: f"{v.get('python', '?')}, {v.get('pyarrow', '?')}"
                                                      for n, v in spark.items() if "python" in v or "pyarrow" in v},
                                                     nodes_named)),
            ("kernel", across(nodes, "kernel")),
            ("CPU", _across({n: f"{v.get('cpu_model') or '?'}, {v['cpus']} logical CPUs" if v.get("cpus")
                             else str(v.get("cpu_model") or "?") for n, v in nodes.items()
                             if v.get("cpu_model") or v.get("cpus")}, nodes_named)),
            ("OS", across(nodes, "os")),
            ("builds", ", ".join(f"{k}: {v}" for k, v in builds.items()) or NOT_RECORDED),
            ("controller packages", ", ".join(f"{k} {v}" for k, v in controller.items()) or NOT_RECORDED)]


def _across(per_node: dict[str, str], nodes_named: bool = True) -> str:
    """One value for every node (``v (node1, node2)``; ``v`` unless ``nodes_named``), or each value
    with its nodes."""
    if not per_node:
        return NOT_RECORDED
    by_value: dict[str, list[str]] = {}
    for node in sorted(per_node):
        by_value.setdefault(per_node[node], []).append(node)
    if len(by_value) == 1 and not nodes_named:
        return next(iter(by_value))
    return "; ".join(f"{value} ({', '.join(names)})" for value, names in by_value.items())


def _ceph(text) -> str:
    """``ceph version 16.2.15 (<sha>) pacific (stable)`` as ``16.2.15 pacific``."""
    m = re.match(r"ceph version (\S+) \(\w+\) (\w+)", str(text))
    return f"{m.group(1)} {m.group(2)}" if m else str(text)


def _java(text) -> str:
    """``openjdk version "17.0.15" 2025-04-15`` as ``openjdk 17.0.15``."""
    m = re.match(r'(\S+) version "([^"]+)"', str(text))
    return f"{m.group(1)} {m.group(2)}" if m else str(text)


def _nodes_changed(old: dict | None, new: dict | None) -> list[str]:
    """``node key old -> new`` for each node both hold and each of its keys that differs."""
    old, new = old or {}, new or {}
    return [f"{node} {key} {a!r} -> {b!r}" for node in sorted(set(old) & set(new))
            for key, a, b in _changed(old[node], new[node])]


def _changed(old: dict | None, new: dict | None) -> list[tuple]:
    """``(key, old value, new value)`` for each key both hold with different values, by key."""
    old, new = old or {}, new or {}
    return [(k, old[k], new[k]) for k in sorted(set(old) & set(new)) if old[k] != new[k]]


def _short(value) -> str:
    return value[:12] if isinstance(value, str) and len(value) == 40 else str(value)
