"""Pure: a service given a Cluster opened on more nodes than its own reservation fans out over its
own nodes only (a point on 9 hosts of a 17-host reservation once asked nodes 10-17 for their
monitoring packages), on the same connections."""
import pytest

from metareserve import Cluster, Node, Reservation, UsageError
from monitor_deploy import Monitoring


def reservation(n, name="big"):
    return Reservation(name, "ssh", [Node(f"node{i}", f"10.0.0.{i}") for i in range(1, n + 1)])


def test_a_part_of_the_reservation_selects_its_nodes_on_shared_connections():
    big, small = reservation(17), reservation(9, "big")
    cluster = Cluster(big)
    part = cluster.over(small)
    assert [n.name for n in part.select()] == [f"node{i}" for i in range(1, 10)]
    assert part._conns is cluster._conns and cluster.over(big) is cluster


def test_nodes_outside_the_reservation_are_refused_in_one_line():
    with pytest.raises(UsageError, match="nodes node18 are not in reservation 'big'"):
        Cluster(reservation(17)).over(reservation(18))


def test_a_service_fans_out_over_its_own_nodes():
    big = Cluster(reservation(17))
    mon = Monitoring(reservation(9), cluster=big)
    assert [n.name for n in mon.cluster.select()] == [f"node{i}" for i in range(1, 10)]
