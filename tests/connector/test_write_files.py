"""The write path's parts that need no cluster: the rolling Parquet writer (ObjectFiles.java) and
the manifest rules, which the data source (Manifest.java) and sae.connector.manifest apply alike."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sae.connector import manifest

JOB, OTHER = "a" * 32, "b" * 32


@pytest.fixture(scope="module")
def write_check(java_checks):
    return lambda *args: java_checks("sae.connector.WriteCheck", *args)


def test_rows_roll_into_single_row_group_files_of_one_object(write_check, tmp_path):
    """400k rows at a 4 MiB object: every file one row group, none above the object, all rows."""
    lines = write_check("files", str(tmp_path), "400000", str(4 << 20))
    files = [ln.split() for ln in lines if ln.startswith("file ")]
    assert len(files) >= 2
    for _, name, rows, size in files:
        meta = pq.ParquetFile(tmp_path / name).metadata
        assert meta.num_row_groups == 1 and meta.num_rows == int(rows), name
        assert int(size) == (tmp_path / name).stat().st_size <= 4 << 20, name
    assert sum(int(f[2]) for f in files) == 400000
    assert max(int(f[3]) for f in files) > 0.7 * (4 << 20)   # filled, not rolled early


def _manifest(seq: int, job: str, mode: str, files: dict[str, int], adopted=(), **override) -> tuple[str, bytes]:
    entries = [{"name": n, "rows": r, "bytes": 10 * r} for n, r in files.items()]
    body = {"format": "sae-write", "version": 1, "seq": seq, "job": job, "mode": mode, "files": entries,
            "adopted": list(adopted), "rows": sum(files.values()), "bytes": 10 * sum(files.values()),
            "end": "sae-write", **override}
    return f"_sae-write-{seq:010d}-{job}.json", json.dumps(body, indent=2).encode()


def _part(job: str, partition: int, attempt: int) -> str:
    return f"part-{job}-{partition}-{7 + attempt}-{attempt}-0.parquet"


CASES = {
    # a data_deploy directory: every data file; a writer's uncommitted part is a leftover
    "no manifest": ({"a.parquet": b"", "b.parquet": b"", _part(JOB, 0, 0): b"", "_manifest.json": b"{}"},
                    {"visible": ["a.parquet", "b.parquet"], "committed": False, "leftovers": [_part(JOB, 0, 0)]}),
    # one commit: its files; the failed attempt's file is a leftover
    "committed": ({_part(JOB, 0, 1): b"", _part(JOB, 0, 0): b"",
                   **dict([_manifest(1, JOB, "overwrite", {_part(JOB, 0, 1): 5})])},
                  {"visible": [_part(JOB, 0, 1)], "committed": True, "leftovers": [_part(JOB, 0, 0)]}),
    # a manifest cut short, one without its end marker, one whose sums disagree: none counts
    "partial": ({_part(JOB, 0, 0): b"", "old.parquet": b"",
                 _manifest(1, JOB, "append", {_part(JOB, 0, 0): 5})[0]:
                     _manifest(1, JOB, "append", {_part(JOB, 0, 0): 5})[1][:-20],
                 **dict([_manifest(2, JOB, "append", {_part(JOB, 0, 0): 5}, end=None)]),
                 **dict([_manifest(3, JOB, "append", {_part(JOB, 0, 0): 5}, rows=6)])},
                {"visible": ["old.parquet"], "committed": False,
                 "leftovers": sorted([_part(JOB, 0, 0)] + [_manifest(i, JOB, "append", {})[0] for i in (1, 2, 3)])}),
    # append after adopting a deployed file, then overwrite: only the overwrite's and later appends' files
    "overwrite": ({"old.parquet": b"", _part(JOB, 0, 0): b"", _part(OTHER, 0, 0): b"", _part(OTHER, 1, 0): b"",
                   **dict([_manifest(1, JOB, "append", {_part(JOB, 0, 0): 5}, adopted=["old.parquet"]),
                           _manifest(2, OTHER, "overwrite", {_part(OTHER, 0, 0): 3}),
                           _manifest(3, "c" * 32, "append", {_part(OTHER, 1, 0): 1})])},
                  {"visible": [_part(OTHER, 0, 0), _part(OTHER, 1, 0)], "committed": True,
                   "leftovers": sorted(["old.parquet", _part(JOB, 0, 0), _manifest(1, JOB, "append", {})[0]])}),
    # a committed file that is gone: an error, not a silently smaller table
    "missing": ({**dict([_manifest(1, JOB, "append", {_part(JOB, 0, 0): 5})])}, {"error": "missing"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_java_and_python_read_a_directory_alike(write_check, tmp_path, case):
    files, expected = CASES[case]
    for name, text in files.items():
        (tmp_path / name).write_bytes(text)
    got = json.loads(write_check("state", str(tmp_path))[-1])
    assert got == expected, (case, got)
    try:
        s = manifest.dir_state(str(tmp_path))
        py = {"visible": s.visible, "committed": s.committed, "leftovers": s.leftovers}
    except OSError:
        py = {"error": "missing"}
    assert py == expected, (case, py)
    if "visible" in expected:
        assert manifest.committed_files(str(tmp_path)) == [str(Path(tmp_path) / n) for n in expected["visible"]]
