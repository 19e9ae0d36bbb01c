"""What the six CLIs show a newcomer: every CLI answers ``--version`` with its installed version,
every command's help starts with one line that the command list shows whole, every option says
what it does, every number option takes the digits 0-9 only, ``--json`` prints JSON, and
docs/cli.md is what the CLIs define."""
from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from metareserve.cli_support import Digits
from sae.cli_reference import CLIS

WIDTH = 80
"""The terminal width at which a group's command list shows every command's first line whole."""


def _commands():
    return [(cli, name, cmd) for cli, group in CLIS.items() for name, cmd in group.commands.items()]


@pytest.mark.parametrize("cli", CLIS)
def test_version_is_the_installed_distributions(cli):
    group = CLIS[cli]
    r = CliRunner().invoke(group, ["--version"], prog_name=cli)
    assert r.exit_code == 0, r.output
    package = group.callback.__module__.partition(".")[0]
    assert r.output == f"{cli} {importlib.metadata.version(package)}\n"


@pytest.mark.parametrize("cli, name, cmd", _commands(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_commands_help_is_one_line_then_options_that_say_what_they_do(cli, name, cmd):
    first = (cmd.help or "").strip().split("\n\n")[0]
    room = WIDTH - 6 - max(len(n) for n in CLIS[cli].commands)   # what click's command list leaves
    assert first and "\n" not in first and len(first) <= room, f"{cli} {name}: {first!r} is over {room} characters"
    assert first.endswith("."), f"{cli} {name}: {first!r}"
    silent = [p.opts[0] for p in cmd.params if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert not silent, f"{cli} {name}: options without help: {silent}"
    numbers = [p for p in cmd.params if isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType))]
    loose = [p.name for p in numbers if not isinstance(p.type, Digits)]
    assert not loose, f"{cli} {name}: {loose} take other scripts' digits (use cli_support.INT/FLOAT/IntRange/FloatRange)"


def test_sae_help_says_what_sae_is_and_shows_examples():
    r = CliRunner().invoke(CLIS["sae"], ["--help"], prog_name="sae", terminal_width=100)
    assert r.exit_code == 0
    assert "offloading experiments" in r.output and "Examples:" in r.output
    assert "  sae run experiments/selectivity.py" in r.output
    assert r.output.index("  run ") < r.output.index("  plan ") < r.output.index("  clean ")   # order of work


def test_metareserve_check_json_is_json(tmp_path, monkeypatch):
    """On hosts that refuse SSH: the per-node outcomes as JSON on stdout, the lines for people on
    stderr, exit 1."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"version": 1, "name": "refused", "provider": "ssh",
                                                      "nodes": [{"name": "node1", "host": "127.0.0.1", "port": 1}]}))
    r = CliRunner().invoke(CLIS["metareserve"], ["check", "-r", "r.yaml", "--json", "--no-calibrate"])
    assert r.exit_code == 1, r.output
    nodes = json.loads(r.stdout)
    assert [n["node"] for n in nodes] == ["node1"] and nodes[0]["ok"] is False and "SSH" in nodes[0]["reason"]
    assert "failed the health gate" in r.stderr


def test_docs_cli_md_is_what_the_clis_define():
    from sae.cli_reference import COMMAND, text
    doc = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    assert doc.read_text() == text(), f"docs/cli.md differs from the CLIs' help: regenerate it with '.venv/bin/{COMMAND}'"
