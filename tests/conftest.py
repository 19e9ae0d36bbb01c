"""Shared fixtures: one real local cluster per pytest session (unique name, always released).

Package tests live in tests/<package>/. Stack fixtures that several packages' tests share
(a running Ceph cluster, Spark cluster, monitoring, a deployed dataset) live in
tests/fixtures/<package>.py and are registered here. fixtures/tiers.py marks every test that uses
one of them (or this file's) ``cluster`` and guards the fast tier (``pytest -m "not cluster"``).
"""
from __future__ import annotations

import os

import pytest

import metareserve
from metareserve import Cluster, errors

pytest_plugins = ["fixtures.tiers", "fixtures.cluster", "fixtures.ceph", "fixtures.spark", "fixtures.monitor",
                  "fixtures.data", "fixtures.sae", "fixtures.order"]

FIGURES: list[str] = []


@pytest.fixture
def figure(request):
    """``figure(text)`` records a measured figure (a fault's recovery time, what the user saw);
    the session's figures are printed together at the end of the run."""
    return lambda text: FIGURES.append(f"{request.node.name}: {text}")


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


def _name(tag: str) -> str:
    return f"t{os.getpid() % 100000}{tag}"


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory):
    """A 3-host local cluster (node1..node3) shared by the whole session."""
    if os.geteuid() != 0:
        pytest.skip("local cluster tests need root")
    out = tmp_path_factory.mktemp("reservation") / "cluster.yaml"
    res = metareserve.reserve(provider="local", name=_name("c"), nodes=3, out=out)
    try:
        yield res
    finally:
        try:
            metareserve.release(res)
        except errors.NothingToDo:
            pass


@pytest.fixture(scope="session")
def cluster(local_cluster):
    """A remote-execution Cluster over the session's local cluster."""
    with Cluster(local_cluster) as c:
        yield c
