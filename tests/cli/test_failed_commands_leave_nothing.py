"""A command that fails after it began making things leaves nothing it made: no run directory
without anything to resume, no half-written output directory, a ``latest`` link and a previous
split untouched. One table; each case fails for real (bad files, an unreachable host, a place
where nothing can be written), and the whole working directory ($SAE_HOME and the local
provider's state inside it) is compared before and after, file contents and link targets too.
Failures that need a cluster are tested beside their code (rados_deploy: bootstrap, class build,
mount; data_deploy: the staged copy of a failed deploy) and in test_failed_commands_on_nodes.py."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import data_deploy
from data_deploy.cli import main as data_deploy_cli
from metareserve.cli import main as metareserve
from monitor_deploy.cli import main as monitor_deploy
from sae.cli import main as sae

EXPERIMENT = str(Path(__file__).parents[2] / "experiments" / "selectivity.py")
CLIS = {"sae": sae, "data-deploy": data_deploy_cli, "monitor-deploy": monitor_deploy, "metareserve": metareserve}
KEPT = "no step finished, so no run directory was kept"

FILES = {"RES", "OUT", "SPLIT", "SRC", "GOOD.parquet", "BAD.parquet", "BAD.csv"}   # made by ``workdir``
# (cli, arguments, exit code, a fragment of the one error line)
CASES = [
    ("sae", ["run", EXPERIMENT, "-r", "RES"], 1, KEPT),                                # first step fails
    ("sae", ["run", EXPERIMENT, "-r", "RES", "--out", "new/deeper"], 1, KEPT),         # parents made for it
    ("sae", ["run", EXPERIMENT, "-r", "RES", "--out", "OUT"], 1, KEPT),                # 'latest' names a run
    ("sae", ["run", EXPERIMENT, "--provider", "ssh"], 2, "--provider ssh needs your hosts"),   # refused at load
    ("sae", ["run", EXPERIMENT, "--out", "GOOD.parquet"], 2, "GOOD.parquet is not a directory"),
    ("sae", ["run", EXPERIMENT, "--out", "/proc/sae-no-such-dir"], 2, "nothing can be written in /proc"),
    ("sae", ["gallery", "--record", "OUT", "--runs", "runs"], 2, "damaged plan"),          # no plan.yaml
    ("sae", ["gallery", "--runs", "OUT", "--experiments", str(Path(EXPERIMENT).parent), "--out",
             "/proc/sae-no-such-dir"], 2, "cannot make the directory"),
    ("data-deploy", ["ingest", "GOOD.parquet", "BAD.csv", "--out", "ingested"], 2, "no column"),
    ("data-deploy", ["ingest", "BAD.parquet", "--out", "ingested"], 2, "cannot read as TLC"),
    ("data-deploy", ["split", "BAD.parquet", "--object-size", "4MiB", "--out", "split"], 2, "cannot read inputs"),
    ("data-deploy", ["split", "BAD.parquet", "--object-size", "4MiB", "--out", "SPLIT"], 2, "cannot read inputs"),
    ("data-deploy", ["generate", "--rows", "10", "--out", "/proc/sae-no-such-dir"], 2, "cannot make the output"),
    ("data-deploy", ["deploy", "-r", "RES", "--object-size", "4MiB", "SRC"], 2, "not a readable Parquet"),
    ("monitor-deploy", ["dashboard", "-r", "RES", "--out", "/proc/sae-no-such-dir"], 2, "nothing can be written in /proc"),
    ("metareserve", ["reserve", "-p", "ssh", "--host", "127.0.0.1", "--name", "gone", "--out", "gone.yaml"], 1,
     "failed the health gate"),                                                     # nothing answers on :22
]


@pytest.fixture(scope="module")
def good_parquet(tmp_path_factory) -> Path:
    return data_deploy.generate(200, seed=1, out=tmp_path_factory.mktemp("gen"))[0]


@pytest.fixture
def workdir(tmp_path, monkeypatch, good_parquet):
    """Unreachable ssh hosts (node1..node3 at port 1), bad inputs, an earlier run and split."""
    (tmp_path / "RES").write_text(yaml.safe_dump({
        "version": 1, "name": "failing", "provider": "ssh",
        "nodes": [{"name": f"node{i}", "host": f"127.0.0.{i}", "port": 1} for i in (1, 2, 3)]}))
    (tmp_path / "GOOD.parquet").write_bytes(good_parquet.read_bytes())
    (tmp_path / "BAD.parquet").write_text("not parquet")
    (tmp_path / "BAD.csv").write_text("a,b\n1,2\n")
    (tmp_path / "SRC").mkdir()
    (tmp_path / "SRC" / "part-00000.parquet").write_text("no")
    earlier = tmp_path / "OUT" / "selectivity" / "20000101-000000-tiny"
    earlier.mkdir(parents=True)
    (earlier / "ledger.json").write_text("{}")
    (earlier.parent / "latest").symlink_to(earlier.name)
    (tmp_path / "SPLIT").mkdir()
    (tmp_path / "SPLIT" / "part-00000.parquet").write_bytes(good_parquet.read_bytes())
    (tmp_path / "SPLIT" / "_split.json").write_text('{"version": 1}')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAE_LOCAL_STATE", str(tmp_path / "local-state"))
    monkeypatch.delenv("SAE_RESERVATION", raising=False)
    return tmp_path


def _state(root: Path) -> dict[str, str]:
    """Every path under ``root``: a directory, a link's target, a file's sha256 or "special" (a FIFO)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            out[rel] = (f"-> {os.readlink(p)}" if p.is_symlink() else "dir" if p.is_dir()
                        else hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "special")
    return out


@pytest.mark.parametrize("cli,args,code,fragment", CASES, ids=[f"{c} {' '.join('selectivity.py' if x == EXPERIMENT else x for x in a)}" for c, a, _, _ in CASES])
def test_a_failed_command_leaves_nothing_it_made(workdir, cli, args, code, fragment):
    before = _state(workdir)
    argv = [str(workdir / a) if a in FILES else a for a in args]
    r = CliRunner().invoke(CLIS[cli], argv)
    errors = [line for line in r.output.splitlines() if line.startswith("error: ")]
    assert r.exit_code == code, r.output
    assert len(errors) == 1 and fragment in errors[0], r.output
    assert _state(workdir) == before
