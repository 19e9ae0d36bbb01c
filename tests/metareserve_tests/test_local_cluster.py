"""The local provider and remote execution on real namespace hosts with real sshd."""
import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import metareserve
from metareserve import Cluster, GroupError, node_agent
from metareserve.cli import main
from metareserve.providers.local import hierarchy


def test_check_passes_on_every_host(local_cluster):
    results = metareserve.check(local_cluster)
    assert [h.node for h in results] == ["node1", "node2", "node3"]
    for h in results:
        assert h.ok, h.reason
        assert h.facts["hostname"] == h.node and h.facts["uid"] == 0
        assert all(h.checks.values())


def test_command_and_function_on_all_hosts(local_cluster, cluster):
    hostnames = cluster.run(["hostname"], stage="probe")
    assert {n: r["stdout"].strip() for n, r in hostnames.items()} == {
        "node1": "node1", "node2": "node2", "node3": "node3"}
    addresses = cluster.call(node_agent, "addresses", stage="probe")
    for node in local_cluster.nodes:
        assert node.address in addresses[node.name]
        others = {n.address for n in local_cluster.nodes} - {node.address}
        assert not others & set(addresses[node.name])


def test_push_and_pull_checksums(cluster, tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(3 << 20))
    want = hashlib.sha256(blob.read_bytes()).hexdigest()
    remote = f"/tmp/sae-test-{os.getpid()}/blob.bin"
    cluster.put(str(blob), remote, stage="push")
    sums = cluster.call(node_agent, "sha256", remote, stage="sum")
    assert set(sums.values()) == {want}
    cluster.get(remote, str(tmp_path / "pulled"), stage="pull")
    for n in ("node1", "node2", "node3"):
        assert hashlib.sha256((tmp_path / "pulled" / n / "blob.bin").read_bytes()).hexdigest() == want
    cluster.run(["rm", "-rf", os.path.dirname(remote)], stage="cleanup")


def test_failed_command_names_node_stage_and_stderr(cluster):
    with pytest.raises(metareserve.RemoteError) as e:
        cluster.run("echo 'disk on fire' >&2; exit 3", nodes=["node2"], stage="ceph-osd start")
    assert str(e.value).startswith("[node2 ceph-osd start] ")
    assert "exited 3" in str(e.value) and "disk on fire" in str(e.value)
    assert e.value.node == "node2" and e.value.exit_code_remote == 3


def test_killed_sshd_names_host_others_still_answer(local_cluster):
    pidfile = Path(local_cluster.node_dir("node2", "sshd")) / "sshd.pid"
    pid = int(pidfile.read_text())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while node_agent.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        with Cluster(local_cluster) as c:
            with pytest.raises(GroupError) as e:
                c.run(["hostname"], stage="after kill")
        err = e.value
        assert set(err.failed) == {"node2"} and "[node2 after kill]" in str(err)
        assert "Connection refused" in str(err) and "sshd" in str(err)
        assert {n: r["stdout"].strip() for n, r in err.succeeded.items()} == {"node1": "node1", "node3": "node3"}
    finally:
        # reserving the same name reattaches and restores the missing sshd
        again = metareserve.reserve(provider="local", name=local_cluster.name, nodes=3,
                                    out=local_cluster.path)
    assert again.reattached
    assert all(h.ok for h in metareserve.check(again))


def test_reattach_changes_nothing_and_size_mismatch_is_refused(local_cluster, caplog):
    caplog.set_level("INFO")
    metareserve.reserve(provider="local", name=local_cluster.name, nodes=3, out=local_cluster.path)
    assert "nothing changed" in caplog.text
    with pytest.raises(metareserve.UsageError, match="already exists with 3 nodes"):
        metareserve.reserve(provider="local", name=local_cluster.name, nodes=2, out="/tmp/x.yaml")


def test_release_leaves_nothing(tmp_path, own_reservations):
    out = tmp_path / "r.yaml"
    r = CliRunner().invoke(main, ["reserve", "--nodes", "2", "--name", f"rel{os.getpid() % 10000}",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = metareserve.load_reservation(out)
    st = res.provider_state
    # a daemon started on a node must die with the release
    with Cluster(res) as c:
        c.call(node_agent, "start_daemon", ["sleep", "600"], f"{res.node_dir('node1', 'x')}/s.pid",
               f"{res.node_dir('node1', 'x')}/s.log", nodes=["node1"], stage="daemon")
    sleeper = int(Path(res.node_dir("node1", "x"), "s.pid").read_text())
    assert node_agent.pid_alive(sleeper)
    r = CliRunner().invoke(main, ["release", "--reservation", str(out)])
    assert r.exit_code == 0 and "released" in r.output
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    for info in st["nodes"].values():
        assert info["netns"] not in netns and f" {info['veth']}@" not in links
        assert not any(d.exists() for d in hierarchy(st).dirs(info["cgroup"]))
    assert f" {st['bridge']}:" not in links
    assert not Path(st["state_dir"]).exists()
    assert not node_agent.pid_alive(sleeper)
    assert subprocess.run(["pgrep", "-f", st["state_dir"]], capture_output=True).returncode == 1
    r = CliRunner().invoke(main, ["release", "--reservation", str(out)])
    assert r.exit_code == 0 and "already released" in r.output


def test_ssh_provider_on_real_hosts(local_cluster, tmp_path):
    """The ssh provider with aliases from an ssh_config, against the local hosts' real sshd."""
    key = local_cluster.nodes[0].identity
    cfg = tmp_path / "ssh_config"
    cfg.write_text("".join(
        f"Host lab-{n.name}\n  HostName {n.address}\n  User root\n  IdentityFile {key}\n"
        f"  StrictHostKeyChecking accept-new\n  UserKnownHostsFile {tmp_path}/known_hosts\n"
        for n in local_cluster.nodes))
    res = metareserve.reserve(provider="ssh", name="lab", hosts=["lab-node1", "lab-node3"],
                              ssh_config=str(cfg), out=tmp_path / "lab.yaml")
    assert [n.address for n in res.nodes] == [local_cluster.nodes[0].address, local_cluster.nodes[2].address]
    health = metareserve.check(metareserve.load_reservation(tmp_path / "lab.yaml"))
    assert [h.facts["hostname"] for h in health] == ["node1", "node3"] and all(h.ok for h in health)
    assert "nothing to release" in metareserve.release(res)
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": [{"name": "a", "host": "lab-node2"}]}))
    res2 = metareserve.reserve(provider="ssh", name="lab2", hosts_file=str(hosts), ssh_config=str(cfg),
                               out=tmp_path / "lab2.yaml")
    assert metareserve.check(res2)[0].facts["hostname"] == "node2"
    assert "nothing to release" in metareserve.release(res2)   # no registry record stays in $SAE_HOME


def test_not_root_is_one_line_error(tmp_path):
    tmp_path.chmod(0o777)
    env = dict(os.environ, SAE_HOME=str(tmp_path))
    exe = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "metareserve"
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(exe),
                        "reserve", "--nodes", "1", "--name", "nobody", "--out", str(tmp_path / "x.yaml")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and "needs root" in r.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_node_process_killed_mid_call_says_connection_lost(cluster):
    with pytest.raises(metareserve.ConnectError) as e:
        cluster.run("kill -9 $PPID; sleep 5", nodes=["node3"], stage="doomed")
    assert str(e.value).startswith("[node3 doomed] connection lost during run")
    assert cluster.run(["hostname"], nodes=["node3"], stage="after")["node3"]["stdout"].strip() == "node3"


def test_node_process_gone_between_calls_reconnects(cluster):
    """A long-lived Cluster (a test session's, a notebook's) whose node-side process died after a
    call reconnects on the next call instead of failing it."""
    for _ in range(2):
        cluster.run("p=$PPID; (sleep 1; kill -9 $p) >/dev/null 2>&1 </dev/null &", nodes=["node3"], stage="later")
        time.sleep(3)
        assert cluster.run(["hostname"], nodes=["node3"], stage="after")["node3"]["stdout"].strip() == "node3"


def test_streamed_lines_carry_node_and_stage(cluster, caplog):
    caplog.set_level("INFO", logger="sae")
    r = cluster.run("echo first; echo second >&2", nodes=["node1", "node2"], stage="chatty", stream=True)
    assert r["node1"]["stdout"] == "first\n"
    for node in ("node1", "node2"):
        assert f"[{node} chatty] first" in caplog.text and f"[{node} chatty] second" in caplog.text


def test_concurrent_reserves_get_distinct_subnets(tmp_path, own_reservations):
    from concurrent.futures import ThreadPoolExecutor
    names = [f"cc{os.getpid() % 1000}{i}" for i in range(3)]
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(metareserve.reserve, provider="local", name=n, nodes=2, out=tmp_path / f"{n}.yaml")
                   for n in names]
        results = [f.exception() or f.result() for f in futures]
    try:
        assert not [r for r in results if isinstance(r, BaseException)], results
        assert len({r.provider_state["subnet"] for r in results}) == 3
        assert all(h.ok for r in results for h in metareserve.check(r))
    finally:
        for r in results:
            if not isinstance(r, BaseException):
                metareserve.release(r)


def test_a_reserve_that_fails_mid_bring_up_leaves_nothing(tmp_path, own_reservations, monkeypatch):
    """sshd of node2 fails to start (injected): the new cluster is released again, so no
    namespace, interface, cgroup, state directory or reservation file is left."""
    from metareserve.errors import OperationalError
    from metareserve.providers.local import LocalProvider, state_base
    real = LocalProvider._start_sshd

    def failing(self, res, node, info, ndir):
        if node.name == "node2":
            raise OperationalError("[node2 sshd] injected failure")
        return real(self, res, node, info, ndir)
    monkeypatch.setattr(LocalProvider, "_start_sshd", failing)
    name = f"mid{os.getpid() % 10000}"
    with pytest.raises(OperationalError, match="injected"):
        metareserve.reserve(provider="local", name=name, nodes=2, out=tmp_path / "r.yaml")
    assert not (state_base() / name).exists() and not (tmp_path / "r.yaml").exists()
    assert f"sae-{name}-" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(d.exists() for n in ("node1", "node2") for d in hierarchy({}).dirs(f"sae-{name}-{n}"))
    assert subprocess.run(["pgrep", "-f", str(state_base() / name)], capture_output=True).returncode == 1
