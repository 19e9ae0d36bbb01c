"""Output paths: where a command will write, checked before it makes anything or reaches a host."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import UsageError


def check_writable(path, what: str, *, directory: bool) -> Path:
    """``path`` if a directory (``directory``) or a file can be made or written there: an existing
    ``path`` is of that kind, its nearest existing directory takes a new file (tried with an
    unnamed temporary file, which /proc and /sys refuse although root passes ``access(2)``), and
    nothing is left behind. UsageError naming ``what`` otherwise."""
    p = Path(path).expanduser()
    if os.path.lexists(p) and p.is_dir() != directory:
        raise UsageError(f"{what} {path} is {'not a directory' if directory else 'a directory'}; "
                         f"give a {'directory' if directory else 'file path'} you can write")
    base = p if directory and p.is_dir() else next(a for a in p.absolute().parents if os.path.lexists(a))
    if not base.is_dir():
        raise UsageError(f"{what} {path}: {base} is not a directory; give a path you can write")
    try:
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as e:
        raise UsageError(f"{what} {path}: nothing can be written in {base} ({e.strerror}); "
                         f"give a path you can write") from None
    return p
