"""Logging with ``[node stage]`` prefixes and a progress display for long fan-outs."""
from __future__ import annotations

import contextlib
import logging
import sys

from .errors import prefix

logger = logging.getLogger("sae")


def node_log(node: str | None, stage: str | None, message: str, level: int = logging.INFO) -> None:
    """Log ``message`` prefixed by ``[node stage]``."""
    logger.log(level, "%s%s", prefix(node, stage), message)


def setup(verbose: bool = False) -> None:
    """Console logging for CLIs: rich when stderr is a terminal, plain lines otherwise."""
    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    if any(getattr(h, "_sae", False) for h in root.handlers):
        root.setLevel(level)
        return
    if sys.stderr.isatty():
        from rich.logging import RichHandler
        handler = RichHandler(show_path=False, show_level=False, markup=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    handler._sae = True
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("remoto", "execnet", "paramiko", "urllib3", "matplotlib", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@contextlib.contextmanager
def progress(description: str, total: int):
    """Yield an ``advance()`` callable; draws a rich progress bar only on a terminal."""
    if total <= 1 or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
