"""More than one OSD, for real: ``sae run experiments/scale.py`` cut to its 4-host point (2 storage
hosts with an OSD each, 2 compute hosts) on a cluster of its own. The data spreads over both OSDs,
each side's hosts are recorded, and every reader returns the same rows and checksum at every point."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sae

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))
SETTINGS = ("sweep.cartesian.cluster.nodes=[4]", "repetitions=1", "warmup=0", "drift=false",
            "spark.jit=quick", "data.rows=2000000")
"""One query per point, JVMs compiling with C1 only; 2 M rows in 4 MiB objects: about 15 objects,
so both OSDs hold some whatever inode numbers the data gets (all on one: about 2 in 2^15)."""


@pytest.fixture(scope="module")
def run(own_local_cluster):
    from fixtures.sae import retired
    with own_local_cluster("scale", nodes=4, before_release=retired) as (root, _):
        r = subprocess.run([SAE, "run", "experiments/scale.py", "--reservation", root / "reservation.yaml",
                            "--out", root / "out", *[f"--set={s}" for s in SETTINGS]],
                           capture_output=True, text=True, cwd=ROOT)
        yield r, root / "out" / "scale" / "latest"


def test_four_hosts_two_osds_hold_the_data_and_every_reader_agrees(run):
    r, latest = run
    assert r.returncode == 0, r.stderr[-3000:]
    df = sae.load_results(latest)
    deployed = re.search(r"(\d+) files written, \d+ linked, (\d+) kept", (latest / "stages.yaml").read_text())
    files = int(deployed.group(1)) + int(deployed.group(2))   # each written file is one object
    assert set(df["hosts"]) == {4} and set(df["osds"]) == {2}
    assert set(df["storage_hosts"]) == {"node1,node2"} and set(df["compute_hosts"]) == {"node3,node4"}
    for placed in df["objects_per_osd"]:
        objects = json.loads(placed)
        assert sorted(objects) == ["osd.0", "osd.1"] and all(n > 0 for n in objects.values()), objects
        assert sum(objects.values()) == files           # data files only, not the manifest
    assert (df["placement_imbalance"] >= 1).all()
    bytes_per_osd = json.loads(df["bytes_per_osd"].iloc[0])
    assert sum(bytes_per_osd.values()) > 50e6          # 2 M rows, uncompressed
    for _, grp in df.groupby("selectivity"):           # every reader, the same answer
        assert grp["checksum"].nunique() == 1 and grp["rows_out"].nunique() == 1, grp
        assert set(grp["reader"]) == {"offload", "no-offload", "vanilla"}
    placement = json.loads((latest / "placement" / f"{df['point'].iloc[0]}.json").read_text())
    assert set(placement) == {"before", "after"}
    assert sum(v["pgs"] for v in placement["before"].values()) > 0
    assert "correctness: every reader returned the same rows and checksum at every point" in r.stderr
