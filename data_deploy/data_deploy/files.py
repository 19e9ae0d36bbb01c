"""Input paths: files, or directories expanded to their matching files."""
from __future__ import annotations

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
