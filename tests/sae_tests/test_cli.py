"""CLI layer (click's runner): every bad input is one line with exit code 2, before anything is
reserved, installed or written; ``sae plan`` runs nothing."""
import json
import textwrap

import pytest
import yaml
from pathlib import Path

from click.testing import CliRunner

from sae.cli import main

SELECTIVITY = Path(__file__).resolve().parents[2] / "experiments" / "selectivity.py"
GOOD = """
from sae import Experiment, Sweep, DataSpec
experiment = Experiment(name="cli", sweep=Sweep(cartesian={"selectivity": [10, 100]}),
                        data=DataSpec(rows=1000), repetitions=2, warmup=1 %s)
"""


def write(tmp_path, text, name="exp.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("text, message", [
    ("experiment = (", "syntax error"),
    (GOOD % ', stages={"warm": print}', "unknown stage 'warm'"),
    (GOOD % ", colour=3", "unknown option 'colour' for Experiment"),
    ((GOOD % "").replace("[10, 100]", "[]"), "has no values"),
    ((GOOD % "").replace("[10, 100]", "[10, 150]"), "selectivity 150 is outside (0, 100]"),
    ("x = 1", "defines no 'experiment"),
])
def test_bad_experiment_files(tmp_path, text, message):
    f = write(tmp_path, text)
    for cmd in (["plan", f], ["run", f, "--out", tmp_path / "out"]):
        r = invoke(*cmd)
        assert r.exit_code == 2, r.output
        assert message in r.output and str(f) in r.output
        assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_reservation_too_small_fails_before_anything(tmp_path):
    f = write(tmp_path, GOOD % "")
    res = tmp_path / "small.yaml"
    res.write_text(yaml.safe_dump({"version": 1, "name": "small", "provider": "ssh",
                                   "nodes": [{"name": "node1", "host": "192.0.2.1"}]}))
    r = invoke("run", f, "--reservation", res, "--out", tmp_path / "out")
    assert r.exit_code == 2 and "has 1 nodes but point" in r.output and "small.yaml" in r.output
    assert not (tmp_path / "out").exists()


def test_unknown_profile(tmp_path):
    r = invoke("plan", write(tmp_path, GOOD % ""), "--profile", "paper")
    assert r.exit_code == 2 and "has no profile 'paper'" in r.output


def test_plan_runs_nothing_and_prints_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("plan", SELECTIVITY, "--json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)
    assert [s["point"] for s in plan["steps"] if s["stage"] == "run"] == plan["order"]
    assert plan["profile"] == "tiny" and len(plan["order"]) >= 4
    text = invoke("plan", SELECTIVITY).output
    assert "ETA" in text and "nothing was run" in text
    assert list(tmp_path.iterdir()) == []


def test_status_resume_report_on_non_run_dirs(tmp_path):
    for cmd in ("status", "resume", "report"):
        r = invoke(cmd, tmp_path)
        assert r.exit_code == 2 and "not an sae run directory" in r.output


def test_unskippable_stage(tmp_path):
    r = invoke("run", write(tmp_path, GOOD % ""), "--skip", "run", "--out", tmp_path / "out")
    assert r.exit_code == 2 and "--skip 'run': not a skippable stage" in r.output
    assert not (tmp_path / "out").exists()
