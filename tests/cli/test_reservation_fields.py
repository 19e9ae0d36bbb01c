"""A command hidden in any field of a reservation or hosts file runs nothing: every CLI that reads
the file refuses it in one line (exit 2) before ssh is started, and a value that passes the
checks reaches ssh only through a generated config file, never as a command-line option."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from metareserve import Node, Reservation, validate
from metareserve.cli import main as metareserve
from metareserve.errors import UsageError
from metareserve.remote.connection import ssh_argv, ssh_config_text

MARK = "/tmp/sae-injected-{}"

# field → hostile values (each would touch MARK if it reached a shell or an ssh option)
HOSTILE = {
    "user": ["-oProxyCommand=touch {m}", "root -oProxyCommand=touch{m}", "root\nProxyCommand touch {m}"],
    "host": ["-oProxyCommand=touch {m}", "h1 -oProxyCommand=touch {m}", "h1//popen", "h1;touch {m}"],
    "identity": ["/k -oProxyCommand=touch {m}", "-oProxyCommand=touch{m}", "/k\nProxyCommand touch {m}"],
    "python": ["python3; touch {m}", "python3 -c 'open(\"{m}\",\"w\")'", "$(touch {m})", "-c"],
    "address": ["10.0.0.1\nmon host = 6.6.6.6", "10.0.0.1; touch {m}"],
    "name": ["../x", "..", "a b", "-x"],
    "port": [0, 70000, True],
}
TOP = {"ssh_config": ["/c -oProxyCommand=touch {m}", "-oProxyCommand=touch{m}"],
       "name": ["../../etc", "x y", ".."]}

CASES = ([("node", f, v) for f, vs in HOSTILE.items() for v in vs]
         + [("top", f, v) for f, vs in TOP.items() for v in vs])


def _reservation(kind, field, value, mark) -> dict:
    value = value.format(m=mark) if isinstance(value, str) else value
    node = {"name": "node1", "host": "127.0.0.1", "port": 1}
    data = {"version": 1, "name": "fields", "provider": "ssh", "nodes": [node]}
    (node if kind == "node" else data)[field] = value
    return data


@pytest.mark.parametrize("kind,field,value", CASES, ids=[f"{k}.{f}={v!r}"[:50] for k, f, v in CASES])
@pytest.mark.parametrize("command", [["show"], ["check"], ["release"]])
def test_a_command_in_any_field_runs_nothing(tmp_path, monkeypatch, kind, field, value, command):
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    mark = Path(MARK.format(tmp_path.name))
    res = tmp_path / "res.yaml"
    res.write_text(yaml.safe_dump(_reservation(kind, field, value, mark)))
    r = CliRunner().invoke(metareserve, [*command, "-r", str(res)])
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and str(res) in lines[0] and field.split(".")[-1] in lines[0], r.output
    assert not mark.exists()
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("field,value", [(f, v) for f, vs in HOSTILE.items() if f != "port" for v in vs])
def test_a_hosts_file_with_a_command_reserves_nothing(tmp_path, monkeypatch, field, value):
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    mark = Path(MARK.format(tmp_path.name))
    entry = {"name": "a", "host": "127.0.0.1"}
    entry[field] = value.format(m=mark)
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": [entry]}))
    out = tmp_path / "r.yaml"
    r = CliRunner().invoke(metareserve, ["reserve", "-p", "ssh", "--name", "h", "--hosts-file", str(hosts),
                                         "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert len([line for line in r.output.splitlines() if line.strip()]) == 1, r.output
    assert not mark.exists() and not out.exists()


@pytest.mark.parametrize("alias", ["-oProxyCommand=touch /tmp/sae-injected-alias", "a b"])
def test_an_option_like_host_alias_is_refused_before_ssh_runs(tmp_path, monkeypatch, alias):
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    r = CliRunner().invoke(metareserve, ["reserve", "-p", "ssh", "--name", "h", "--host", alias,
                                         "--out", str(tmp_path / "r.yaml")])
    assert r.exit_code == 2 and "--host" in r.output, r.output
    assert not Path("/tmp/sae-injected-alias").exists()


def test_ssh_gets_only_a_config_file_whose_lines_are_the_fields(tmp_path):
    node = Node(name="n1", host="h1.example", port=2222, user="alice", identity="/keys/id", address="10.0.0.5")
    res = Reservation(name="r", provider="ssh", nodes=[node], ssh_config="/etc/sae/ssh_config")
    argv = ssh_argv(res, node)
    assert argv[0] == "-F" and len(argv) == 2
    text = Path(argv[1]).read_text()
    assert text == ssh_config_text(res, node)
    assert Path(argv[1]).stat().st_mode & 0o777 == 0o600
    assert Path(argv[1]).parent.stat().st_mode & 0o777 == 0o700
    assert text.splitlines() == ["Port 2222", "User alice", "BatchMode yes", "ConnectTimeout 10",
                                 "ServerAliveInterval 15", "ServerAliveCountMax 4", "IdentityFile /keys/id",
                                 "IdentitiesOnly yes", "Include /etc/sae/ssh_config"]


@pytest.mark.parametrize("check,good,bad", [
    (validate.name, ["node1", "a.b-c_d", "X9"], ["", "..", "a..b", ".x", "-x", "a/b", "a b", "n" * 64]),
    (validate.user, ["root", "_svc", "ubuntu-1"], ["Root", "1u", "-o", "a b", "a;b", ""]),
    (validate.host, ["h1", "10.0.0.1", "::1", "node-1.example.org", "lab_node1"],
     ["-oX=y", "h 1", "h;1", "h//popen", "", "a" * 254, "h\n"]),
    (validate.path, ["/a/b", "~/.ssh/id", "keys/id_ed25519"],
     ["/a b", "-x", "/a/../b", "/a//b", "/a\n", "$HOME/x", "/a;b", "'x'"]),
    (validate.program, ["python3", "/usr/bin/python3.11", "/opt/sae/py/1/bin/python"],
     ["python3 -c x", "-c", "python3;id", "$(id)", "a/b", "/a b"]),
    (validate.port, [1, 22, 65535], [0, 65536, -1, True, "22", 22.0]),
])
def test_one_vocabulary(check, good, bad):
    for value in good:
        assert check(value) == value
    for value in bad:
        with pytest.raises(UsageError):
            check(value)
