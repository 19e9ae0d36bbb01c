"""Shared CLI plumbing for the six CLIs: the root group (``--version``, commands in the order they
are declared, one-line usage errors), error families mapped to exit codes and one-line messages,
and the options several CLIs share."""
from __future__ import annotations

import functools
import inspect
import os
import sys
import time
import traceback
from pathlib import Path

import click

from .errors import NothingToDo, SaeError, UsageError
from .layout import Layout, resolve_layout
from .log import setup
from .model import ENV_RESERVATION, Reservation, load_reservation
from .outputs import check_writable

reservation_option = click.option(
    "--reservation", "-r", "reservation", envvar=ENV_RESERVATION, metavar="FILE",
    help=f"Reservation file (default: ${ENV_RESERVATION}).")
verbose_option = click.option("--verbose", "-v", is_flag=True, help="Debug logging on stderr.")
layout_options = [
    click.option("--layout", "layout_file", metavar="FILE", help="Layout file (roles → nodes)."),
    click.option("--role", "role_specs", multiple=True, metavar="ROLE=NODE[,NODE]",
                 help="Assign a role instead of --layout (repeatable)."),
]


class Digits:
    """Mixed into click's number types: a number written with the digits 0-9 only. Python's
    ``int`` and ``float`` also read other scripts' digits ('٣', '３'), so a value nobody typed as
    a number would pass; every number option of the six CLIs uses :data:`INT`, :data:`FLOAT`,
    :class:`IntRange` or :class:`FloatRange`."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.isascii():
            self.fail(f"{value!r} is not a number: write it with the digits 0-9", param, ctx)
        return super().convert(value, param, ctx)


class _Int(Digits, click.types.IntParamType):
    pass


class _Float(Digits, click.types.FloatParamType):
    pass


class IntRange(Digits, click.IntRange):
    """click.IntRange, digits 0-9 only."""


class FloatRange(Digits, click.FloatRange):
    """click.FloatRange, digits 0-9 only."""


INT, FLOAT = _Int(), _Float()
"""click's INT and FLOAT, digits 0-9 only (``type=INT`` where click would take ``type=int``)."""


def one_line_path(ctx, param, value):
    """A click callback for a path option: refuse an empty path or one with control characters
    (a newline would split log lines and commands) in one line naming the option."""
    if value is not None and (not str(value) or any(ord(ch) < 32 for ch in str(value))):
        raise click.BadParameter(f"{value!r}: give a path on one line", ctx=ctx, param=param)
    return value


def writable_dir(ctx, param, value):
    """A click callback for an output directory option: refuse, in one line naming the option, a
    path where nothing can be written (under /proc, a file's name) before anything runs."""
    if value is not None:
        try:
            check_writable(value, param.opts[0], directory=True)
        except UsageError as e:
            raise click.UsageError(str(e), ctx=ctx) from None
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


def reference(prog: str, group: click.Group) -> str:
    """Markdown reference of the CLI ``prog`` (its root ``group``), from the click definitions:
    a section with the group's help and options, then one per command with its usage, help and
    options (help texts as written; usage lines at any terminal width)."""
    root = click.Context(group, info_name=prog, terminal_width=200, max_content_width=200)
    out = [f"## {prog}", _markdown(group.help), _options(group, root)]
    for name, cmd in group.commands.items():
        if not cmd.hidden:
            ctx = click.Context(cmd, info_name=name, parent=root)
            out += [f"### {prog} {name}", f"```text\n{ctx.get_usage()}\n```", _markdown(cmd.help), _options(cmd, ctx)]
    return "\n\n".join(out) + "\n"


def _markdown(help_text: str | None) -> str:
    """A click help text as Markdown: paragraphs joined, a ``\\b`` paragraph (kept as written) fenced."""
    paragraphs = [p for p in inspect.cleandoc(help_text or "").split("\n\n") if p.strip()]
    return "\n\n".join(f"```text\n{p[1:].strip(chr(10))}\n```" if p.startswith("\b") else " ".join(p.split())
                       for p in paragraphs)


def _options(cmd: click.Command, ctx: click.Context) -> str:
    """A table of ``cmd``'s options (names and metavar; help with default and required)."""
    rows = [p.get_help_record(ctx) for p in cmd.get_params(ctx)
            if isinstance(p, click.Option) and not p.hidden and p is not cmd.get_help_option(ctx)]
    rows = [(names.replace("|", "\\|"), " ".join(text.split()).replace("|", "\\|")) for names, text in filter(None, rows)]
    if not rows:
        return "No options."
    return "| option | what it does |\n|---|---|\n" + "\n".join(f"| `{names}` | {text} |" for names, text in rows)
