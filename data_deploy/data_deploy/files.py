"""Input paths (files, or directories expanded to their matching files) and output directories
that a failed command takes back."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from metareserve.errors import UsageError


def expand(paths, patterns=("*.parquet",)) -> list[Path]:
    """Files named by ``paths`` (a path or a list); directories give their files matching ``patterns``."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for pat in patterns for f in p.glob(pat))
            if not found:
                raise UsageError(f"{p}: directory holds no {'/'.join(patterns)} files")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise UsageError(f"{p}: no such file or directory")
    return files


@contextlib.contextmanager
def output_dir(out, what: str):
    """Make the directory ``out`` (and its missing parents) for the command ``what``; yield a list
    to which the block adds each file it creates there. If the block fails, those files and the
    directories made here are removed: a failed command leaves nothing it created. UsageError
    (nothing made) when ``out`` cannot be a directory."""
    out = Path(out)
    made = [d for d in (out, *out.parents) if not os.path.lexists(d)][::-1]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _remove_empty(made)
        raise UsageError(f"{what}: cannot make the output directory {out} ({e.strerror}); "
                         f"give a directory you can write") from None
    written: list[Path] = []
    try:
        yield written
    except BaseException:
        for f in written:
            f.unlink(missing_ok=True)
        _remove_empty(made)
        raise


def _remove_empty(dirs: list[Path]) -> None:
    for d in reversed(dirs):
        with contextlib.suppress(OSError):
            d.rmdir()   # only while empty
