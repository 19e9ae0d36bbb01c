"""``sae clean``: remove what sae's write jobs left, stop the stack on reserved nodes, release
them, drop the dataset cache."""
from __future__ import annotations

import shutil

import metareserve
from metareserve import Cluster, ConnectError, Layout, LeaseHeld, lease, load_reservation
from metareserve.errors import NothingToDo, SaeError

from . import tenant_load
from .context import StackRecord, WriteRecord, data_cache, sae_home


def remove_writes(res, layout: Layout, cluster: Cluster) -> list[str]:
    """Remove the CephFS directories and S3 buckets sae's write jobs write under on ``res``
    (:class:`~sae.running.context.WriteRecord`: what a crashed job left; a finished point
    removed its own), then the record; one line each. Ceph must run: where it does not, one
    line says so and the record stays for the next clean."""
    from rados_deploy import CephCluster
    record = WriteRecord.load(res.name)
    if record is None:
        return []
    ceph, lines = CephCluster(res, layout, cluster=cluster), []
    try:
        for report in [*map(ceph.remove_tree, record.cephfs), *map(ceph.remove_bucket, record.buckets)]:
            lines += [f"{res.name} {report.stage}: {o.message}" for o in report.nodes.values()]
    except SaeError as e:
        return lines + [f"{res.name} writes: not removed ({e}); start Ceph ('sae resume' or 'rados-deploy start') "
                        f"and clean again"]
    WriteRecord.path(res.name).unlink()
    return lines


def stop_stack(res, *, releasing: bool = False) -> list[str]:
    """Remove what sae's write jobs left (:func:`remove_writes`), then stop Spark, monitoring and
    Ceph on ``res`` (by the layout of the stack sae last installed there, else the default one);
    one line per component. ``releasing``: the hosts are released next, so the OSDs are killed
    (CephCluster.stop's ``discard``: a memstore OSD would write all it holds to disk first). Hosts
    that cannot be reached (after a reboot, a local cluster's sshd is gone with its daemons) run
    nothing to stop and hold no lease: one line says so, and a release still goes ahead."""
    from monitor_deploy import Monitoring
    from rados_deploy import CephCluster
    from spark_deploy import SparkCluster
    out = []
    record = StackRecord.load(res.name)
    layout = Layout.from_dict({"roles": record.layout}) if record else Layout.default(res)
    with Cluster(res) as cluster:
        try:
            held = lease.holder(cluster)
        except ConnectError as e:
            return [f"{res.name}: nothing stopped, the hosts cannot be reached: {e}"]
        if held is not None:
            raise LeaseHeld(res.name, held)
        out += remove_writes(res, layout, cluster)
        for name, cls in (("spark", SparkCluster), ("monitoring", Monitoring), ("ceph", CephCluster)):
            try:
                part = cls(res, layout, cluster=cluster)
                stopped = part.stop(discard=releasing) if name == "ceph" else part.stop()
                out.append(f"{res.name} {name}: {stopped.summary()}")
            except SaeError as e:
                out.append(f"{res.name} {name}: not stopped: {e}")
        try:
            out += [f"{res.name} {line}" for line in tenant_load.stop_left(cluster, layout.names("ceph-osd"))]
        except SaeError as e:
            out.append(f"{res.name} tenant load: not stopped: {e}")
    return out


def retire(res, why: str) -> list[str]:
    """Stop the stack on ``res`` and release it (a cluster sae reserved), forgetting what sae
    recorded about it; one line each, the release's naming ``why``. LeaseHeld (nothing touched)
    while another run holds it."""
    lines = stop_stack(res, releasing=True)
    try:
        lines.append(f"{res.name}: {metareserve.release(res)} ({why})")
    except NothingToDo as e:
        lines.append(f"{res.name}: {e}")
    StackRecord.path(res.name).unlink(missing_ok=True)
    WriteRecord.path(res.name).unlink(missing_ok=True)   # the hosts are gone, and their storage with them
    (sae_home() / "layouts" / f"{res.name}.yaml").unlink(missing_ok=True)
    return lines


def clean(*, reservation=None, release: bool = True, cache: bool = False) -> list[str]:
    """Stop the stack on ``reservation`` (default: every reservation named ``sae-*`` that sae
    made) and release it unless ``release`` is false; with ``cache`` delete the dataset cache.
    Returns what was done, one line each; NothingToDo when there was nothing."""
    targets = [load_reservation(reservation)] if reservation else \
        [r for r in metareserve.list_reservations() if r.name.startswith("sae-")]
    lines = []
    for res in targets:
        lines += retire(res, "sae clean") if release else stop_stack(res)
    if cache and data_cache().exists():
        shutil.rmtree(data_cache())
        lines.append(f"removed dataset cache {data_cache()}")
    if not lines:
        raise NothingToDo("nothing to clean: no sae reservations and no dataset cache to remove")
    return lines
