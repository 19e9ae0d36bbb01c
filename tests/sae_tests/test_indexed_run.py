"""Real local cluster: ``sae run experiments/indexed.py`` cut small on the shared sae cluster
(tests/fixtures/sae.py): a lookup, a join and a series with one append, read by the indexed
cache, Spark's cache, vanilla and offload in one warm application (the indexed cache's jar built
on the driver node and shipped with it). Every reader returns the same rows at every point and
after the append; the in-memory readers record what they hold. The whole experiment, a lost
executor included, is the README's command."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import sae

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
CUT = ("repetitions=1, warmup=0, drift=False, cluster={'cores': 'shared'}, spark={'jit': 'quick'}, "
       "data={'rows': 200_000, 'link_multiplier': 1}, workload={'append_every': 2, 'keys': 100},")
"""The tiny profile cut to answers and states, not times (as test_e2e.py's fault runs): one
repetition per point, no warm-up, every host on every core, C1-only JVMs, 200 K trips; lookups of
100 keys; the series appends before its third query."""


@pytest.fixture(scope="module")
def run(sae_cluster) -> Path:
    root, _ = sae_cluster
    exp = root / "indexed_cut.py"
    exp.write_text(
        "import dataclasses, runpy\n"
        "from sae import Sweep\n"
        f"base = runpy.run_path({str(ROOT / 'experiments' / 'indexed.py')!r})['experiment']\n"
        f"tiny = dict(base.profiles['tiny'], {CUT}\n"
        "            sweep=Sweep(cartesian={'query': ['key-lookup', 'key-join'], 'append_rows': [0, 1000],\n"
        "                                   'reader': ['indexed', 'cache', 'vanilla', 'offload']},\n"
        "                        where=lambda p: p['query'] == 'key-join' or not p['append_rows'],\n"
        "                        repetitions={'append_rows': {1000: 3}}))\n"
        "experiment = dataclasses.replace(base, name='indexed-cut', profiles={**base.profiles, 'tiny': tiny})\n")
    r = subprocess.run([SAE, "run", str(exp), "--reservation", str(root / "reservation.yaml"), "--out",
                        str(root / "out")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return Path(r.stdout.strip().splitlines()[-1])


def test_every_reader_answers_alike_before_and_after_an_append(run):
    df = sae.load_results(run)
    assert set(df["reader"]) == {"indexed", "cache", "vanilla", "offload"} and len(df) == 4 * (1 + 1 + 3)
    for key, g in df.groupby(["query", "append_rows", "repetition"]):
        assert g[["rows_out", "checksum"]].drop_duplicates().shape[0] == 1, (key, g[["reader", "rows_out", "checksum"]])
        assert (g["rows_out"] > 0).all(), key
    series = df[df["append_rows"] == 1000]
    assert (series["appended_rows"] == series["repetition"].map({0: 0, 1: 0, 2: 1000})).all()
    assert series.loc[series["repetition"] == 2, "append_s"].gt(0).all()
    assert "every reader returned the same rows and checksum" in (run / "report" / "summary.txt").read_text()


def test_the_in_memory_readers_record_what_they_hold(run):
    df = sae.load_results(run)
    index, cache = df[df["reader"] == "indexed"], df[df["reader"] == "cache"]
    assert (index["index_bytes"] > 0).all() and (index["cached_bytes"] > index["index_bytes"]).all()
    assert (index["cached_rows"] == 200_000 + index["appended_rows"].fillna(0)).all()
    assert (index["index_build_s"] > 0).all() and index["index_build_s"].nunique() == 1   # once per application
    assert sum(r for r, _ in json.loads(index["index_partitions"].iloc[0])) == 200_000
    assert (cache["cached_bytes"] > 0).all() and cache["index_bytes"].isna().all()
    offload = df[df["reader"] == "offload"]
    assert (offload["cls_calls"] > 0).all()   # it read through the connector at every query
    jars = yaml.safe_load((run / "stages.yaml").read_text())
    assert any("indexed cache" in o["message"] for s in jars if s["stage"] == "build" for o in s["nodes"].values())
    for png in ("indexed-lookups.png", "indexed-joins.png", "indexed-append-reads.png", "indexed-appends.png"):
        assert (run / "report" / png).stat().st_size > 10_000, png
