"""Benchmark data_deploy's cephfs plugin against raw ``rados put`` of the same bytes, same run.

Prints: node-side deploy throughput (MiB/s) vs ``rados put`` throughput of the same split files
into the same data pool from the same node (their ratio), and hard links per second.

    .venv/bin/python bench/data_deploy_bench.py --reservation R.yaml --ceph-conf /path/on/node/ceph.conf \
        [--node node1] [--rows 2000000] [--object-size 16MiB] [--links 500] [--pool cephfs_data]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import data_deploy as dd
from metareserve import Cluster, load_reservation


def rados_put_seconds(cluster, node: str, conf: str, pool: str, files, staging: str) -> float:
    """Push ``files`` to ``staging`` on ``node`` and time ``rados put`` of each into ``pool`` there."""
    cluster.put(f"{files[0].parent}/", f"{staging}/", nodes=[node], stage="bench push")
    names = " ".join(f.name for f in files)
    script = (f"cd {staging} && s=$(date +%s%N) && for f in {names}; do rados -c {conf} -p {pool} put "
              f"bench-$f $f || exit 1; done && e=$(date +%s%N) && "
              f"for f in {names}; do rados -c {conf} -p {pool} rm bench-$f; done; echo $(( (e - s) / 1000 ))")
    out = cluster.run(script, nodes=[node], stage="bench rados put", timeout=3600)[node]
    cluster.run(["rm", "-rf", staging], nodes=[node], stage="bench cleanup")
    return int(out["stdout"].strip().splitlines()[-1]) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reservation", required=True)
    ap.add_argument("--ceph-conf", required=True)
    ap.add_argument("--node", default="node1")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--object-size", default="16MiB")
    ap.add_argument("--links", type=int, default=500)
    ap.add_argument("--pool", default="cephfs_data")
    a = ap.parse_args()
    res = load_reservation(a.reservation)
    with tempfile.TemporaryDirectory() as tmp, Cluster(res) as cluster:
        split = dd.split(dd.generate(a.rows, seed=1, out=f"{tmp}/gen"), out=f"{tmp}/split", object_size=a.object_size)
        mib = split.bytes / (1 << 20)
        common = dict(plugin="cephfs", object_size=a.object_size, node=a.node, ceph_conf=a.ceph_conf, cluster=cluster)
        dest = f"/bench/dd-{int(time.time())}"
        try:
            r = dd.deploy(res, split.out, dest=dest, **common)
            put = rados_put_seconds(cluster, a.node, a.ceph_conf, a.pool, split.files,
                                    f"{res.node_dir(a.node, 'data_deploy')}/bench")
            dd.clean(res, dest, **{k: v for k, v in common.items() if k != "object_size"})
            links = dd.deploy(res, split.out, dest=dest, link_multiplier=a.links, **common)
        finally:
            dd.clean(res, dest, **{k: v for k, v in common.items() if k != "object_size"})
    print(f"data: {len(split.files)} files, {mib:.1f} MiB, object size {a.object_size}")
    print(f"deploy (node-side write+fsync+mark): {r.node_seconds:.2f}s = {mib / r.node_seconds:.1f} MiB/s, "
          f"{r.rados_ops} RADOS ops; end to end incl. push {r.seconds:.2f}s")
    print(f"rados put (same bytes, same node):   {put:.2f}s = {mib / put:.1f} MiB/s")
    print(f"ratio deploy/rados put throughput:   {put / r.node_seconds:.2f}")
    print(f"hard links: {links.linked} in {links.link_seconds:.2f}s = {links.linked / links.link_seconds:.0f} links/s")


if __name__ == "__main__":
    main()
