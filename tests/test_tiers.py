"""The tier rule and the fast tier's guard (tests/fixtures/tiers.py), on real collections and
real inner pytest sessions."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

GUARDED = """
import os, subprocess, sys, time
from pathlib import Path

import pytest

def test_netns():
    subprocess.run(["ip", "netns", "add", "tier-guard-{pid}"])

def test_sshd_in_a_shell():
    subprocess.run("/usr/sbin/sshd -t -f /nonexistent", shell=True)

def test_leaves_a_daemon(tmp_path):
    link = tmp_path / "ceph-mon"
    link.symlink_to("/bin/sleep")
    pid = os.posix_spawn(str(link), [str(link), "600"], dict(os.environ))   # not through subprocess
    Path("{pidfile}").write_text(str(pid))

def test_forks_a_daemon(tmp_path):
    link = tmp_path / "radosgw"
    link.symlink_to("/bin/sleep")
    pid = os.fork()   # not through subprocess or posix_spawn either
    if pid == 0:
        time.sleep(0.3)   # the guard looks while the child is still a copy of the test's process
        os.execv(str(link), [str(link), "600"])
    Path("{pidfile}.3").write_text(str(pid))

@pytest.fixture(scope="session")
def server(tmp_path_factory):
    link = tmp_path_factory.mktemp("bin") / "prometheus"
    link.symlink_to("/bin/sleep")
    Path("{pidfile}.2").write_text(str(os.posix_spawn(str(link), [str(link), "600"], dict(os.environ))))
    yield


def test_uses_a_session_fixture_that_starts_a_daemon(server):
    pass


def test_one_shot_programs_are_fine():
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout == "42\\n"
"""


def _pytest(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(TESTS)))


def test_cluster_tier_is_what_uses_a_cluster_fixture():
    cluster = {"tests/sae_tests/test_e2e.py::test_reserve_and_teardown_without_reservation",    # own_reservations
               "tests/sae_tests/test_e2e.py::test_tiny_selectivity_end_to_end",                 # env <- own_local_cluster
               "tests/monitor_deploy_tests/test_monitor_lifecycle.py::test_lifecycle",
               "tests/metareserve_tests/test_local_cluster.py::test_release_leaves_nothing",
               "tests/connector/test_spark.py::test_selectivities_agree_across_readers",  # answers <- spark_cluster
               "tests/rados_deploy_tests/test_ceph_cli.py::test_layout_without_osds_is_a_usage_error"}
    pure = {"tests/metareserve_tests/test_local_cluster.py::test_not_root_is_one_line_error",
            "tests/rados_deploy_tests/test_ceph_cli.py::test_bad_store_is_a_usage_error",
            "tests/connector/test_protocol.py::test_java_encodes_every_vector_alike"}
    files = sorted({TESTS.parent / t.split("::")[0] for t in cluster | pure})   # their files, collected whole
    r = _pytest("--collect-only", "-q", "-m", "cluster", *files, cwd=TESTS.parent)
    marked = {line.split("[")[0] for line in r.stdout.splitlines() if "::" in line}
    assert cluster <= marked and not pure & marked, r.stdout[-3000:]


def test_guard_fails_pure_tests_that_start_or_leave_daemons(tmp_path):
    pidfile = tmp_path / "daemon.pid"
    (tmp_path / "test_guarded.py").write_text(GUARDED.format(pid=os.getpid(), pidfile=pidfile))
    seen = []   # what /proc said of the two daemons: the failure's evidence
    try:
        r = _pytest("-p", "fixtures.tiers", "-q", "-rA", "test_guarded.py", cwd=tmp_path)
    finally:
        for f in (pidfile, *(pidfile.with_name(f"{pidfile.name}.{n}") for n in (2, 3))):
            if f.exists():
                proc = Path("/proc", f.read_text())
                if proc.exists():
                    seen.append(((proc / "comm").read_text(), (proc / "cmdline").read_bytes(),
                                 [v for v in (proc / "environ").read_bytes().split(b"\0") if b"SAE" in v]))
                os.kill(int(f.read_text()), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", f"tier-guard-{os.getpid()}"], capture_output=True)
    out = r.stdout
    assert "2 failed, 4 passed, 3 errors" in out, (out[-3000:], seen)   # the daemons' tests pass, then fail at teardown
    assert "test_netns - " in out and "creates or enters a network namespace (ip netns add" in out
    assert "starts sshd (/usr/sbin/sshd -t" in out
    assert "test_leaves_a_daemon - " in out and "left running:" in out and " ceph-mon;" in out
    assert "test_forks_a_daemon left running:" in out and " radosgw;" in out
    assert "test_uses_a_session_fixture_that_starts_a_daemon left running:" in out and " prometheus;" in out
    assert "ask for a cluster fixture" in out
