"""Local experiments share one cluster: which one a run without --reservation reattaches to, which
it makes, which it retires (pure: registries written by hand under a temporary $SAE_HOME), and
two experiments run one after another with plain ``sae run`` leaving one cluster (real local
clusters, no stack: install/start skipped, data and run stages replaced)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from metareserve import Node, Reservation
from metareserve.errors import UsageError
from metareserve.api import registry_dir
from metareserve.providers.local import state_base
from sae.running.context import StackRecord, WriteRecord
from sae.running.stages import choose_cluster

from fixtures.sae import FAKE_STAGES

SAE = str(Path(sys.executable).with_name("sae"))


def register(name: str, nodes: int, provider: str = "local") -> Reservation:
    res = Reservation(name, provider, [Node(f"node{i}", f"10.9.0.{i}") for i in range(1, nodes + 1)])
    res.save(registry_dir() / f"{name}.yaml")
    return res


def test_choose_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("SAE_HOME", str(tmp_path))
    first = choose_cluster("local", 3, "selectivity")
    assert (first.name, first.nodes, first.shared, first.retire) == ("sae-selectivity", 3, False, [])
    register("sae-selectivity", 3)
    again = choose_cluster("local", 3, "objectsize_selectivity")   # another experiment: the same cluster
    assert (again.name, again.nodes, again.shared, again.retire) == ("sae-selectivity", 3, True, [])
    assert choose_cluster("local", 2, "batchsize").nodes == 3     # enough nodes: kept whole
    bigger = choose_cluster("local", 4, "batchsize")              # too small: a new one, the old retired
    assert (bigger.name, bigger.nodes, [r.name for r in bigger.retire]) == ("sae-batchsize", 4, ["sae-selectivity"])
    register("sae-alleviation", 5)
    StackRecord("k", 5, {}, {}).save("sae-alleviation")        # a deployed stack wins over a bare cluster
    both = choose_cluster("local", 3, "selectivity")
    assert both.name == "sae-alleviation" and [r.name for r in both.retire] == ["sae-selectivity"]
    register("other", 8)                                          # not made by sae: never touched
    register("sae-cloud", 17, provider="cloudlab")                # other providers: one per experiment
    assert "other" not in [r.name for r in choose_cluster("local", 9, "x").retire]
    assert choose_cluster("cloudlab", 17, "selectivity") == type(first)("sae-selectivity", 17)


def _fake(path: Path, name: str, nodes: int) -> Path:
    """An experiment that reserves ``nodes`` hosts and runs nothing on them."""
    path.write_text(
        "from sae import ClusterSpec, Experiment, Sweep\n" + FAKE_STAGES +
        f"experiment = Experiment(name={name!r}, cluster=ClusterSpec(nodes={nodes}),\n"
        "    sweep=Sweep(cartesian={'selectivity': [50]}), repetitions=1, warmup=0,\n"
        "    stages={s: nothing for s in ('generate', 'deploy', 'build', 'aggregate')} | {'run': fake_run})\n")
    return path


def test_runs_one_after_another_share_then_replace(tmp_path, own_reservations):
    """Two experiments with plain ``sae run``: the second reattaches to the first's cluster; a
    third needing more hosts retires it and reserves its own; at most one lives throughout."""
    env = dict(os.environ, SAE_HOME=str(tmp_path / "home"))
    tag = os.getpid() % 10000

    def run(name: str, nodes: int) -> dict:
        f = _fake(tmp_path / f"{name}.py", name, nodes)
        r = subprocess.run([SAE, "run", f, "--skip", "install", "--skip", "start", "--out", tmp_path / "out"],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        return yaml.safe_load((Path(r.stdout.strip().splitlines()[-1]) / "reservation.yaml").read_text())

    def live() -> list[str]:
        return sorted(p.stem for p in (tmp_path / "home" / "reservations").glob("*.yaml"))

    try:
        first = run(f"a{tag}", 2)
        assert first["name"] == f"sae-a{tag}" and live() == [f"sae-a{tag}"]
        second = run(f"b{tag}", 2)
        assert second["name"] == f"sae-a{tag}" and live() == [f"sae-a{tag}"]
        assert [n["host"] for n in second["nodes"]] == [n["host"] for n in first["nodes"]]
        third = run(f"c{tag}", 3)
        assert third["name"] == f"sae-c{tag}" and len(third["nodes"]) == 3 and live() == [f"sae-c{tag}"]
        assert not Path(state_base(), f"sae-a{tag}").exists()
    finally:
        subprocess.run([SAE, "clean"], capture_output=True, text=True, env=env)


def test_a_damaged_stack_record_is_named_with_what_to_do(tmp_path, monkeypatch):
    """A stack record sae did not write as it is (hand-edited, truncated) is refused in one line
    naming the file, not a TypeError; a good one reads back as written."""
    monkeypatch.setenv("SAE_HOME", str(tmp_path))
    StackRecord("k", 3, {"ceph-osd": ["node1"]}, {"store": "memstore"}).save("sae-x")
    assert StackRecord.load("sae-x") == StackRecord("k", 3, {"ceph-osd": ["node1"]}, {"store": "memstore"})
    assert StackRecord.load("sae-none") is None
    path = StackRecord.path("sae-x")
    for text in ("stack_key: k\nnodes: 3\n", "- 1\n", "stack_key: k\nnodes: three\nlayout: {}\nceph: {}\n",
                 "stack_key: [k\n"):
        path.write_text(text)
        with pytest.raises(UsageError) as e:
            StackRecord.load("sae-x")
        assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_the_write_record_adds_once_and_a_damaged_one_is_named(tmp_path, monkeypatch):
    """The build's record of where writes go grows by what is new (a second add of the same
    changes nothing); one sae did not write is refused in one line naming the file."""
    monkeypatch.setenv("SAE_HOME", str(tmp_path))
    assert WriteRecord.load("sae-x") is None
    WriteRecord.add("sae-x", ("/sae-writes",))
    WriteRecord.add("sae-x", ("/writes", "/sae-writes"), ("sae-writes",))
    before = WriteRecord.path("sae-x").stat().st_mtime_ns
    WriteRecord.add("sae-x", ("/writes",))
    assert WriteRecord.path("sae-x").stat().st_mtime_ns == before
    assert WriteRecord.load("sae-x") == WriteRecord(["/sae-writes", "/writes"], ["sae-writes"])
    path = WriteRecord.path("sae-x")
    for text in ("cephfs: [/a]\n", "cephfs: /a\nbuckets: []\n", "cephfs: [1]\nbuckets: []\n", "- 1\n", "cephfs: [\n"):
        path.write_text(text)
        with pytest.raises(UsageError) as e:
            WriteRecord.load("sae-x")
        assert str(path) in str(e.value) and "\n" not in str(e.value)
