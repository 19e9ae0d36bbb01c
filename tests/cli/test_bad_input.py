"""Bad input to every CLI, from one table: one line naming what is wrong, exit 2, nothing
written, nothing reached on a node, and no shell injection.

The reservation used names an ssh host that refuses connections, so a command that touched a
node before validating its options would exit 1 (unreachable host) instead of 2.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sae.cli_reference import CLIS

INJECT = "$(touch INJECTED)`touch INJECTED`"
EXPERIMENT = str(Path(__file__).parents[2] / "experiments" / "selectivity.py")

# (cli, arguments, a fragment the one line must contain); RES = the reservation file
CASES = [
    ("metareserve", ["reserve", "--nodes", "0", "--out", "r.yaml"], "nodes"),
    ("metareserve", ["reserve", "--nodes", "many"], "'--nodes'"),
    ("metareserve", ["reserve", "--provider", "nope", "--out", "r.yaml"], "nope"),
    ("metareserve", ["reserve", "--name", f"my cluster {INJECT}", "--out", "r.yaml"], "name"),
    ("metareserve", ["reserve", "--cpu-limit", "-1", "--out", "r.yaml"], "cpu"),
    ("metareserve", ["show", "-r", "missing.yaml"], "missing.yaml"),
    ("metareserve", ["show", "-r", "BROKEN"], "malformed YAML"),
    ("metareserve", ["show", "-r", "FIFO"], "not a regular file"),
    ("metareserve", ["check", "-r", "/dev/zero"], "not a regular file"),
    ("spark-deploy", ["start", "-r", "FIFO"], "not a regular file"),
    ("spark-deploy", ["start", "-r", "RES", "--worker-cores", "0"], "worker_cores"),
    ("spark-deploy", ["start", "-r", "RES", "--worker-memory", "lots"], "worker_memory"),
    ("spark-deploy", ["start", "-r", "RES", "--executor-memory", f"1g;{INJECT}"], "executor_memory"),
    ("spark-deploy", ["start", "-r", "RES", "--master-port", "70000"], "master_port"),
    ("spark-deploy", ["start", "-r", "RES", "--role", f"spark-master={INJECT}"], "does not have"),
    ("spark-deploy", ["start", "-r", "RES", "--spark-conf", "novalue"], "KEY=VALUE"),
    ("spark-deploy", ["start", "-r", "RES", "--worker-cores", "two"], "'--worker-cores'"),
    ("spark-deploy", ["uninstall", "-r", "RES", "--prefix", "/"], "prefix"),
    ("spark-deploy", ["uninstall", "-r", "RES", "--prefix", "/srv/../"], "prefix"),
    ("spark-deploy", ["uninstall", "-r", "RES", "--prefix", f"/srv/x;{INJECT}"], "prefix"),
    ("spark-deploy", ["uninstall", "-r", "RES", "--purge", "--spark-source", "/tmp/...tgz"], "spark_source"),
    ("rados-deploy", ["start", "-r", "RES", "--osd-size", "12XB"], "12XB"),
    ("rados-deploy", ["start", "-r", "RES", "--osds-per-node", "0"], "osds_per_node"),
    ("rados-deploy", ["start", "-r", "RES", "--fs-name", f"a b{INJECT}"], "fs_name"),
    ("rados-deploy", ["start", "-r", "RES", "--store", "filestore"], "'--store'"),
    ("data-deploy", ["generate", "--rows", "0", "--out", "gen"], "'--rows'"),
    ("data-deploy", ["split", "--object-size", "huge", "--out", "split", "in.parquet"], "huge"),
    ("data-deploy", ["deploy", "-r", "RES", "--object-size", "100", "SRC"], "object"),
    ("data-deploy", ["deploy", "-r", "RES", "--object-size", "4MiB", "--dest", f"x {INJECT}", "SRC"], "dest"),
    ("data-deploy", ["deploy", "-r", "RES", "--object-size", "4MiB", "--link-multiplier", "0", "SRC"], "'--link-multiplier'"),
    ("monitor-deploy", ["start", "-r", "RES", "--scrape-interval", "fast"], "fast"),
    ("monitor-deploy", ["start", "-r", "RES", "--prometheus-port", "0"], "prometheus_port"),
    ("monitor-deploy", ["export", "-r", "RES", "--from", "yesterday", "--to", "1", "--out", "exp"], "yesterday"),
    ("sae", ["run", "missing.py"], "missing.py"),
    ("sae", ["run", EXPERIMENT, "--profile", "nope"], "nope"),
    ("sae", ["run", EXPERIMENT, "--skip", "nostage"], "nostage"),
    ("sae", ["plan", "BROKEN.py"], "BROKEN.py"),
    ("sae", ["run", EXPERIMENT, "-r", "missing.yaml"], "missing.yaml"),
    ("sae", ["plan", "DOTDOT.py"], "name '..'"),
    ("sae", ["run", "DOTDOT.py", "--out", "out"], "name '..'"),
    ("sae", ["plan", "DUPLICATE.py"], "same point"),
    ("sae", ["plan", "NANPAUSE.py"], "pause"),
    ("sae", ["plan", "HUGEREPS.py"], "repetitions"),
]

EXPERIMENTS = {"DOTDOT": "Experiment(name='..')",
               "DUPLICATE": "Experiment(name='d', sweep=Sweep(cartesian={'selectivity': [1, 1.0]}))",
               "NANPAUSE": "Experiment(name='p', pause=float('nan'))",
               "HUGEREPS": "Experiment(name='r', repetitions=10**9)"}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory with a reservation of one unreachable ssh host and two broken files."""
    (tmp_path / "res.yaml").write_text(yaml.safe_dump({
        "version": 1, "name": "badinput", "provider": "ssh",
        "nodes": [{"name": "node1", "host": "127.0.0.1", "port": 1}]}))
    (tmp_path / "BROKEN").write_text("nodes: [unclosed\n")
    (tmp_path / "BROKEN.py").write_text("experiment = (\n")
    (tmp_path / "SRC").mkdir()
    os.mkfifo(tmp_path / "FIFO")
    for stem, text in EXPERIMENTS.items():
        (tmp_path / f"{stem}.py").write_text(f"from sae import Experiment, Sweep\nexperiment = {text}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAE_LOCAL_STATE", str(tmp_path / "local-state"))
    return tmp_path


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("cli,args,fragment", CASES, ids=[f"{c} {' '.join(a)[:40]}" for c, a, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(workdir, cli, args, fragment):
    before = _tree(workdir)
    argv = [str(workdir / "res.yaml") if a == "RES" else a for a in args]
    r = CliRunner().invoke(CLIS[cli], argv)
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert fragment in lines[0], lines[0]
    assert _tree(workdir) == before
    assert not os.path.exists("INJECTED") and not os.path.exists("/INJECTED")
