"""Reservation and layout files: round trip, validation, one-line errors (pure, no cluster)."""
import pytest
import yaml
from click.testing import CliRunner

from metareserve import Layout, Node, Reservation, UsageError, load_reservation
from metareserve.cli import main
from metareserve.health import evaluate


def sample() -> Reservation:
    return Reservation(name="demo", provider="ssh", nodes=[
        Node("node1", "10.0.0.1", address="10.1.0.1", labels={"hw": "m510"}),
        Node("node2", "host2.example", port=2222, user="alice", identity="/k")])


def test_round_trip(tmp_path):
    res = sample()
    path = res.save(tmp_path / "r.yaml")
    back = load_reservation(path)
    assert back.nodes == res.nodes and back.nodes[0].labels == {"hw": "m510"}
    assert back.to_dict() == res.to_dict()
    assert back.node("node2").port == 2222 and back.node("node1").cluster_address == "10.1.0.1"


@pytest.mark.parametrize("text, needle", [
    ("version: 1\nname: x\nprovider: ssh\nnodes: [\n", "malformed YAML at line"),
    ("version: 2\nname: x\nprovider: ssh\nnodes: [{name: a, host: b}]\n", "version 2 is not supported"),
    ("version: 1\nname: x\nprovider: ssh\nnodes: []\n", "'nodes' must be a non-empty list"),
    ("version: 1\nname: x\nprovider: ssh\nnodes: [{name: a}]\n", "lacks 'host'"),
    ("version: 1\nname: x\nprovider: ssh\nnodes: [{name: a, host: b, port: x}]\n", "port must be int"),
    ("version: 1\nname: x\nprovider: ssh\nnodes: [{name: a, host: b}, {name: a, host: c}]\n", "appears twice"),
    ("version: 1\nname: x\nprovider: ssh\nnodes: [{name: a, host: b, colour: red}]\n", "unknown key 'colour'"),
    ("- just a list\n", "not a reservation file"),
])
def test_bad_files_name_file_and_field(tmp_path, text, needle):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(UsageError) as e:
        load_reservation(p)
    assert str(p) in str(e.value) and needle in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["version: 1\nname: x\nprovider: ssh\nnodes: [\n",
                                  "version: 9\nname: x\nprovider: ssh\nnodes: [{name: a, host: b}]\n"])
def test_cli_bad_reservation_exits_2_with_one_line(tmp_path, text):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    r = CliRunner().invoke(main, ["check", "--reservation", str(p)])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and r.output.startswith("error: ") and str(p) in r.output


def test_cli_missing_reservation(tmp_path, monkeypatch):
    monkeypatch.delenv("SAE_RESERVATION", raising=False)
    r = CliRunner().invoke(main, ["show"])
    assert r.exit_code == 2 and "SAE_RESERVATION" in r.output
    r = CliRunner().invoke(main, ["show", "-r", str(tmp_path / "nope.yaml")])
    assert r.exit_code == 2 and "not found" in r.output


def test_env_reservation(tmp_path, monkeypatch):
    # node1 refuses SSH at once: ``show`` asks it for the lease (sample()'s 10.0.0.1 drops
    # packets, a 40-s wait for a pure test)
    res = sample()
    res.nodes[0] = Node("node1", "127.0.0.1", port=9, address="10.1.0.1")
    path = res.save(tmp_path / "r.yaml")
    monkeypatch.setenv("SAE_RESERVATION", str(path))
    r = CliRunner().invoke(main, ["show"])
    assert r.exit_code == 0 and "alice@host2.example:2222" in r.output


def test_unknown_provider():
    r = CliRunner().invoke(main, ["reserve", "--provider", "aws"])
    assert r.exit_code == 2 and "unknown provider 'aws'" in r.output and "local" in r.output


def test_layout_default_and_lookup():
    res = sample()
    lay = Layout.default(res)   # compute and storage apart: node1 stores, node2 computes
    assert lay.names("ceph-osd") == ["node1"] and lay.names("spark-master") == ["node2"]
    assert "driver" in lay.roles_of("node2") and lay.one(res, "ceph-mon").name == "node1"
    assert lay.host_roles() == {"node1": "storage", "node2": "compute"}
    nine = Layout.default(Reservation("x", "ssh", [Node(f"node{i}", "h") for i in range(1, 10)]))
    assert nine.names("ceph-osd") == [f"node{i}" for i in range(1, 5)]
    assert nine.names("driver") == ["node5"] and nine.names("spark-worker") == [f"node{i}" for i in range(6, 10)]
    # the thesis's cluster: 8 OSD hosts, 8 executor hosts and a driver host
    paper = Layout.default(Reservation("x", "ssh", [Node(f"node{i}", "h") for i in range(1, 18)]))
    assert paper.names("ceph-osd") == [f"node{i}" for i in range(1, 9)]
    assert paper.names("driver") == paper.names("spark-master") == ["node9"]
    assert paper.names("spark-worker") == [f"node{i}" for i in range(10, 18)]
    three = Layout.default(Reservation("x", "ssh", [Node(f"node{i}", "h") for i in range(1, 4)]))
    assert three.names("driver") == ["node2"] and three.names("spark-worker") == ["node2", "node3"]
    one = Layout.default(Reservation("x", "ssh", [Node("solo", "h")]))
    assert one.names("ceph-osd") == ["solo"] and one.names("spark-worker") == ["solo"]
    assert one.host_roles() == {"solo": "both"}


def test_layout_errors(tmp_path):
    res = sample()
    with pytest.raises(UsageError, match="unknown role 'spark-slave'"):
        Layout.parse(["spark-slave=node1"])
    with pytest.raises(UsageError, match="does not have"):
        Layout.parse(["ceph-osd=node9"]).validate(res)
    with pytest.raises(UsageError, match="has no ceph-mon node"):
        Layout.parse(["ceph-osd=node1"]).validate(res, require=("ceph-mon",))
    p = tmp_path / "layout.yaml"
    p.write_text(yaml.safe_dump({"version": 1, "roles": {"prometheus": "node2", "bogus": ["node1"]}}))
    with pytest.raises(UsageError, match=f"{p}: unknown role 'bogus'"):
        Layout.load(p)
    p.write_text("roles: [")
    with pytest.raises(UsageError, match="malformed YAML"):
        Layout.load(p)


def test_health_decision():
    facts = {"python": "3.11.2", "root_or_sudo": True, "free_bytes": 50 << 30, "disk_path": "/",
             "rsync": True}
    assert evaluate("n", facts).ok
    bad = evaluate("n", dict(facts, python="3.6.9", free_bytes=1 << 20, root_or_sudo=False))
    assert not bad.ok and "python 3.6.9" in bad.reason and "GiB free" in bad.reason and "sudo" in bad.reason
