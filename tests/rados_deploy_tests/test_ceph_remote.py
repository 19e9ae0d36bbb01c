"""Node-side functions, called locally as a node would run them."""
import os

from metareserve import call_local
from rados_deploy import remote


def test_prepare_is_idempotent(tmp_path):
    state = str(tmp_path / "ceph")
    files = {"ceph.conf": ["[global]\n", 0o644], "data/mgr.a/keyring": ["[mgr.a]\n", 0o600]}
    assert sorted(call_local(remote, "prepare", state, files, ["mgr.a"])) == ["ceph.conf", "data/mgr.a/keyring"]
    assert call_local(remote, "prepare", state, files, ["mgr.a"]) == []
    assert oct(os.stat(f"{state}/data/mgr.a/keyring").st_mode & 0o777) == "0o600"
    for sub in ("run", "log", "data", "classes"):
        assert os.path.isdir(f"{state}/{sub}")


def test_facts_of_empty_state(tmp_path):
    f = call_local(remote, "facts", str(tmp_path / "none"), ["osd.0"], ["sh", "no-such-binary-sae"])
    assert f["fsid"] is None and not f["exists"] and f["osd_ids"] == []
    assert f["daemons"] == {"osd.0": {"pid": None, "alive": False}}
    assert f["missing"] == ["no-such-binary-sae"]


def test_facts_reads_marker_pids_and_osd_ids(tmp_path):
    state = tmp_path / "ceph"
    (state / "run").mkdir(parents=True)
    (state / "data" / "osd.4").mkdir(parents=True)
    (state / "data" / "osd.4" / "whoami").write_text("4\n")
    (state / "bootstrapped").write_text("abc")
    (state / "run" / "ceph-mon.a.pid").write_text(str(os.getpid()))
    f = call_local(remote, "facts", str(state), ["mon.a"])
    assert f["fsid"] == "abc" and f["osd_ids"] == [4]
    assert f["daemons"]["mon.a"] == {"pid": os.getpid(), "alive": True}


def test_install_class_places_new_inodes_once(tmp_path):
    build, classdir = tmp_path / "build", tmp_path / "classes"
    build.mkdir()
    classdir.mkdir()
    (build / "libcls_x.so").write_bytes(b"v1")
    assert call_local(remote, "install_class", str(build), str(classdir), ["libcls_x.so"], {}) == \
        {"changed": ["libcls_x.so"], "stale": []}
    assert call_local(remote, "install_class", str(build), str(classdir), ["libcls_x.so"], {})["changed"] == []
    old = os.stat(classdir / "libcls_x.so").st_ino
    (build / "libcls_x.so").unlink()
    (build / "libcls_x.so").write_bytes(b"v2")
    assert call_local(remote, "install_class", str(build), str(classdir), ["libcls_x.so"], {})["changed"]
    assert os.stat(classdir / "libcls_x.so").st_ino != old
    assert (classdir / "libcls_x.so").read_bytes() == b"v2"


def test_log_tail(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("a\n\nb\nc\n")
    assert call_local(remote, "log_tail", str(log), 2) == ["b", "c"]
    assert call_local(remote, "log_tail", str(tmp_path / "missing")) == []


def test_the_class_compiles_in_as_many_units_as_the_host_has_cpus(tmp_path):
    """Fewer CPUs than sources: each source is included by exactly one batch file, batches
    balanced by size; enough CPUs: the sources themselves."""
    sources = {"a.cc": "x" * 900, "b.cc": "x" * 500, "c.cc": "x" * 400, "d.cc": "x" * 100, "e.h": "x"}
    names = sorted(n for n in sources if n.endswith(".cc"))
    assert remote._batch_units(str(tmp_path), names, sources, 4) == [str(tmp_path / n) for n in names]
    units = remote._batch_units(str(tmp_path), names, sources, 2)
    included = [[line.split('"')[1] for line in open(u).read().splitlines()] for u in units]
    assert all(u.endswith(".cpp") for u in units)
    assert sorted(n for batch in included for n in batch) == names
    assert sorted(sorted(batch) for batch in included) == [["a.cc", "d.cc"], ["b.cc", "c.cc"]]
    assert len(remote._batch_units(str(tmp_path), names, sources, 1)) == 1


def test_a_probes_arguments_go_on_its_stdin_never_its_command_line():
    """A probe's keyword arguments carry keys (an OSD's cephx secret when it is created): they reach
    the node's python on stdin, and its command line names only the query."""
    script = "import json, sys\nprint(json.dumps({'argv': sys.argv[1:], 'kwargs': json.loads(sys.stdin.read())}))"
    secret = "AQD8EBNrAAAAABAAia/f1N0sIEk6Usga3bEvyg=="
    assert remote.probe(script, "quorum", {"commands": [{"_inbuf": secret}]}) == \
        {"argv": ["quorum"], "kwargs": {"commands": [{"_inbuf": secret}]}}
