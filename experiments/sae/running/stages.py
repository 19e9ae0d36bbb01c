"""Built-in stages: each composes the deployers through their Python APIs, is idempotent and
reports per node (the second time: "no changes").

Each is the function of a stage entry (:data:`sae.planning.stages.STAGES`), taking a
:class:`~sae.running.context.StageInput` and returning a :class:`~sae.running.context.StageResult`
(its report, and the hosts or stack it made or changed, where the entry gives them); an experiment
may replace any stage with its own function of that shape.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import metareserve
from metareserve import Cluster, Layout, LeaseHeld, Reservation, StageReport, lease, load_reservation
from metareserve.errors import NothingToDo, OperationalError
from metareserve.log import node_log

from ..planning import capacities

from ..results.drawing.report import make_report
from ..results.run.directory import write_results
from . import hosts as own_hosts, reader, tenant_load, writer
from .clean import retire
from .plan_checks import check_reservation
from .context import (CONTROLLER, Hosts, Stack, StageInput, StageResult, dataset_dirs, dataset_path, merge_report,
                      sae_home, StackRecord, spark_software, sub_reservation, zones_path)
from .execute import run_points
from .mount import mount_cephfs
from ..planning.planner import PlannedPoint
from ..planning.spec import CephSpec, ceph_options


def check_hosts(res: Reservation, source: str) -> None:
    """The health gate on hosts of a hosts file (SSH, python3, root or sudo, disk, rsync):
    OperationalError naming every host that fails it and why, before anything is installed."""
    bad = [h for h in metareserve.check(res) if not h.ok]
    if bad:
        raise OperationalError(f"{source}: {len(bad)} of {len(res.nodes)} hosts fail the health gate: "
                               + "; ".join(f"{h.node}: {h.reason}" for h in bad)
                               + " (docs/requirements.md#your-own-ssh-hosts-provider-ssh)")


def reservation_name(experiment_name: str) -> str:
    """The name of a cluster sae reserves for an experiment (a local one keeps it while later
    experiments share it, :func:`choose_cluster`)."""
    return ("sae-" + experiment_name.replace("_", "-"))[:20].rstrip("-")


@dataclasses.dataclass
class ClusterChoice:
    """Which cluster a run without ``--reservation`` reserves or reattaches to (``name`` with
    ``nodes`` nodes), and the local clusters sae made that it stops and releases first
    (``retire``: too small to serve, or redundant beside the shared one)."""

    name: str
    nodes: int
    shared: bool = False
    retire: list = dataclasses.field(default_factory=list)


def choose_cluster(provider: str, need: int, experiment_name: str) -> ClusterChoice:
    """Local experiments share one cluster: the local cluster sae reserved before (registered
    under ``$SAE_HOME``) is reattached whenever it has at least ``need`` nodes, whatever
    experiment made it; capacities are not part of a cluster's identity (the reserve stage
    applies them). A new one (``sae-<experiment>``) is made only when none can serve; every
    other sae-made local cluster is then retired, so at most one lives. Other providers keep a
    cluster per experiment."""
    own = reservation_name(experiment_name)
    if provider != "local":
        return ClusterChoice(own, need)
    made = [r for r in metareserve.list_reservations() if r.provider == "local" and r.name.startswith("sae-")]
    fit = sorted((r for r in made if len(r.nodes) >= need),
                 key=lambda r: (StackRecord.load(r.name) is None, r.name != own, r.name))
    keep = fit[0] if fit else None
    retire = [r for r in made if r is not keep]
    if keep is None:
        return ClusterChoice(own, need, retire=retire)
    return ClusterChoice(keep.name, len(keep.nodes), shared=True, retire=retire)


# -- run-wide stages --------------------------------------------------------------------------
def stage_reserve(given: StageInput) -> StageResult:
    """Use the given reservation, or reserve (reattach to) the cluster :func:`choose_cluster`
    picks, retiring the sae-made local clusters it replaces first; gives its :class:`Hosts`,
    holding the run's lease."""
    session = given.session
    report = StageReport("reserve")
    need = max(p.spec.cluster.nodes for p in session.plan.points)
    if session.options.reservation:
        res = load_reservation(session.options.reservation)
        check_reservation(res, session.plan, str(session.options.reservation))
        report.add(CONTROLLER, False, f"using reservation {res.name!r} ({len(res.nodes)} nodes)")
    else:
        choice = choose_cluster(session.options.provider, need, session.experiment.name)
        retired = []
        for old in choice.retire:
            why = (f"{len(old.nodes)} nodes, this run needs {need}" if len(old.nodes) < need
                   else f"{choice.name!r} serves this run")
            try:
                retired += retire(old, why)
            except LeaseHeld as e:   # another run measures there: left alone, it ends by itself
                retired.append(f"{old.name}: kept ({why}): {e}")
        if session.options.hosts:   # your own hosts: recorded, then the health gate (docs/ssh.md)
            res = metareserve.reserve(provider="ssh",
                                      name=own_hosts.reservation_name(own_hosts.load(session.options.hosts)),
                                      hosts_file=session.options.hosts, out=session.run.reservation)
            check_hosts(res, session.options.hosts)
        else:
            res = metareserve.reserve(provider=session.options.provider, name=choice.name, nodes=choice.nodes,
                                      out=session.run.reservation)
        again = res.reattached
        shared = " (the local cluster sae's experiments share)" if choice.shared else ""
        report.add(CONTROLLER, not again or bool(retired),
                   "; ".join(retired + [f"{'reattached to' if again else 'reserved'} {res.name!r} "
                                        f"({len(res.nodes)} nodes){shared}"]))
    res.save(session.run.reservation)
    reserved = Hosts(res, Cluster(res))
    try:
        reserved.lease = lease.acquire(reserved.cluster, str(session.run.root), wait=session.options.wait_lease)
        session.run.write_yaml(session.run.root / "lease.yaml",
                               {"reservation": res.name, **dataclasses.asdict(reserved.lease)})
    except BaseException:
        reserved.close()
        raise
    report.add(CONTROLLER, report.nodes[CONTROLLER].changed, f"{report.nodes[CONTROLLER].message}; holds "
               f"its lease: no other run measures on these nodes until this one ends", log=False)
    return StageResult(report, hosts=reserved)


def stage_distribute(given: StageInput) -> StageResult:
    """Resolve and check every stack's layout; write each to ``layouts/<stack key>.yaml`` (the
    first also to ``layout.yaml``) and report a change where a node's roles differ from the last
    run on this reservation."""
    session, report = given.session, StageReport("distribute")
    layouts = {p.stack_key: given.hosts.layout_for(p) for p in session.plan.points}
    for key, layout in layouts.items():
        session.run.write_yaml(session.run.stack_layout(key), layout.to_dict())
    first = layouts[session.plan.points[0].stack_key]
    session.run.write_yaml(session.run.layout, first.to_dict())
    record = sae_home() / "layouts" / f"{given.hosts.reservation.name}.yaml"
    before = Layout.load(record) if record.exists() else Layout({})
    record.parent.mkdir(parents=True, exist_ok=True)
    first.save(record)
    for name in first.all_names():
        report.add(name, before.roles_of(name) != first.roles_of(name), ", ".join(first.roles_of(name)))
    return StageResult(report)


CALIBRATION_REUSE_S = 600.0
"""A local cluster's calibration this recent is reused by a shape stage that changed nothing (the
same capacities measured minutes ago; measuring takes ~8 s per run)."""


def stage_shape(given: StageInput) -> StageResult:
    """Put the point's host capacities in force (local provider: cores, memory, link rates;
    elsewhere nothing is emulated), then measure every host's usable cores, each side's cores
    together and the storage → compute link (or reuse the measurement of the same capacities
    when this stage changed nothing: :data:`CALIBRATION_REUSE_S`; a second tenant a killed runner
    left on the storage hosts is stopped first), and record declared beside
    measured in ``capacities/<shape key>.yaml``; a measurement more than 15 % off what was declared
    is warned about in one line."""
    report, point, run, hosts = StageReport("shape"), given.point, given.session.run, given.hosts
    res, reservation, stack = hosts.reservation_for(point), hosts.reservation, given.stack
    roles = hosts.layout_for(point).host_roles()
    names = [n.name for n in res.nodes]
    sides = capacities.sides_of(roles, names)
    local = reservation.provider == "local"
    declared = capacities.resolve(point.spec.cluster, sides, names, f"point {point.id}") if local \
        else metareserve.Capacities()
    before = reservation.capacities
    changed = metareserve.shape(reservation, declared) if local else False
    if changed and stack is not None and stack.monitoring is not None and any(
            before.of(n).cores(1) != declared.of(n).cores(1) for n in names):
        merge_report(report, stack.monitoring.start(), "monitoring (cores changed)")
    layout = hosts.layout_for(point)
    storage = layout.names("ceph-osd")
    if storage:   # a tenant a killed runner left would skew what is measured next
        for line in tenant_load.stop_left(hosts.cluster, storage):
            node_log(None, "sae shape", line, logging.WARNING)
    groups = {side: [n for n in names if sides[n] == side] for side in ("compute", "storage")}
    src, dst = (layout.names(role)[:1] for role in ("ceph-osd", "spark-worker"))
    links = [(src[0], dst[0])] if src and dst and src != dst else []
    cal = metareserve.calibrate(res, groups={k: v for k, v in groups.items() if v}, links=links,
                                cluster=hosts.cluster, reuse_within=0 if changed else CALIBRATION_REUSE_S)
    run.write_yaml(run.capacities(point.shape_key), {
        "declared": declared.to_dict(), "sides": sides, "provider": reservation.provider,
        "calibration": cal.to_dict()})
    for line in cal.warnings():
        node_log(None, "sae shape", line, logging.WARNING)
    when = f" ({time.time() - cal.at:.0f} s ago, same capacities: reused)" if cal.reused else ""
    for n in names:
        measured = cal.core(n)
        report.add(n, changed, f"{sides[n]}: {declared.of(n).describe() if local else 'not emulated'}; "
                               f"measured {measured.measured:.2f} cores{when}", log=False)
    for m in cal.links:
        report.add(CONTROLLER, changed, f"link {m.src}->{m.dst} measured {metareserve.format_rate(m.measured)}"
                                        f" (declared {metareserve.format_rate(m.declared)})", log=False)
    return StageResult(report)


def stage_aggregate(given: StageInput) -> StageResult:
    """Write results.parquet and the report plots."""
    report = StageReport("aggregate")
    write_results(given.session.run)
    plots = make_report(given.session.run.root)
    report.add(CONTROLLER, True, f"results.parquet and {len(plots)} plots")
    return StageResult(report)


def stage_stop(given: StageInput) -> StageResult:
    """Stop Spark, monitoring and Ceph of the live stack (kept running by default for reuse)."""
    report = StageReport("stop")
    for name, deployer in (given.stack.deployers("spark", "monitoring", "ceph") if given.stack else []):
        for node, outcome in deployer.stop().nodes.items():
            report.add(node, outcome.changed, f"{name}: {outcome.message}", log=False)
    return StageResult(report)


def stage_release(given: StageInput) -> StageResult:
    """Release the nodes if sae reserved them (a given --reservation is left alone), after
    closing what the steps gave (the lease given back first)."""
    report = StageReport("release")
    if given.session.options.reservation:
        report.add(CONTROLLER, False, "reservation given by the user: kept")
        return StageResult(report)
    given.close()
    try:
        report.add(CONTROLLER, True, metareserve.release(given.hosts.reservation))
    except NothingToDo as e:
        report.add(CONTROLLER, False, str(e))
    return StageResult(report)


# -- stack stages -----------------------------------------------------------------------------
@contextlib.contextmanager
def _stack(given: StageInput, point: PlannedPoint) -> Iterator[Stack]:
    """The deployer objects of the point's stack, for the stage to give: the stack given, or a
    new one where it is of another stack key (the runner closes the one it replaces; a stage that
    fails closes the one it made); Spark and Ceph made anew where the point's start key differs."""
    from monitor_deploy import Monitoring
    from rados_deploy import CephCluster
    from spark_deploy import SparkCluster

    stack, hosts = given.stack, given.hosts
    res, cluster = hosts.reservation_for(point), hosts.cluster
    made = stack is None or stack.key != point.stack_key
    if made:
        layout = hosts.layout_for(point)
        stack = Stack(ceph=CephCluster(res, layout, point.spec.ceph_options, cluster=cluster), key=point.stack_key)
        options = point.spec.monitor_options
        if options is not None:
            stack.monitoring = Monitoring(res, layout, options, cluster=cluster)
            stack.marker_monitoring = Monitoring(res, layout, options)
    try:
        if stack.start_key != point.start_key:   # what start puts in force: Spark options, Ceph's pool settings
            layout = hosts.layout_for(point)
            options = dataclasses.replace(point.spec.spark_options, system_packages=reader.system_packages())
            stack.spark = SparkCluster(res, layout, options, cluster=cluster)
            stack.ceph = CephCluster(res, layout, point.spec.ceph_options, cluster=cluster)
            stack.start_key = point.start_key
        yield stack
    except BaseException:
        if made:
            stack.close()
        raise


def stage_install(given: StageInput) -> StageResult:
    """Install Ceph, Spark and monitoring for the point's stack. A different stack deployed
    before on this reservation (recorded in ``$SAE_HOME/stacks``) is stopped and its Ceph state
    removed first (packages stay)."""
    from rados_deploy import CephCluster
    report, point, hosts = StageReport("install"), given.point, given.hosts
    old = StackRecord.load(hosts.reservation.name)
    if old and old.stack_key != point.stack_key:
        if given.stack is not None and given.stack.spark is not None:
            merge_report(report, given.stack.spark.stop(), "previous spark stop")
        res = sub_reservation(hosts.reservation, old.nodes)
        layout = Layout.from_dict({"roles": old.layout}).validate(res)
        previous = CephCluster(res, layout, ceph_options(CephSpec(**old.ceph)), cluster=hosts.cluster)
        merge_report(report, previous.uninstall(), "previous ceph uninstall")
    with _stack(given, point) as stack:
        for name, part in _side_by_side(stack.deployers("ceph", "spark", "monitoring"), "install", "sae install"):
            merge_report(report, part, name)
        stack.spark_installed.add(spark_software(stack.spark.options))
        StackRecord(point.stack_key, point.spec.cluster.nodes, hosts.layout_for(point).roles,
                    dataclasses.asdict(point.spec.ceph)).save(hosts.reservation.name)
    return StageResult(report, stack=stack)


def stage_start(given: StageInput) -> StageResult:
    """Start (or reconfigure) Ceph, Spark and monitoring for the point, each on a thread of its
    own. On Spark's, a point on Spark software (version, nodes' pyarrow) this stack has not run
    yet installs it first, and a switch restarts the Spark daemons from the point's; on Ceph's, a
    switch of the object class's Arrow installs that build of the class once Ceph runs
    (restarting the OSDs), so the two installs, each about a minute on a new machine, overlap.
    Then a switch of Spark versions or of Arrow builds the connector again."""
    with _stack(given, given.point) as stack:
        return StageResult(_start_stack(stack), stack=stack)


def _start_stack(stack: Stack) -> StageReport:
    """What :func:`stage_start` does on the point's ``stack``."""
    report = StageReport("start")

    def spark() -> list[tuple[str, StageReport]]:
        parts, software = [], spark_software(stack.spark.options)
        if software not in stack.spark_installed:
            parts.append(("spark install", stack.spark.install()))
            stack.spark_installed.add(software)
        return [*parts, ("spark", stack.spark.start())]

    def ceph() -> list[tuple[str, StageReport]]:
        # a gateway asked of a running stack (ceph.rgw): its packages first (idempotent); it stays
        # up until the stack stops
        parts = [("ceph install", stack.ceph.install())] if stack.ceph.options.rgw else []
        parts.append(("ceph", stack.ceph.start()))
        switched = reader.switch_class(stack)
        return [*parts, *([("object class", switched)] if switched is not None else [])]

    chains = {"ceph": ceph, "spark": spark, "monitoring": lambda: [("monitoring", stack.monitoring.start())]}
    for parts in _at_once({name: chains[name] for name, _ in stack.deployers("ceph", "spark", "monitoring")},
                          "sae start"):
        for name, part in parts:
            merge_report(report, part, name)
    rebuilt = reader.rebuild(stack)
    if rebuilt is not None:
        merge_report(report, rebuilt, "build")
    return report


def _side_by_side(deployers: list[tuple[str, object]], method: str, stage: str) -> list[tuple[str, StageReport]]:
    """``(name, deployer.<method>())`` for each deployer, run at once (:func:`_at_once`)."""
    return list(zip([name for name, _ in deployers],
                    _at_once({name: getattr(deployer, method) for name, deployer in deployers}, stage)))


def _at_once(calls: dict, stage: str) -> list:
    """Each named call's result, the calls run at once: deployers share no state (apt takes a
    machine-wide lock; one node's calls queue on its connection), and a local cluster's storage and
    compute sides have their own cores (Ceph's start, ~9 s, Spark's, ~13 s, and Prometheus's, ~5 s,
    used to wait for each other). The first error raises once every call has ended; so does an
    interrupt, after one line naming the calls it waits for (an install stopped half-way would
    leave the nodes' package database to mend)."""
    with ThreadPoolExecutor(max(1, len(calls))) as pool:
        futures = {name: pool.submit(call) for name, call in calls.items()}
        try:
            return [future.result() for future in futures.values()]
        except KeyboardInterrupt:
            if busy := [name for name, future in futures.items() if not future.done()]:
                node_log(None, stage, f"interrupted: waiting for {', '.join(busy)} to finish what they started on "
                                      f"the nodes, then stopping (a rerun goes on from there)", logging.WARNING)
            raise


# -- data stages ------------------------------------------------------------------------------
def stage_generate(given: StageInput) -> StageResult:
    """Generate (or ingest) the dataset and split it into single-row-group objects, on the
    controller, cached across runs."""
    import data_deploy
    report = StageReport("generate")
    d = given.point.spec.data
    source, split_dir = dataset_dirs(given.point)
    done = source / ".complete"
    if done.exists():
        report.add(CONTROLLER, False, f"dataset in cache {source}")
    else:
        if d.input:
            data_deploy.ingest(d.input, source)
        else:
            data_deploy.generate(d.rows, seed=d.seed, out=source)
        done.write_text("ok")
        report.add(CONTROLLER, True, f"{d.rows} rows generated into {source}")
    split = data_deploy.split(sorted(source.glob("*.parquet")), out=split_dir, object_size=d.object_size,
                              compression=d.stored_compression, format=d.format, page_rows=d.page_rows)
    report.add(CONTROLLER, report.nodes[CONTROLLER].changed or split.changed,
               f"{report.nodes[CONTROLLER].message}; split: {split.summary()}", log=False)
    return StageResult(report)


def stage_deploy(given: StageInput) -> StageResult:
    """Deploy the split dataset into CephFS (link/copy multipliers applied), and beside it the
    zone dimension table when a query of the dataset's points joins it."""
    import data_deploy
    point, hosts = given.point, given.hosts
    d = point.spec.data
    source, split_dir = dataset_dirs(point)
    layout = hosts.layout_for(point)
    client = layout.names("driver")[0]
    with _stack(given, point) as stack:
        common = dict(plugin="cephfs", object_size=d.object_size, node=client, layout=layout,
                      ceph_conf=stack.ceph.client_conf(client), ceph_user=stack.ceph.users.fs_write.id,
                      cluster=hosts.cluster)
        report = data_deploy.deploy(hosts.reservation_for(point), split_dir, dest=dataset_path(point),
                                    link_multiplier=d.link_multiplier, copy_multiplier=d.copy_multiplier,
                                    **common).stage
        points = [p for p in given.session.plan.points if p.data_key == point.data_key]
        if any(p.spec.workload.question.joins_zones for p in points):
            zones = data_deploy.generate_zones(source.parent / "zones").parent
            merge_report(report, data_deploy.deploy(hosts.reservation_for(point), zones,
                                                    dest=zones_path(point), **common).stage, "zones")
    return StageResult(report, stack=stack)


def stage_build(given: StageInput) -> StageResult:
    """Build the offloading connector and install the object class for the stack, mount CephFS
    where its points read or write through it (:mod:`sae.running.mount`), then what its write
    jobs' writers need (:mod:`sae.running.writer`)."""
    points = [p for p in given.session.plan.points if p.stack_key == given.point.stack_key]
    with _stack(given, given.point) as stack:
        report = reader.build(given.session, stack, points)
        mounted = mount_cephfs(stack, points)
        if mounted is not None:
            merge_report(report, mounted, "ceph-fuse mount")
        merge_report(report, writer.build(given.hosts.reservation.name, stack, points), "writers")
    return StageResult(report, stack=stack)


def run_group(given: StageInput, points: list[PlannedPoint], on_point) -> Stack:
    """Run the pending repetitions of ``points`` (same stack and Spark options) in one warm Spark
    application, calling ``on_point(outcome)`` as each finishes (see :mod:`sae.running.execute`);
    returns the stack they ran on."""
    with _stack(given, points[0]) as stack:
        run_points(dataclasses.replace(given, stack=stack), points, on_point)
    return stack


def stage_run(given: StageInput) -> StageResult:
    """Run the point's pending repetitions in one Spark application (see :mod:`sae.running.execute`)."""
    outcomes = []
    with _stack(given, given.point) as stack:
        run_points(dataclasses.replace(given, stack=stack), [given.point], outcomes.append)
        if outcomes[-1].error:
            raise OperationalError(f"point {given.point.id}: {outcomes[-1].error}")
    return StageResult(outcomes[-1].report, stack=stack)
