"""A split that fails over an existing split keeps the old one: the new split is written into a
hidden sibling directory and swapped in only when it is complete."""
from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import data_deploy
from metareserve.errors import UsageError


def _files(d):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_a_failed_split_over_a_split_keeps_the_old_one(tmp_path):
    good = data_deploy.generate(120_000, seed=1, out=tmp_path / "gen")[0]
    out = tmp_path / "split"
    (out / "notes").parent.mkdir()
    (out / "notes").write_text("mine")
    data_deploy.split([good], out=out, object_size="4MiB")
    before = _files(out)
    assert any(n.startswith("part-") for n in before) and "notes" in before
    bad = tmp_path / "z-bad.parquet"   # readable footer, a schema the dataset cannot take: fails mid-write
    pq.write_table(pa.table({"total_amount": ["not a number"] * 10}), bad)
    with pytest.raises(UsageError, match="cannot read inputs"):
        data_deploy.split([good, bad], out=out, object_size="5MiB")
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gen", "split", "z-bad.parquet"]   # no staging left
    data_deploy.split([good], out=out, object_size="5MiB")   # a good split replaces it, other files kept
    after = _files(out)
    assert after != before and after["notes"] == before["notes"]
