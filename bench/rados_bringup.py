"""Ceph bring-up time: ``CephCluster.start()`` vs the same steps typed by hand, in the same run.

Reserves a 3-host local cluster, then for memstore/bluestore × 1/3 OSDs measures
(a) rados_deploy: mon+mgr+mds on node1, OSDs on node1 (1 OSD) or node1..node3 (3 OSDs), from
``start()`` to HEALTH_OK with every PG active+clean (``details["bringup_seconds"]``);
(b) by hand: the platform notes' shell recipe (ceph-authtool, monmaptool, ceph-mon --mkfs,
``ceph osd new`` + ``ceph-osd --mkfs`` in parallel, ``ceph fs new``) on node1 with the same
ceph.conf and the same readiness check; and prints tool/hand ratios. Releases everything.

    .venv/bin/python bench/rados_bringup.py [--repeat N]
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from importlib import resources

import click

import metareserve
from metareserve import Cluster, Layout
from rados_deploy import CephCluster, CephOptions
from rados_deploy.config import Topology, mon_addrs, pg_counts, render_conf

HAND = r"""
set -e
S={state}; N={osds}; export CEPH_CONF=$S/ceph.conf
rm -rf $S; mkdir -p $S/run $S/log $S/data $S/classes $S/crash
ln -sf /usr/lib/x86_64-linux-gnu/rados-classes/*.so* $S/classes/
FSID=$(uuidgen)
sed "s/^fsid = .*/fsid = $FSID/" > $S/ceph.conf
ceph-authtool --create-keyring $S/mon.keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool --create-keyring $S/keyring --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
  --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool $S/mon.keyring --import-keyring $S/keyring >/dev/null
monmaptool --create --fsid $FSID --addv node1 '{addrs}' $S/monmap >/dev/null
ceph-mon --mkfs -i node1 --monmap $S/monmap --keyring $S/mon.keyring
ceph-mon -i node1
mkdir -p $S/data/mgr.node1
ceph auth get-or-create mgr.node1 mon 'allow profile mgr' osd 'allow *' mds 'allow *' > $S/data/mgr.node1/keyring
ceph-mgr -i node1
pids=""
for i in $(seq 1 $N); do
  ( UUID=$(uuidgen); SECRET=$(ceph-authtool --gen-print-key)
    ID=$(echo "{{\"cephx_secret\": \"$SECRET\"}}" | ceph osd new $UUID -i -)
    mkdir -p $S/data/osd.$ID; printf "[osd.$ID]\n\tkey = $SECRET\n" > $S/data/osd.$ID/keyring
    ceph-osd -i $ID --mkfs --key $SECRET --osd-uuid $UUID >/dev/null 2>&1
    ceph-osd -i $ID ) &
  pids="$pids $!"
done
wait $pids
mkdir -p $S/data/mds.node1
ceph auth get-or-create mds.node1 mon 'allow profile mds' osd 'allow rw tag cephfs *=*' mds 'allow' \
  mgr 'allow profile mds' > $S/data/mds.node1/keyring
ceph-mds -i node1
ceph osd pool create cephfs_metadata {meta} {meta} >/dev/null 2>&1
ceph osd pool create cephfs_data {data} {data} >/dev/null 2>&1
ceph fs new cephfs cephfs_metadata cephfs_data >/dev/null 2>&1
/usr/bin/python3 -c "$PROBE" ready '{{"conf": "'$S/ceph.conf'", "fs_name": "cephfs", "osds": {osds}, "wait": 600}}'
"""


def _layout(osds: int) -> Layout:
    head = ["node1"]
    return Layout({"ceph-mon": head, "ceph-mgr": head, "ceph-mds": head,
                   "ceph-osd": ["node1", "node2", "node3"][:osds]})


def tool_run(res, cluster, store: str, osds: int) -> float:
    """``CephCluster.start()`` seconds (then uninstall)."""
    ceph = CephCluster(res, _layout(osds), CephOptions(store=store, osd_size="2GiB", mgr_prometheus=False),
                       cluster=cluster)
    try:
        return ceph.start().details["bringup_seconds"]
    finally:
        ceph.uninstall()


def hand_run(res, cluster, store: str, osds: int) -> float:
    """Wall seconds of the hand recipe on node1 with all OSDs there (then kill and remove)."""
    state = res.node_dir("node1", "ceph-hand")
    options = CephOptions(store=store, osd_size="2GiB", mgr_prometheus=False)
    layout = Layout({"ceph-mon": ["node1"], "ceph-osd": ["node1"]})
    topo = dataclasses.replace(Topology.from_layout(res, layout, options), osds_per_node=osds)
    addrs = mon_addrs(res, topo, options)[0][1]
    conf = render_conf(node="node1", state=state, address=res.node("node1").cluster_address, fsid="x",
                       mon_host=addrs, topo=topo, options=options)
    data, meta = pg_counts(osds, replicas=1, pgs_per_osd=options.pgs_per_osd)
    script = HAND.format(state=state, osds=osds, addrs=addrs, data=data, meta=meta)
    probe = resources.files("rados_deploy").joinpath("probe.py").read_text()
    t0 = time.monotonic()
    try:
        cluster.run(["bash", "-c", script], nodes=["node1"], stage="hand bring-up", input=conf,
                    env={"PROBE": probe}, timeout=900)
        return time.monotonic() - t0
    finally:
        cluster.run(f"for p in {state}/run/*.pid; do kill -9 $(cat $p) 2>/dev/null || true; done; rm -rf {state}",
                    nodes=["node1"], stage="hand cleanup")


@click.command()
@click.option("--repeat", default=1, show_default=True, help="Runs per variant and method (median reported).")
def main(repeat: int) -> None:
    """Print bring-up seconds per variant, tool vs hand, and their ratio."""
    metareserve.log.setup()
    res = metareserve.reserve(provider="local", name="rbench", nodes=3, out="/tmp/rbench.yaml")
    rows = []
    try:
        with Cluster(res) as cluster:
            for store in ("memstore", "bluestore"):
                for osds in (1, 3):
                    tool, hand = [], []
                    for _ in range(repeat):
                        hand.append(hand_run(res, cluster, store, osds))
                        tool.append(tool_run(res, cluster, store, osds))
                    rows.append((store, osds, statistics.median(tool), statistics.median(hand)))
    finally:
        metareserve.release(res)
    print("| store | OSDs | rados_deploy start | by hand (one host) | tool / hand |")
    print("|---|---|---|---|---|")
    for store, osds, tool, hand in rows:
        print(f"| {store} | {osds} | {tool:.1f} s | {hand:.1f} s | {tool / hand:.2f}x |")


if __name__ == "__main__":
    main()
