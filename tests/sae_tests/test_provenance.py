"""Provenance (versions.lock): sae's git state, the command line, and what resume compares (pure;
a temporary git repository, no nodes)."""
import subprocess

from sae.results.run import provenance


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_state_of_a_checkout_clean_and_dirty(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "one")
    state = provenance.git_state(tmp_path / "a.py")
    assert len(state["commit"]) == 40 and state["dirty"] is False and state["checkout"] == str(tmp_path.resolve())
    (tmp_path / "a.py").write_text("x = 2\n")
    assert provenance.git_state(tmp_path)["dirty"] is True
    (tmp_path / "untracked.txt").write_text("")   # results and notes beside the code do not dirty it
    git(tmp_path, "checkout", "-q", "a.py")
    assert provenance.git_state(tmp_path)["dirty"] is False


def test_git_state_outside_a_checkout_never_fails(tmp_path):
    assert provenance.git_state(tmp_path) == {"commit": provenance.NOT_GIT, "dirty": None, "checkout": None}
    assert provenance.git_state(tmp_path / "missing" / "file.py")["commit"] == provenance.NOT_GIT


def test_command_line_or_python_api():
    assert provenance.command(["/opt/checkout/.venv/bin/sae", "run", "experiments/selectivity.py", "--set",
                               "repetitions=5"]) == "sae run experiments/selectivity.py --set repetitions=5"
    assert provenance.command(["ipykernel_launcher.py", "-f", "k.json"]) == "python API"
    record = provenance.record({"sae": "0.1.0"}, experiment_file="experiment.py", argv=["sae", "run", "x.py"])
    assert record["command"] == "sae run x.py" and record["nodes"] == {} and "commit" in record["sae"]


def test_compare_names_each_change_and_only_what_both_sides_hold():
    recorded = {"sae": {"commit": "a" * 40, "dirty": False}, "controller": {"pyarrow": "26.0.1"},
                "nodes": {"node1": {"ceph": "ceph version 18.2.7", "kernel": "6.1"}}}
    assert provenance.compare(recorded, recorded) == []
    now = {"sae": {"commit": "b" * 40, "dirty": True}, "controller": {"pyarrow": "27.0.0", "new": "1"},
           "nodes": {"node1": {"ceph": "ceph version 19.2.0", "kernel": "6.1"}, "node9": {"kernel": "x"}}}
    assert provenance.compare(recorded, now) == [
        "sae commit aaaaaaaaaaaa -> bbbbbbbbbbbb", "sae dirty False -> True", "pyarrow 26.0.1 -> 27.0.0",
        "node1 ceph 'ceph version 18.2.7' -> 'ceph version 19.2.0'"]
    assert provenance.compare({"version": 1, "controller": {"pyarrow": "26.0.1"}}, {"sae": now["sae"]}) == []


def test_compare_names_a_changed_build():
    """What the build stage built (the tree may change after the run recorded its commit)."""
    recorded = {"builds": {"object_class": "8d19a0142344cbd5", "connector": "sae-connector-31.jar"}}
    assert provenance.compare(recorded, {"builds": {"object_class": "8d19a0142344cbd5"}}) == []
    assert provenance.compare(recorded, {"builds": {"object_class": "0123456789abcdef"}}) == [
        "object_class build 8d19a0142344cbd5 -> 0123456789abcdef"]
    assert provenance.record({}, experiment_file=None, argv=["sae"])["builds"] == {}


def test_spark_nodes_compare_per_spark_version():
    """A run that sweeps Spark versions holds each version's nodes apart: another version is no
    change, the same version with other software is, named with its version."""
    recorded = {"spark": {"4.3.0": {"node2": {"spark": "4.3.0", "pyarrow": "26.0.1"}}}}
    other = {"spark": {"3.5.3": {"node2": {"spark": "3.5.3", "pyarrow": "26.0.1"}}}}
    assert provenance.compare(recorded, other) == []
    changed = {"spark": {"4.3.0": {"node2": {"spark": "4.3.0", "pyarrow": "27.0.0"}}}}
    assert provenance.compare(recorded, changed) == ["node2 pyarrow '26.0.1' -> '27.0.0' (Spark 4.3.0's nodes)"]
