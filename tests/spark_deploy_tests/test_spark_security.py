"""Spark's RPC is authenticated with a generated per-deployment secret that stays private."""
from __future__ import annotations


def _conf(cluster, node: str, path: str) -> dict[str, str]:
    text = cluster.run(["cat", path], nodes=[node], stage="test read")[node]["stdout"]
    return dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_rpc_secret_is_shared_private_and_never_logged(spark_cluster, cluster):
    nodes = spark_cluster.nodes
    paths = {n: f"{spark_cluster.paths(n).conf}/spark-defaults.conf" for n in nodes}
    modes = cluster.run(["stat", "-c", "%a", *paths.values()], nodes=nodes[:1], stage="test stat")
    assert set(modes[nodes[0]]["stdout"].split()) == {"600"}
    confs = {n: _conf(cluster, n, paths[n]) for n in nodes}
    assert {c["spark.authenticate"] for c in confs.values()} == {"true"}
    secrets = {c["spark.authenticate.secret"] for c in confs.values()}
    assert len(secrets) == 1
    secret = secrets.pop()
    assert len(secret) == 64
    roots = sorted({spark_cluster.paths(n).root for n in nodes})
    found = cluster.run(["grep", "-rlF", secret, *roots, "--exclude=spark-defaults.conf", "--exclude=auth-secret"],
                        nodes=nodes[:1], stage="test grep", check=False)[nodes[0]]
    assert found["stdout"] == "", f"the secret is readable in {found['stdout']}"
