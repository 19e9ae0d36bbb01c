"""Ceph daemons listen only on their node's cluster address, never on every interface."""
from __future__ import annotations


def test_daemons_bind_only_the_cluster_address(ceph_cluster, cluster):
    for node in ceph_cluster.topology.nodes:
        address = cluster.reservation.node(node).cluster_address
        out = cluster.run(["ss", "-H", "-ltnp"], nodes=[node], stage="test listen")[node]["stdout"]
        ceph = [line.split() for line in out.splitlines() if '"ceph-' in line]
        assert ceph, f"no ceph daemon listens on {node}"
        local = {fields[3].rsplit(":", 1)[0] for fields in ceph}
        assert local == {address}, f"{node}: ceph daemons listen on {local}"
