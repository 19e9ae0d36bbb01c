"""The session's stack on real networks: Prometheus, node_exporter and Spark's daemons listen
only on their node's cluster address (never on every interface), and no secret of the stack is
readable by others or written anywhere but its own private file."""
from __future__ import annotations


PROCESSES = ('"prometheus"', '"prometheus-node', '"java"')   # ss's names (cut to 15 characters)


def test_monitoring_and_spark_listen_only_on_the_cluster_address(monitoring, spark_cluster, cluster):
    seen = set()
    for node in cluster.reservation.nodes:
        out = cluster.run(["ss", "-H", "-ltnp"], nodes=[node.name], stage="test listen")[node.name]["stdout"]
        ours = [line.split() for line in out.splitlines() if any(p in line for p in PROCESSES)]
        seen |= {p for p in PROCESSES for line in out.splitlines() if p in line}
        local = {fields[3].rsplit(":", 1)[0].replace("[::ffff:", "").rstrip("]") for fields in ours}  # v4-mapped
        assert local <= {node.cluster_address}, f"{node.name}: listeners on {local}: {ours}"
    assert seen == set(PROCESSES), f"not every daemon was found listening: {seen}"


def test_no_secret_is_readable_by_others(spark_cluster, ceph_cluster, cluster):
    """Spark's RPC secret and Ceph's keyrings: mode 600 wherever they are stored."""
    node = ceph_cluster.topology.mons[0]
    roots = sorted({spark_cluster.paths(n).root for n in spark_cluster.nodes} |
                   {ceph_cluster.state_dir(n) for n in ceph_cluster.topology.nodes})
    found = cluster.run(["find", *roots, "-type", "f", "(", "-name", "*keyring*", "-o", "-name", "auth-secret",
                         "-o", "-name", "spark-defaults.conf", ")", "-perm", "/077"],
                        nodes=[node], stage="test secrets")[node]["stdout"].split()
    assert found == [], f"secrets readable by group or others: {found}"
