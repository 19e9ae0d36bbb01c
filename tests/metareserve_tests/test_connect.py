"""Connecting to a node (metareserve.remote.connection, pure): a failure with a lasting cause
(nothing listens on the port) is named after one attempt, without the retries' waits; one that
may pass (the probe gets through) is tried again after 0.5 and 1 s, and the connection made then
answers calls. The retried connection is execnet's local gateway standing in for SSH."""
from __future__ import annotations

import time
from types import SimpleNamespace

import execnet
import pytest

from metareserve import Node, Reservation
from metareserve.errors import ConnectError
from metareserve.remote import connection, node_agent


def refused() -> Reservation:
    # port 9 on the loopback refuses at once
    return Reservation("gone", "ssh", [Node("node1", "127.0.0.1", port=9, address="10.1.0.1")])


@pytest.fixture
def attempts(monkeypatch):
    """``tried`` (the gateway specs tried), ``slept`` (seconds slept), ``fail``: how many attempts
    raise as execnet does when ssh exits 255 (all, unless set); later ones open a local gateway."""
    seen = SimpleNamespace(tried=[], slept=[], fail=99)
    real = execnet.makegateway

    def makegateway(spec):
        seen.tried.append(spec)
        if len(seen.tried) <= seen.fail:
            raise execnet.HostNotFound("127.0.0.1")
        return real("popen")
    monkeypatch.setattr(execnet, "makegateway", makegateway)
    monkeypatch.setattr(connection, "time", Clock(seen.slept))
    return seen


class Clock:
    """The time module for connection.py alone, its sleeps recorded and not slept."""

    def __init__(self, slept: list):
        self.sleep = slept.append

    def __getattr__(self, name):
        return getattr(time, name)


def test_a_refused_connection_is_named_after_one_attempt(attempts):
    res = refused()
    with pytest.raises(ConnectError) as e:
        connection.NodeConnection(res, res.nodes[0]).call(node_agent, "port_open", ("127.0.0.1", 9), stage="check",
                                                          timeout=10)
    assert str(e.value).startswith("[node1 check] cannot reach root@127.0.0.1:9 over SSH")
    assert "is sshd running on the node?" in str(e.value) and "\n" not in str(e.value)
    assert (len(attempts.tried), attempts.slept) == (1, [])


def test_a_failure_the_probe_gets_past_is_tried_again_and_the_connection_answers(attempts, monkeypatch):
    attempts.fail = 2
    monkeypatch.setattr(connection, "probe", lambda reservation, node: (0, ""))
    res = refused()
    conn = connection.NodeConnection(res, res.nodes[0])
    try:
        assert conn.call(node_agent, "port_open", ("127.0.0.1", 9), stage="check", timeout=30) is False
    finally:
        conn.close()
    assert (len(attempts.tried), attempts.slept) == (3, [0.5, 1.0])


@pytest.mark.parametrize("probed, lasts", [
    ((255, "ssh: connect to host 10.0.0.1 port 22: Connection refused"), True),
    ((255, "ssh: Could not resolve hostname nowhere: Name or service not known"), True),
    ((255, "root@10.0.0.1: Permission denied (publickey)."), True),
    ((127, "bash: python3: command not found"), True),
    ((255, "connection timed out"), False),
    ((255, "ssh: connect to host 10.0.0.1 port 22: Operation timed out"), False),
    ((255, "kex_exchange_identification: read: Connection reset by peer"), False),
    ((0, ""), False)])
def test_what_lasts(probed, lasts):
    assert connection.lasting(probed) is lasts
