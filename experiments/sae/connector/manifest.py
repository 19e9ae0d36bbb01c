"""What a directory the connector writes to holds, read through a CephFS mount (ceph-fuse).

The write path commits a job with one manifest, ``_sae-write-<seq>-<job>.json``, naming the files
it wrote (docs/connector.md, "Writing"). These are the rules the data source's ``Manifest.java``
applies, for readers that are not the connector:

- :func:`committed_files`: the files to read, e.g. ``spark.read.parquet(*committed_files(dir))``
  for vanilla Spark over the mount;
- :func:`leftovers`: the files no reader reads (what a failed or killed job left, superseded
  manifests), for ``sae clean`` to list and remove. Run it while no job writes to the directory:
  a running job's files are leftovers until it commits.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re

FORMAT = "sae-write"
VERSION = 1
SUFFIXES = (".parquet", ".arrow", ".csv")
"""The data files' suffixes (CephFiles.SUFFIXES)."""
_NAME = re.compile(r"_sae-write-(\d{10})-([0-9a-f]{32})\.json")
_PART = re.compile(r"part-([0-9a-f]{32})-\d+-\d+-\d+-\d+\.parquet")


@dataclasses.dataclass(frozen=True)
class State:
    """A directory's files for readers (``visible``, sorted names), whether manifests decided them
    (``committed``; else every data file but the writer's parts is visible) and the names no
    reader reads (``leftovers``, sorted)."""

    visible: list[str]
    committed: bool
    leftovers: list[str]


def parse(name: str, text: bytes | None) -> dict | None:
    """The manifest ``name`` holding ``text`` if it counts (parses, matches its name and its sums,
    ends with the end marker), else None."""
    m = _NAME.fullmatch(name)
    if not m or text is None:
        return None
    try:
        o = json.loads(text)
        files = o["files"]
        ok = (o["format"] == FORMAT and o["version"] == VERSION and o["seq"] == int(m.group(1))
              and o["job"] == m.group(2) and o["mode"] in ("append", "overwrite") and o["end"] == FORMAT
              and all(isinstance(f["name"], str) and isinstance(f["rows"], int) and isinstance(f["bytes"], int)
                      for f in files)
              and o["rows"] == sum(f["rows"] for f in files) and o["bytes"] == sum(f["bytes"] for f in files)
              and all(isinstance(a, str) for a in o["adopted"]))
    except (ValueError, KeyError, TypeError):
        return None
    return o if ok else None


def state(names: list[str], read) -> State:
    """The :class:`State` of a directory holding ``names``, its manifests' bytes read by
    ``read(name)`` (None if unreadable). OSError when a committed file is missing."""
    data = sorted(n for n in names if n.endswith(SUFFIXES))
    manifests = [n for n in names if _NAME.fullmatch(n)]
    valid = sorted((p for p in (parse(n, read(n)) for n in manifests) if p), key=lambda p: p["seq"])
    leftovers = set(manifests)
    if not valid:
        parts = {n for n in data if _PART.fullmatch(n)}
        return State([n for n in data if n not in parts], False, sorted(leftovers | parts))
    start = max((i for i, p in enumerate(valid) if p["mode"] == "overwrite"), default=0)
    visible: set[str] = set()
    for p in valid[start:]:
        leftovers.discard(_name(p))
        visible.update(p["adopted"], (f["name"] for f in p["files"]))
    missing = sorted(visible - set(names))
    if missing:
        raise OSError(f"committed file {missing[0]} is missing (a manifest names it); the output lost data: "
                      "write it again")
    return State(sorted(visible), True, sorted(leftovers | (set(data) - visible)))


def _name(p: dict) -> str:
    return f"_sae-write-{p['seq']:010d}-{p['job']}.json"


def dir_state(mount_dir: str) -> State:
    """The :class:`State` of directory ``mount_dir`` (a path on a CephFS mount)."""
    def read(name: str) -> bytes | None:
        try:
            with open(os.path.join(mount_dir, name), "rb") as f:
                return f.read()
        except OSError:
            return None
    return state(os.listdir(mount_dir), read)


def committed_files(mount_dir: str) -> list[str]:
    """The paths of the files readers read in ``mount_dir``, sorted: those the manifests name, or,
    in a directory without one, every data file but a writer's uncommitted parts."""
    return [os.path.join(mount_dir, n) for n in dir_state(mount_dir).visible]


def leftovers(mount_dir: str) -> list[str]:
    """The paths in ``mount_dir`` no reader reads: files of failed, killed or superseded attempts
    and jobs, and manifests that are partial or superseded. Call it while no job writes there."""
    return [os.path.join(mount_dir, n) for n in dir_state(mount_dir).leftovers]
