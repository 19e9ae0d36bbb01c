"""Credentials refused with one line saying what to do; the installed ``metareserve`` CLI end to end.

CloudLab cannot be reached from CI: the CLI runs against recorded exchanges
(``SAE_CLOUDLAB_REPLAY``), see test_exchange.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from metareserve.errors import UsageError
from metareserve.providers.cloudlab import load_credentials

from .conftest import RECORDED

METARESERVE = str(Path(sys.executable).with_name("metareserve"))


def test_good_credentials_load(credentials):
    creds = load_credentials(credentials)
    assert (creds.project, creds.user, creds.user_urn) == ("myproj", "alice", "urn:publicid:IDN+emulab.net+user+alice")
    assert creds.key == credentials.parent / "cloudlab.key" and creds.ssh_private_key is None


def test_missing_credentials_file(tmp_path):
    with pytest.raises(UsageError) as e:
        load_credentials(tmp_path / "nope.yaml")
    assert str(e.value) == (f"{tmp_path}/nope.yaml: CloudLab credentials file not found; create it as "
                            f"docs/cloudlab.md says (cert, key, project, user, ssh_public_key) and "
                            f"'chmod 600 {tmp_path}/nope.yaml'")


@pytest.mark.parametrize("target, mode", [("cloudlab.yaml", 0o644), ("cloudlab.key", 0o604), ("cloudlab.key", 0o640)])
def test_readable_by_others_is_refused_with_the_chmod_to_run(credentials, target, mode):
    path = credentials.parent / target
    path.chmod(mode)
    with pytest.raises(UsageError) as e:
        load_credentials(credentials)
    assert str(e.value).startswith(f"{path}: ") and str(e.value).endswith(f"run 'chmod 600 {path}'")


def test_missing_key_file_and_fields(credentials):
    (credentials.parent / "cloudlab.key").unlink()
    with pytest.raises(UsageError, match=r"private key .*cloudlab.key does not exist"):
        load_credentials(credentials)
    credentials.write_text("cert: cloudlab.pem\nuser: alice\n")
    with pytest.raises(UsageError, match="missing project, ssh_public_key"):
        load_credentials(credentials)


def run(*args, replay: str | None = None, cwd: Path, **env):
    full = {**os.environ, "SAE_HOME": str(cwd / "home"), **env}
    if replay:
        full["SAE_CLOUDLAB_REPLAY"] = str(RECORDED / replay)
    return subprocess.run([METARESERVE, *args], capture_output=True, text=True, cwd=cwd, env=full, timeout=300)


def test_cli_refuses_world_readable_credentials_in_one_line(credentials, tmp_path):
    credentials.chmod(0o644)
    r = run("reserve", "--provider", "cloudlab", "--nodes", "4", "--name", "paper",
            "-O", f"credentials={credentials}", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {credentials}: credentials file is readable by others "
                                             f"(mode -rw-r--r--); run 'chmod 600 {credentials}'"]


def test_cli_reserve_renew_release(credentials, tmp_path):
    out = tmp_path / "paper.yaml"
    r = run("reserve", "--provider", "cloudlab", "--nodes", "4", "--name", "paper", "--out", str(out),
            "--no-check", "-O", f"credentials={credentials}", "-O", "gate=no", "-O", "poll=0", "-O", "backoff=0",
            replay="reserve", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"reserved 'paper' (cloudlab): 4 nodes -> {out}" in r.stdout
    data = yaml.safe_load(out.read_text())
    assert [n["host"] for n in data["nodes"]] == [f"ms081{i}.utah.cloudlab.us" for i in range(1, 5)]

    r = run("renew", "--reservation", str(out), "--hours", "24", replay="renew", cwd=tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, "renewed slice 'paper' at cl-utah until 2026-03-03T08:00:00Z")
    assert yaml.safe_load(out.read_text())["provider_state"]["expires"] == "2026-03-03T08:00:00Z"

    r = run("release", "--reservation", str(out), replay="release", cwd=tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, "released slice 'paper' at cl-utah: deleted its 4 nodes")
    r = run("release", "--reservation", str(out), replay="release-gone", cwd=tmp_path)
    assert r.returncode == 0 and "nothing to release" in r.stdout
