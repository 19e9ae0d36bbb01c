"""Debian packages for nodes, through the path every deployer uses (``Cluster.apt_install``).

Local hosts are network namespaces with no route to the package mirrors, so what they need is
installed once by the controller, which shares their package database. The package used here
(GNU hello) is purged before and after, so the install path runs for real on every machine,
including one that already has every package sae deploys.
"""
import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from metareserve import Cluster, RemoteError, node_agent

PACKAGE, BINARY = "hello", "/usr/bin/hello"


def _purge():
    subprocess.run(["flock", node_agent.APT_LOCK, "apt-get", "purge", "-y", "-q", PACKAGE],
                   capture_output=True, env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    assert node_agent.missing_packages([PACKAGE]) == [PACKAGE]


@pytest.fixture
def absent_package():
    _purge()
    yield PACKAGE
    _purge()


def _mirror_host() -> str:
    """The host of the first package source this machine's apt uses."""
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        text = f.read_text() if f.is_file() else ""
        m = re.search(r"^(?:deb\s+(?:\[[^]]*\]\s+)?|URIs:\s*)https?://([^/\s]+)", text, re.M)
        if m:
            return m.group(1)
    pytest.skip("no http(s) package source configured")


def test_local_host_installs_a_package_it_lacked(cluster, absent_package):
    done = cluster.apt_install([absent_package], nodes=["node2"], stage="test install")
    assert done["node2"] == {"installed": [absent_package], "already": []}
    ran = cluster.run([BINARY], nodes=["node2"], stage="test run")["node2"]
    assert ran["stdout"].strip() == "Hello, world!"
    again = cluster.apt_install([absent_package], nodes=["node2", "node3"], stage="test install")
    assert {n: r["installed"] for n, r in again.items()} == {"node2": [], "node3": []}


def test_namespace_hosts_cannot_reach_the_mirrors_themselves(cluster):
    """Why the controller installs for local hosts: a node cannot even resolve the mirror."""
    host = _mirror_host()
    probe = cluster.run(["getent", "hosts", host], nodes=["node1"], stage="test resolve", check=False)
    assert probe["node1"]["rc"] != 0
    assert subprocess.run(["getent", "hosts", host], capture_output=True).returncode == 0


def test_other_providers_install_on_the_node_and_name_it(local_cluster, absent_package):
    """An ssh reservation of the same hosts installs on each node: here that fails, in one line
    naming node and stage, and nothing is installed."""
    as_ssh = dataclasses.replace(local_cluster, provider="ssh")
    with Cluster(as_ssh) as c, pytest.raises(RemoteError) as e:
        c.apt_install([absent_package], nodes=["node1"], stage="test install")
    assert str(e.value).startswith("[node1 test install] ")
    assert f"apt-get install {absent_package} failed" in str(e.value)
    assert node_agent.missing_packages([absent_package]) == [absent_package]
