"""Release of a local reservation acts only on what the provider recorded when it made the
cluster: a reservation file whose provider_state names other paths, namespaces, interfaces or
cgroups is refused in one line, and nothing outside the provider's state root is touched."""
from __future__ import annotations

import subprocess

import pytest
import yaml
from click.testing import CliRunner

import metareserve
from metareserve.cli import main as cli
from metareserve.providers.local import state_base


def _tampered(src, dst, change):
    data = yaml.safe_load(src.read_text())
    change(data["provider_state"])
    dst.write_text(yaml.safe_dump(data, sort_keys=False))
    return dst


def test_a_tampered_reservation_deletes_nothing_outside_the_state_root(own_local_cluster, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    subprocess.run(["ip", "netns", "add", "victimns"], check=True)
    try:
        with own_local_cluster("safe", nodes=2) as (root, res):
            tampers = {
                "state_dir": lambda st: st.update(state_dir=str(victim)),
                "state_root": lambda st: st.update(state_root=str(victim)),
                "netns": lambda st: st["nodes"]["node1"].update(netns="victimns"),
                "bridge": lambda st: st.update(bridge="lo"),
                "cgroup": lambda st: st["nodes"]["node2"].update(cgroup="../victim"),
            }
            for field, change in tampers.items():
                bad = _tampered(root / "reservation.yaml", tmp_path / f"{field}.yaml", change)
                r = CliRunner().invoke(cli, ["release", "-r", str(bad)])
                lines = [line for line in r.output.splitlines() if line.strip()]
                assert r.exit_code == 2 and len(lines) == 1 and "record" in lines[0], (field, r.output)
                assert (victim / "precious").read_text() == "keep me"
                assert "victimns" in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
                assert (state_base() / res.name / "reservation.yaml").exists(), field   # cluster untouched
            assert metareserve.check(res) and all(h.ok for h in metareserve.check(res))
            renamed = yaml.safe_load((root / "reservation.yaml").read_text())
            renamed["name"] = "../x"
            (tmp_path / "name.yaml").write_text(yaml.safe_dump(renamed))
            r = CliRunner().invoke(cli, ["release", "-r", str(tmp_path / "name.yaml")])
            assert r.exit_code == 2 and "name" in r.output, r.output
    finally:
        subprocess.run(["ip", "netns", "del", "victimns"], check=False)
    assert (victim / "precious").read_text() == "keep me"


@pytest.mark.parametrize("name", ["../x", "a b", "x" * 21, "-x", "ünï"])
def test_a_bad_local_name_creates_nothing(tmp_path, monkeypatch, name):
    monkeypatch.setenv("SAE_LOCAL_STATE", str(tmp_path / "state"))
    r = CliRunner().invoke(cli, ["reserve", "--provider", "local", "--name", name, "--out", str(tmp_path / "r.yaml")])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "state").exists() and not (tmp_path / "r.yaml").exists()
