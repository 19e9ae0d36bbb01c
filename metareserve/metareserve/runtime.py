"""A Python environment on nodes: a venv with pinned packages, installed from wheels the
controller fetched once and pushed (nodes need no internet access to PyPI).

The venv is built from the node's system ``python3`` with ``--system-site-packages`` so that
distribution bindings (Ceph's ``rados``/``cephfs``) stay importable next to pyarrow. It lives under
``/opt/sae/py/<hash>`` keyed by the requirements, so nodes sharing a disk share one copy; creation
is serialized with a lock and marked complete only at the end (idempotent).
"""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import OperationalError
from .log import node_log
from .model import Node
from .remote import Cluster

SOFTWARE_ROOT = "/opt/sae"


def wheel_cache() -> Path:
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "wheels"


def env_id(requirements: list[str], python_version: str) -> str:
    """Stable id of an environment: requirements + node python major.minor."""
    text = "\n".join(sorted(requirements)) + "\n" + python_version
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def fetch_wheels(requirements: list[str], python_version: str, *, stage: str = "runtime fetch") -> Path:
    """Download (or build) wheels for ``requirements`` for a node's python into a cache directory."""
    dest = wheel_cache() / env_id(requirements, python_version)
    done = dest / ".complete"
    if done.exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    mine = "%d.%d" % sys.version_info[:2]
    if python_version == mine:
        argv = [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(dest), *requirements]
    else:
        argv = [sys.executable, "-m", "pip", "download", "-q", "--dest", str(dest), "--only-binary=:all:",
                "--python-version", python_version, "--platform", "manylinux_2_28_x86_64",
                "--platform", "manylinux2014_x86_64", "--platform", "any", *requirements]
    node_log(None, stage, f"fetching wheels for python {python_version}: {' '.join(requirements)}")
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
        raise OperationalError(f"[controller {stage}] pip could not fetch {' '.join(requirements)}: {tail[0]}")
    done.write_text("\n".join(requirements))
    return dest


@dataclass(frozen=True)
class PythonEnv:
    """A node's venv: its ``python`` and whether this call ``installed`` it (else it was there)."""

    python: str
    installed: bool


def ensure_python_env(cluster: Cluster, requirements: list[str], *, nodes=None, stage: str = "runtime",
                      apt_packages=("python3-venv",)) -> dict[str, str]:
    """Make sure every node has a venv with ``requirements``; returns node name → python path.

    Idempotent: a node whose venv is complete only answers "no changes".
    """
    envs = provision_python_env(cluster, requirements, nodes=nodes, stage=stage, apt_packages=apt_packages)
    return {name: env.python for name, env in envs.items()}


def provision_python_env(cluster: Cluster, requirements: list[str], *, nodes=None, stage: str = "runtime",
                         apt_packages=("python3-venv",)) -> dict[str, PythonEnv]:
    """:func:`ensure_python_env`, saying per node whether it installed the venv."""
    selected = cluster.select(nodes)
    cluster.apt_install(apt_packages, nodes=selected, stage=f"{stage} apt")
    versions = cluster.run(["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           nodes=selected, stage=stage)
    out = {}
    by_version: dict[str, list[Node]] = {}
    for n in selected:
        by_version.setdefault(versions[n.name]["stdout"].strip(), []).append(n)
    for version, group in by_version.items():
        eid = env_id(requirements, version)
        venv = f"{SOFTWARE_ROOT}/py/{eid}"
        have = cluster.run(["test", "-e", f"{venv}/.complete"], nodes=group, stage=stage, check=False)
        todo = [n for n in group if have[n.name]["rc"] != 0]
        for n in group:
            out[n.name] = PythonEnv(f"{venv}/bin/python", installed=n in todo)
            if n not in todo:
                node_log(n.name, stage, f"python env {eid} present: no changes")
        if not todo:
            continue
        wheels = fetch_wheels(requirements, version, stage=f"{stage} fetch")
        cluster.put(f"{wheels}/", f"{SOFTWARE_ROOT}/wheels/{eid}/", nodes=todo, stage=f"{stage} push")
        q_venv, q_wheels = shlex.quote(venv), shlex.quote(f"{SOFTWARE_ROOT}/wheels/{eid}")
        script = (f"set -e; mkdir -p {SOFTWARE_ROOT}/py; exec 9>{SOFTWARE_ROOT}/py/.lock; flock 9; "
                  f"if [ -e {q_venv}/.complete ]; then exit 0; fi; rm -rf {q_venv}; "
                  f"python3 -m venv --system-site-packages {q_venv}; "
                  f"{q_venv}/bin/pip install -q --no-index --find-links {q_wheels} "
                  + shlex.join(requirements) + f"; touch {q_venv}/.complete")
        cluster.run(script, nodes=todo, stage=stage, timeout=1800,
                    hint="see the pip output above; the wheels come from the controller's cache")
        for n in todo:
            node_log(n.name, stage, f"python env {eid} installed ({len(requirements)} requirements)")
    return out
