"""Pure: ``sae clean`` on hosts that cannot be reached (a local cluster after a reboot: its sshd
and daemons are gone, its namespaces stay) says so in one line and goes on, so the release that
follows can still remove what the provider recorded."""
from click.testing import CliRunner

from metareserve import Node, Reservation
from sae.cli import main
from sae.running.clean import clean


def gone(tmp_path):
    # port 9 on the loopback refuses at once (no 40-s wait for packets dropped)
    res = Reservation("sae-gone", "ssh", [Node(f"node{i}", f"127.0.0.{i}", port=9, address=f"10.1.0.{i}")
                                          for i in (1, 2)])
    return res.save(tmp_path / "reservation.yaml")


def test_clean_of_unreachable_hosts_stops_nothing_and_says_why(tmp_path):
    lines = clean(reservation=gone(tmp_path), release=False)
    assert len(lines) == 1 and lines[0].startswith("sae-gone: nothing stopped, the hosts cannot be reached: ")
    assert "127.0.0.1" in lines[0]          # the lease node, named


def test_cli_clean_keep_nodes_of_unreachable_hosts_exits_0(tmp_path):
    r = CliRunner().invoke(main, ["clean", "--reservation", str(gone(tmp_path)), "--keep-nodes"])
    assert r.exit_code == 0, r.output
    assert "nothing stopped, the hosts cannot be reached" in r.output
