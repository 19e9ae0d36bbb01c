"""The console-script wrapper (metareserve.cli_support.script): a command's exit code, its
output and the process's atexit work survive leaving through os._exit (pure: a subprocess)."""
import subprocess
import sys

import pytest

PROGRAM = """
import atexit, sys, click
from metareserve.cli_support import Group, handle_errors, script
from metareserve.errors import UsageError

@click.group(cls=Group)
def main():
    pass

@main.command()
@click.argument("what")
@handle_errors
def go(what):
    atexit.register(print, "atexit ran")
    print("out " * 5000)   # more than a pipe's buffer before exit
    if what == "bad":
        raise UsageError("[t go] bad input")

script(main)()
"""


@pytest.mark.parametrize("what, code", [("good", 0), ("bad", 2), ("--nope", 2)])
def test_exit_code_output_and_atexit_survive(what, code):
    r = subprocess.run([sys.executable, "-c", PROGRAM, "go", what], capture_output=True, text=True)
    assert r.returncode == code, r.stderr
    if what != "--nope":
        assert r.stdout.count("out ") == 5000 and r.stdout.rstrip().endswith("atexit ran")
    assert r.stderr.count("\n") == (1 if code else 0), r.stderr
