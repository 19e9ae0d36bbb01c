"""Shared CLI plumbing for the six CLIs: the root group (``--version``, commands in the order they
are declared, one-line usage errors), error families mapped to exit codes and one-line messages,
and the options several CLIs share."""
from __future__ import annotations

import functools
import os
import sys
import time
import traceback
from pathlib import Path

import click

from .errors import NothingToDo, SaeError
from .layout import Layout, resolve_layout
from .log import setup
from .model import ENV_RESERVATION, Reservation, load_reservation

reservation_option = click.option(
    "--reservation", "-r", "reservation", envvar=ENV_RESERVATION, metavar="FILE",
    help=f"Reservation file (default: ${ENV_RESERVATION}).")
verbose_option = click.option("--verbose", "-v", is_flag=True, help="Debug logging on stderr.")
layout_options = [
    click.option("--layout", "layout_file", metavar="FILE", help="Layout file (roles → nodes)."),
    click.option("--role", "role_specs", multiple=True, metavar="ROLE=NODE[,NODE]",
                 help="Assign a role instead of --layout (repeatable)."),
]


def one_line_path(ctx, param, value):
    """A click callback for a path option: refuse an empty path or one with control characters
    (a newline would split log lines and commands) in one line naming the option."""
    if value is not None and (not str(value) or any(ord(ch) < 32 for ch in str(value))):
        raise click.BadParameter(f"{value!r}: give a path on one line", ctx=ctx, param=param)
    return value


def with_layout(fn):
    """Add --layout/--role options to a click command."""
    for opt in reversed(layout_options):
        fn = opt(fn)
    return fn


def load_target(reservation, layout_file=None, role_specs=()) -> tuple[Reservation, Layout]:
    """The reservation and layout named by --reservation/--layout/--role."""
    res = load_reservation(reservation)
    return res, resolve_layout(res, layout_file=layout_file, role_specs=role_specs)


class Group(click.Group):
    """The root group of a CLI: ``--version`` prints the installed version of the distribution
    that defines the group's function (``sae.cli`` → ``sae``), ``--help`` lists the commands in
    the order they are declared (the order of work), and the group's own usage errors (bad
    option values, unknown options, missing arguments) are one line, ``error: [prog cmd] what;
    see 'prog cmd --help'``, exit 2."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        package = self.callback.__module__.partition(".")[0]
        click.version_option(package_name=package, message="%(prog)s %(version)s",
                             help="Print the installed version and exit.")(self)

    def list_commands(self, ctx) -> list[str]:
        return list(self.commands)

    def main(self, *args, **kwargs):
        kwargs.pop("standalone_mode", None)
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx else self.name
            click.echo(f"error: [{where}] {e.format_message().rstrip('.')}; see '{where} --help'", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


def handle_errors(fn):
    """Run a click command body: SaeError → one line on stderr and its family's exit code."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        setup(verbose=bool(kwargs.pop("verbose", False)) if "verbose" in kwargs else False)
        try:
            return fn(*args, **kwargs)
        except NothingToDo as e:
            click.echo(str(e))
            sys.exit(0)
        except SaeError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:   # a bug or an unforeseen state: one line, the traceback in a file
            command = click.get_current_context().command_path
            where = _traceback_file(command)
            click.echo(f"error: [{command}] unexpected {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                       f"; the traceback is in {where}", err=True)
            sys.exit(1)
    return wrapper


def _traceback_file(command: str) -> str:
    """Write the current exception's traceback to ``$SAE_HOME/logs/`` (mode 0600); its path (or,
    where that cannot be written, why)."""
    logs = Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "logs"
    path = logs / f"{command.replace(' ', '-')}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    text = traceback.format_exc()
    try:
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as e:
        return f"nowhere ({logs} cannot be written: {e.strerror}; set SAE_HOME to a writable directory)"
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return str(path)
