"""The CLI edge catches everything: an unexpected exception is one line naming the command and a
log file (mode 0600) holding the traceback, exit 1; click's own exits pass through."""
from __future__ import annotations

import re
import stat
from pathlib import Path

import click
from click.testing import CliRunner

from metareserve.cli_support import handle_errors


@click.group()
def tool():
    """A CLI shaped like sae's."""


@tool.command()
@handle_errors
def broken():
    {}["missing"]


@tool.command()
@click.option("--n", type=int, required=True)
@handle_errors
def fine(n):
    click.echo(n)


def test_an_unexpected_exception_is_one_line_and_a_private_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("SAE_HOME", str(tmp_path))
    r = CliRunner().invoke(tool, ["broken"])
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 1 and len(lines) == 1, r.output
    assert lines[0].startswith("error: [tool broken] unexpected KeyError: 'missing'; the traceback is in ")
    log = Path(re.search(r"the traceback is in (\S+)", lines[0]).group(1))
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text() and "missing" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_click_usage_errors_still_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("SAE_HOME", str(tmp_path))
    assert CliRunner().invoke(tool, ["fine", "--n", "x"]).exit_code == 2
    assert CliRunner().invoke(tool, ["fine", "--n", "3"]).output == "3\n"
    assert not (tmp_path / "logs").exists()
