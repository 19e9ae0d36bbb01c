"""The node-side prelude and how node programs are shipped: every node module travels as one
self-contained program with the prelude and the node-side modules it imports (pure: plain
subprocesses only)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import data_deploy.remote
import rados_deploy.remote
import spark_deploy.remote
from metareserve.remote import dispatch, node_agent, prelude

NODE_MODULES = [node_agent, rados_deploy.remote, spark_deploy.remote, data_deploy.remote]
RUN_SHIPPED = """
import json, sys
requests, replies = json.loads(sys.argv[2]), []
class Channel:
    def __iter__(self):
        return iter(requests)
    def send(self, message):
        replies.append(json.loads(message))
exec(compile(open(sys.argv[1]).read(), "shipped", "exec"), {"channel": Channel(), "__name__": "__channelexec__"})
print(json.dumps(replies))
"""


def run_shipped(module, tmp_path, *calls) -> list[dict]:
    """The replies of ``module`` shipped as a node gets it, run by a python that has no sae package."""
    program = tmp_path / "program.py"
    program.write_text(dispatch.program(module))
    requests = [dispatch.request(fn, args, {}) for fn, *args in calls]
    out = subprocess.run([sys.executable, "-I", "-S", "-c", RUN_SHIPPED, str(program), json.dumps(requests)],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", NODE_MODULES, ids=lambda m: m.__name__)
def test_every_node_module_ships_with_the_prelude_once(module):
    program = dispatch.program(module)
    compile(program, module.__name__, "exec")
    assert program.count("\ndef pid_alive(") == 1 and "\nfrom metareserve" not in program
    assert program.startswith("from __future__ import annotations\n")


def test_a_shipped_module_runs_where_no_sae_package_is_installed(tmp_path):
    pidfile = tmp_path / "x.pid"
    pidfile.write_text(f"{os.getpid()}\n")
    replies = run_shipped(node_agent, tmp_path, ("daemon_status", str(pidfile)),
                          ("write_file", str(tmp_path / "f"), "text"))
    assert replies == [{"result": {"pid": os.getpid(), "alive": True}}, {"result": True}]
    name, = run_shipped(data_deploy.remote, tmp_path, ("final_name", "a.parquet", 1, 2))
    assert name == {"result": "a-c1-l2.parquet"}


def test_node_modules_use_the_preludes_helpers_not_copies():
    for module in (node_agent, rados_deploy.remote):
        assert module.pid_alive is prelude.pid_alive and module.read_pid is prelude.read_pid


def test_stop_pids_escalates_to_sigkill_after_the_deadline():
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE)
    polite = subprocess.Popen(["sleep", "60"])
    stubborn.stdout.readline()      # SIGTERM is ignored from here on
    try:
        assert prelude.stop_pids([stubborn.pid, polite.pid], timeout=0.5) == [stubborn.pid]
        assert stubborn.wait(5) == -9 and polite.wait(5) == -15
    finally:
        for p in (stubborn, polite):
            p.kill()
            p.wait()


def test_write_file_is_atomic_born_with_its_mode_and_idempotent(tmp_path):
    path = str(tmp_path / "d" / "secret")
    assert prelude.write_file(path, "key\n", 0o600) is True
    assert oct(os.stat(path).st_mode & 0o777) == "0o600" and open(path).read() == "key\n"
    assert prelude.write_file(path, "key\n", 0o600) is False
    assert os.listdir(tmp_path / "d") == ["secret"]


def test_a_process_groups_cpu_is_counted_and_the_group_stopped_whole(tmp_path):
    """``group_cpu_seconds`` sums every process of a group (a leader and the workers it forked,
    as stress-ng runs); ``stop_group`` stops them all and removes the pid file; a second stop finds
    nothing (pure: plain subprocesses)."""
    spin = "import os, time\nfor _ in range(2):\n    if os.fork() == 0: break\nend = time.time() + 60\n" \
           "while time.time() < end: pass\n"
    leader = subprocess.Popen([sys.executable, "-c", spin], start_new_session=True)
    pidfile = tmp_path / "load.pid"
    pidfile.write_text(str(leader.pid))
    try:
        deadline = time.monotonic() + 10
        while node_agent.group_cpu_seconds(leader.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        members = node_agent._group_stats(leader.pid)
        assert len(members) == 3 and node_agent.group_cpu_seconds(leader.pid) >= 0.5, members
        assert 0 < node_agent.usable_cores() <= os.cpu_count()
        assert node_agent.stop_group(str(pidfile), timeout=5) == {"pid": leader.pid, "stopped": 3}
        leader.wait(timeout=5)
        assert not node_agent._group_stats(leader.pid) and not pidfile.exists()
        assert node_agent.stop_group(str(pidfile)) == {"pid": None, "stopped": 0}
    finally:
        if leader.poll() is None:
            os.killpg(leader.pid, 9)
            leader.wait()
