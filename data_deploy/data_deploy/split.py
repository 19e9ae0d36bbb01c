"""Split any Parquet input into files that each hold exactly one row group (or, as Arrow IPC
files, one record batch) and are at most one object size (and as close to it as the row
granularity allows), schema and footer complete."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads

from metareserve import format_size
from metareserve.errors import UsageError

from .sizes import check_object_size
from .files import expand, output_dir
from .formats import SUFFIXES, check_codec, check_format, check_page_rows, encode, rows_and_pieces

MARKER = "_split.json"
_TARGET_FILL = 0.998
_MAX_PROBES = 10


@dataclasses.dataclass
class SplitReport:
    """What ``split`` produced. ``min_fill`` is the smallest fill among all files but the last (1.0
    with a single file)."""

    out: Path
    files: list[Path]
    rows: int
    bytes: int
    object_size: int
    compression: str
    format: str
    min_fill: float
    changed: bool
    page_rows: int | None = None

    @property
    def fill_ratio(self) -> float:
        """bytes / (files × object_size); 0.0 without files."""
        return self.bytes / (len(self.files) * self.object_size) if self.files else 0.0

    def summary(self) -> str:
        head = "split" if self.changed else "split: no changes:"
        return (f"{head} {len(self.files)} files, {self.rows} rows, {format_size(self.bytes)} in "
                f"{self.out} (object size {format_size(self.object_size)}, fill {self.fill_ratio:.1%}, "
                f"min {self.min_fill:.1%}, format {self.format}, compression {self.compression}"
                + (f", pages of {self.page_rows} rows" if self.page_rows else "") + ")")


def file_entry(path: Path) -> dict:
    """Name, size, rows, pieces (a Parquet file's row groups, an IPC file's record batches) and
    sha256 of one object file (what manifests record)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    rows, pieces = rows_and_pieces(path)
    return {"name": path.name, "size": path.stat().st_size, "rows": rows, "row_groups": pieces,
            "sha256": h.hexdigest()}


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How each object is encoded: format, codec and rows per page (formats.encode)."""

    format: str
    compression: str
    page_rows: int | None

    def encode(self, table: pa.Table) -> pa.Buffer:
        return encode(table, self.format, self.compression, self.page_rows)


def _fingerprint(files: list[Path], object_size: int, layout: _Layout) -> dict:
    return {"object_size": object_size, "compression": layout.compression,
            **({"format": layout.format} if layout.format != "parquet" else {}),
            **({"page_rows": layout.page_rows} if layout.page_rows else {}),
            "inputs": [[str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns] for f in files]}


def _report(out: Path, marker: dict, changed: bool) -> SplitReport:
    sizes = [e["size"] for e in marker["files"]]
    size = marker["object_size"]
    return SplitReport(out=out, files=[out / e["name"] for e in marker["files"]],
                       rows=sum(e["rows"] for e in marker["files"]), bytes=sum(sizes), object_size=size,
                       compression=marker["compression"], format=marker.get("format", "parquet"),
                       min_fill=min(sizes[:-1], default=size) / size, changed=changed,
                       page_rows=marker.get("page_rows"))


class _Pending:
    """Rows read from the input but not yet written, refilled from a batch iterator."""

    def __init__(self, batches):
        self.batches, self.chunks, self.rows, self.done = batches, [], 0, False

    def fill(self, rows: int) -> None:
        while self.rows < rows and not self.done:
            b = next(self.batches, None)
            if b is None:
                self.done = True
            elif b.num_rows:
                self.chunks.append(b)
                self.rows += b.num_rows

    def head(self, n: int) -> pa.Table:
        return pa.Table.from_batches(self.chunks).slice(0, n)

    def drop(self, n: int) -> None:
        rest = pa.Table.from_batches(self.chunks).slice(n)
        self.chunks, self.rows = rest.to_batches(), rest.num_rows


def _best_file(pending: _Pending, size: int, layout: _Layout, guess: int) -> tuple[pa.Buffer, int]:
    """Largest row count ≤ available whose one-piece encoding fits ``size`` (few probes)."""
    lo, hi, best = 0, None, None
    n = max(1, guess)
    for _ in range(_MAX_PROBES):
        pending.fill(int(n * 1.05) + 1)
        n = min(n, pending.rows)
        buf = layout.encode(pending.head(n))
        if buf.size <= size:
            lo, best = n, (buf, n)
            if n == pending.rows and pending.done or buf.size >= size * _TARGET_FILL:
                break
        else:
            hi = n
        if hi is not None and hi - lo <= 1:
            break
        step = int(n * size * 0.999 / buf.size)
        n = min(max(step, lo + 1), hi - 1) if hi is not None else max(step, lo + 1)
    if best is None:
        raise UsageError(f"split: {n} row(s) already encode to {format_size(buf.size)} > object size "
                         f"{format_size(size)}; a row group cannot fit: choose a larger --object-size")
    return best


def split(inputs, *, out, object_size, compression: str = "none", format: str = "parquet",
          page_rows: int | None = None) -> SplitReport:
    """Re-encode Parquet ``inputs`` (files or directories) into ``out/part-NNNNN.parquet`` files of
    one row group each (``format="ipc"``: ``part-NNNNN.arrow`` Arrow IPC files of one record batch
    each), every file ≤ ``object_size`` and filled as close to it as rows allow. ``page_rows``
    (Parquet): data pages of at most that many rows, a page index, and dictionaries only for
    columns whose distinct values fit a dictionary page (formats.encode); None: the writer's defaults.

    Idempotent: a finished split of the same inputs and parameters (``out/_split.json``, written
    last) is reported with ``changed=False``. Raises UsageError for bad sizes, formats, codecs or
    inputs.
    """
    size = check_object_size(object_size)
    check_format(format)
    check_codec(compression, fmt=format)
    layout = _Layout(format, compression, check_page_rows(page_rows, format))
    files = expand(inputs)
    out = Path(out)
    marker_path = out / MARKER
    fp = _fingerprint(files, size, layout)
    if marker_path.exists():
        marker = json.loads(marker_path.read_text())
        if marker.get("fingerprint") == fp and all((out / e["name"]).exists() for e in marker["files"]):
            return _report(out, marker, changed=False)
    try:   # inputs first: a split that cannot read them leaves the previous one alone
        dataset = pads.dataset([str(f) for f in files], format="parquet")
        pending = _Pending(iter(dataset.to_batches(batch_size=1 << 15)))
        pending.fill(1)
    except (pa.ArrowInvalid, OSError) as e:
        raise UsageError(f"split: cannot read inputs as one Parquet dataset: {str(e).splitlines()[0]}") from None
    with output_dir(out, "split"):
        staging = _staging(out)
        try:
            try:
                marker = _write_split(pending, staging, size, layout, fp, dataset.schema)
            except (pa.ArrowInvalid, OSError) as e:   # an input that breaks past its first rows
                raise UsageError(f"split: cannot read inputs: {str(e).splitlines()[0]}; the previous "
                                 f"split in {out} is unchanged") from None
            _swap_in(staging, out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _report(out, marker, changed=True)


def _staging(out: Path) -> Path:
    """A fresh hidden sibling of ``out`` to write a split into (same file system: renames are atomic)."""
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.split-", dir=out.parent))


def _write_split(pending: _Pending, staging: Path, size: int, layout: _Layout, fp: dict, schema) -> dict:
    """Write every part and then the marker into ``staging``; the marker."""
    entries, guess = [], None
    while pending.rows:
        if guess is None:
            sample = min(pending.rows, 4096)
            guess = max(1, int(sample * size * 0.98 / layout.encode(pending.head(sample)).size))
        buf, n = _best_file(pending, size, layout, guess)
        path = staging / f"part-{len(entries):05d}{SUFFIXES[layout.format]}"
        with open(path, "wb") as f:
            f.write(buf)
        entries.append({"name": path.name, "size": buf.size, "rows": n})
        pending.drop(n)
        guess = n
        pending.fill(1)
    marker = {"version": 1, "fingerprint": fp, "object_size": size, "compression": layout.compression,
              "format": layout.format, **({"page_rows": layout.page_rows} if layout.page_rows else {}),
              "schema": schema.to_string(show_schema_metadata=False), "files": entries}
    (staging / MARKER).write_text(json.dumps(marker, indent=1))
    return marker


def _swap_in(staging: Path, out: Path) -> None:
    """Make the finished split in ``staging`` the content of ``out``: files in ``out`` that are no
    part of a split move along; the previous split's parts and marker go. Until the final rename
    ``out`` holds the previous split, whole."""
    for entry in out.iterdir():
        if entry.name == MARKER or entry.name.startswith("part-") and entry.suffix in (*SUFFIXES.values(), ".tmp"):
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), staging / entry.name)
        elif entry.is_dir():
            shutil.copytree(entry, staging / entry.name, symlinks=True)
        else:
            os.link(entry, staging / entry.name)
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    os.replace(out, old / "split")
    try:
        os.replace(staging, out)
    except BaseException:
        os.replace(old / "split", out)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
