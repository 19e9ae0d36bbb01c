"""Shared CLI plumbing: one place mapping error families to exit codes and one-line messages."""
from __future__ import annotations

import functools
import sys

import click

from .errors import NothingToDo, SaeError
from .layout import Layout, resolve_layout
from .log import setup
from .model import ENV_RESERVATION, Reservation, load_reservation

reservation_option = click.option(
    "--reservation", "-r", "reservation", envvar=ENV_RESERVATION, metavar="FILE",
    help=f"Reservation file (default: ${ENV_RESERVATION}).")
layout_options = [
    click.option("--layout", "layout_file", metavar="FILE", help="Layout file (roles → nodes)."),
    click.option("--role", "role_specs", multiple=True, metavar="ROLE=NODE[,NODE]",
                 help="Assign a role instead of --layout (repeatable)."),
]


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
    """A click group whose own usage errors (bad option values, unknown options, missing
    arguments) are one line, ``error: [prog cmd] what; see 'prog cmd --help'``, exit 2."""

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
    return wrapper
