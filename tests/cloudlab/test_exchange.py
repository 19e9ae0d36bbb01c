"""The CloudLab exchange — create, status polling, a failed node replaced, renew, delete.

CloudLab itself cannot be reached from CI (only package registries are), so these tests do NOT
talk to CloudLab: the provider runs for real (geni-lib builds the request RSpec, the real
policy, the real health gate, the real reservation file) against recorded responses in
tests/cloudlab/recorded/<scenario>/, replayed by ReplayTransport, which asserts every request's
endpoint, method and key arguments in order. The responses are written in the shapes of
CloudLab's ProtoGENI AM API v3 and CH API v2 (see recorded/build.py for where each comes from);
``assert_done`` proves no recorded call was skipped.
"""
from __future__ import annotations

import pytest

from metareserve import load_reservation
from metareserve.errors import NothingToDo, OperationalError, UsageError
from metareserve.providers.cloudlab import CloudLabProvider, ReplayMismatch, decide

from .conftest import FAST


def reserve(provider, credentials, **options):
    return provider.reserve(name="paper", nodes=4, credentials=str(credentials), **{**FAST, **options})


def refusal(replay, credentials, scenario: str, **options) -> str:
    """The one-line error a reservation replaying ``scenario`` fails with, every recorded call made."""
    provider, transport = replay(scenario)
    with pytest.raises(OperationalError) as e:
        reserve(provider, credentials, **options)
    transport.assert_done()
    return str(e.value)


def test_create_polls_until_ready_and_writes_the_reservation(replay, credentials, tmp_path):
    provider, transport = replay("reserve")
    res = reserve(provider, credentials, gate=False)
    transport.assert_done()
    assert [n.name for n in res.nodes] == ["node1", "node2", "node3", "node4"]
    assert [n.host for n in res.nodes] == [f"ms081{i}.utah.cloudlab.us" for i in range(1, 5)]
    assert [n.address for n in res.nodes] == [f"10.10.1.{i}" for i in range(1, 5)]
    assert {(n.user, n.port) for n in res.nodes} == {("alice", 22)}
    assert res.nodes[0].labels == {"hardware": "m510", "site": "utah", "component": "ms0811"}
    state = res.provider_state
    assert state["slice_urn"] == "urn:publicid:IDN+emulab.net:myproj+slice+paper"
    assert state["aggregate"] == "cl-utah" and state["credentials"] == str(credentials)
    assert state["slivers"]["node4"] == "urn:publicid:IDN+utah.cloudlab.us+sliver+518204"
    again = load_reservation(res.save(tmp_path / "paper.yaml"))
    assert again.nodes == res.nodes and again.provider == "cloudlab"


def test_failed_node_is_replaced_by_requesting_the_sliver_again(replay, credentials):
    provider, transport = replay("replace")
    res = reserve(provider, credentials, gate=False)
    transport.assert_done()  # Delete, a busy Allocate retried, a lost Status retried, Allocate again
    assert res.node("node3").host == "ms0842.utah.cloudlab.us"
    assert res.node("node3").address == "10.10.1.3"
    assert res.provider_state["slivers"]["node3"].endswith("+sliver+518203")


def test_nodes_bad_on_every_attempt_release_everything(replay, credentials):
    msg = refusal(replay, credentials, "giveup", gate=False, attempts=2)   # both attempts' slivers deleted
    assert msg.startswith("[paper cloudlab reserve] slice 'paper' at cl-utah")
    assert "node3: geni_failed: node ms0813 failed to boot" in msg and "after attempt 2 of 2" in msg
    assert "\n" not in msg


def test_nodes_failing_the_real_health_gate_are_released(replay, credentials):
    # The recorded hosts do not resolve from here, so the real gate (SSH) fails on every node;
    # a gate failing everywhere points at the user's side: no second attempt despite attempts=3.
    msg = refusal(replay, credentials, "gate", attempts=3)
    assert all(f"node{i}: health gate failed" in msg for i in range(1, 5)), msg
    assert "after attempt 1 of 3" in msg and "check ssh_private_key" in msg


def test_refusal_names_slice_call_and_what_to_do(replay, credentials):
    assert refusal(replay, credentials, "refused") == (
        "[paper cloudlab Allocate] slice 'paper' at cl-utah: REFUSED (7): Not enough nodes with type m510 "
        "available (need 4, have 2); the site may lack free nodes of that type: try fewer nodes, another "
        "hardware type or site")


def test_reattach_to_an_existing_slice_allocates_nothing(replay, credentials):
    provider, transport = replay("reattach")
    res = reserve(provider, credentials, gate=False)
    transport.assert_done()
    assert res.provider_state["reattached"] is True and len(res.nodes) == 4


def test_reattach_with_another_node_count_is_refused(replay, credentials):
    provider, _ = replay("reattach")
    with pytest.raises(UsageError, match="already holds 4 nodes at cl-utah; release it first or ask for --nodes 4"):
        provider.reserve(name="paper", nodes=8, credentials=str(credentials), **FAST)


def test_replay_catches_a_request_that_differs_from_the_recording(replay, credentials):
    provider, _ = replay("reserve")
    with pytest.raises(ReplayMismatch, match="argument 2 of Allocate"):
        reserve(provider, credentials, hardware="d430", gate=False)


@pytest.fixture
def reservation(replay, credentials, tmp_path):
    provider, _ = replay("reserve")
    res = reserve(provider, credentials, gate=False)
    res.save(tmp_path / "paper.yaml")
    return load_reservation(tmp_path / "paper.yaml")


def test_renew_extends_slice_then_slivers_and_updates_the_file(replay, reservation):
    provider, transport = replay("renew")
    msg = provider.extend(reservation, hours="24")
    transport.assert_done()
    assert msg == "renewed slice 'paper' at cl-utah until 2026-03-03T08:00:00Z"
    assert load_reservation(reservation.path).provider_state["expires"] == "2026-03-03T08:00:00Z"


def test_renew_refuses_bad_hours(replay, reservation):
    provider, _ = replay("renew")
    with pytest.raises(UsageError, match="hours must be positive"):
        provider.extend(reservation, hours=-1)


def test_release_deletes_the_slivers_then_has_nothing_to_do(replay, reservation):
    provider, transport = replay("release")
    assert provider.release(reservation) == "released slice 'paper' at cl-utah: deleted its 4 nodes"
    transport.assert_done()
    provider, transport = replay("release-gone")
    with pytest.raises(NothingToDo, match="no slivers at cl-utah: nothing to release"):
        provider.release(reservation)
    transport.assert_done()


def test_release_of_a_foreign_reservation_is_a_usage_error(reservation):
    reservation.provider_state = {}
    with pytest.raises(UsageError, match="provider_state lacks slice_name, site, credentials"):
        CloudLabProvider().release(reservation)


@pytest.mark.parametrize("states, timed_out, expected", [
    ({"node1": ("geni_ready", ""), "node2": ("geni_ready", "")}, False, {}),
    ({"node1": ("geni_ready", ""), "node2": ("geni_notready", "")}, False, None),
    ({"node1": ("geni_ready", ""), "node2": ("geni_notready", "")}, True, {"node2": "not ready (geni_notready)"}),
    ({"node1": ("geni_failed", "disk"), "node2": ("geni_notready", "")}, False, {"node1": "geni_failed: disk"}),
    ({"node1": ("geni_ready", "")}, True, {"node2": "not ready (missing)"}),
])
def test_policy_decision(states, timed_out, expected):
    assert decide(states, ["node1", "node2"], timed_out=timed_out) == expected


def test_failed_provision_deletes_the_allocation_and_names_the_call(replay, credentials):
    assert refusal(replay, credentials, "provision-fails") == (
        "[paper cloudlab Provision] slice 'paper' at cl-utah: ERROR (2): Could not map to resources: "
        "*** ms0813 is down")
