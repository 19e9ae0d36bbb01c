"""Logging with ``[node stage]`` prefixes, and the console's progress display.

On a terminal, log lines and progress bars share one rich console: a command's long-lived
display (:func:`live`) hosts the bars of nested fan-outs (:func:`progress`) and log lines print
above it. On a non-terminal there are no bars, only plain lines. Only CLIs configure logging
(:func:`setup`); library code logs through the ``sae`` logger and never sets levels.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading

from .errors import prefix

logger = logging.getLogger("sae")

_console = None
_live = None          # the rich Progress of the active live display, if any
_details = 0          # > 0 while INFO lines are details (logged at DEBUG)
_lock = threading.Lock()


def node_log(node: str | None, stage: str | None, message: str, level: int = logging.INFO) -> None:
    """Log ``message`` prefixed by ``[node stage]`` (INFO becomes DEBUG inside :func:`details`)."""
    if level == logging.INFO and _details:
        level = logging.DEBUG
    logger.log(level, "%s%s", prefix(node, stage), message)


def say(node: str | None, stage: str | None, message: str) -> None:
    """A line meant for the person at the console: INFO even inside :func:`details`."""
    logger.log(logging.INFO, "%s%s", prefix(node, stage), message)


@contextlib.contextmanager
def details():
    """Inside the block, ``node_log`` INFO lines are logged at DEBUG (shown with ``-v``): a
    command that prints its own summary lines keeps the deployers' per-node lines out of sight."""
    global _details
    with _lock:
        _details += 1
    try:
        yield
    finally:
        with _lock:
            _details -= 1


def terminal() -> bool:
    """Whether stderr is a terminal (rich display) rather than a file or pipe (plain lines)."""
    return sys.stderr.isatty()


def console():
    """The rich Console on stderr that log lines and progress bars share."""
    global _console
    if _console is None:
        from rich.console import Console
        _console = Console(stderr=True)
    return _console


def setup(verbose: bool = False) -> None:
    """Console logging for CLIs: rich when stderr is a terminal, plain lines otherwise."""
    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    if any(getattr(h, "_sae", False) for h in root.handlers):
        root.setLevel(level)
        return
    if terminal():
        from rich.logging import RichHandler
        handler = RichHandler(console=console(), show_path=False, show_level=False, markup=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    handler._sae = True
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("execnet", "paramiko", "urllib3", "matplotlib", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _columns():
    from rich.progress import (BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)
    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn())


@contextlib.contextmanager
def live():
    """A live display for a whole command: yields its rich ``Progress`` (add tasks to it), or
    None on a non-terminal. Fan-out bars opened inside show up in it."""
    global _live
    if not terminal() or _live is not None:
        yield _live
        return
    from rich.progress import Progress
    with Progress(*_columns(), console=console(), transient=True) as bar:
        _live = bar
        try:
            yield bar
        finally:
            _live = None


@contextlib.contextmanager
def progress(description: str, total: int):
    """Yield an ``advance()`` callable; draws a rich progress bar only on a terminal (inside the
    active :func:`live` display if there is one)."""
    if total <= 1 or not terminal():
        yield lambda n=1: None
        return
    if _live is not None:
        bar = _live
        task = bar.add_task(description, total=total)
        try:
            yield lambda n=1: bar.advance(task, n)
        finally:
            bar.remove_task(task)
        return
    from rich.progress import Progress
    with Progress(*_columns()[:4], console=console(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
