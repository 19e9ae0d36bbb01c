"""What every stage and the run loop share: what a stage step takes (:class:`StageInput`: the
:class:`Session`, the point, the :class:`Hosts` and the live :class:`Stack`) and gives
(:class:`StageResult`), report merging, and where the controller keeps sae's state and the
datasets."""
from __future__ import annotations

import dataclasses
import itertools
import os
import typing
from pathlib import Path

import yaml

from metareserve import Cluster, Layout, LeaseHolder, Reservation, StageReport, lease
from metareserve.errors import SaeError, UsageError
from metareserve.model import read_yaml
from monitor_deploy import Monitoring
from rados_deploy import CephCluster
from spark_deploy import SparkCluster, SparkOptions

from ..connector import SubmitSpec
from .console import Quiet, RunConsole
from .shared_app import SharedApplication
from ..results.run.ledger import RunLedger
from ..planning.planner import PlannedPoint, Plan, digest
from ..planning.writers import WriteTarget
from ..results.run.directory import RunDir
from ..planning.spec import Experiment
from ..planning.stages import OUTPUTS, STAGES, Stage

CONTROLLER = "controller"


MAX_WAIT_LEASE = 7 * 86400.0
"""The longest wait for another run's lease a run takes (seconds)."""


@dataclasses.dataclass
class RunOptions:
    """How to run: provider (when sae reserves; default ``local``), an existing reservation file,
    teardown at end, stages to skip (e.g. ``install`` on nodes known to be ready), ``warm``:
    points that share a stack and Spark options run in one Spark application (False: one
    application per point, the reference bench/sae_overhead.py measures against), and ``hosts``:
    a hosts file of your own SSH hosts (docs/ssh.md; implies the ssh provider, excludes
    ``reservation``; kept as an absolute path, so ``sae resume`` finds it from anywhere)."""

    provider: str | None = None
    reservation: str | None = None
    teardown: bool = False
    skip: tuple = ()
    warm: bool = True
    wait_lease: float = 0.0
    hosts: str | None = None

    def __post_init__(self):
        if self.hosts is not None:
            if self.reservation:
                raise UsageError(f"--hosts {self.hosts} and --reservation {self.reservation}: give one (--hosts "
                                 f"records your SSH hosts as a reservation; --reservation uses one already made)")
            if self.provider not in (None, "ssh"):
                raise UsageError(f"--hosts {self.hosts} with --provider {self.provider}: --hosts names your own SSH "
                                 f"hosts, which the ssh provider reserves; drop --provider")
            self.hosts, self.provider = os.path.abspath(self.hosts), "ssh"
        elif self.provider is None:
            self.provider = "local"
        elif self.provider == "ssh" and not self.reservation:
            raise UsageError("--provider ssh needs your hosts: --hosts FILE (docs/ssh.md), or --reservation FILE "
                             "written by 'metareserve reserve --provider ssh'")
        self.skip = tuple(self.skip)
        if not 0 <= self.wait_lease <= MAX_WAIT_LEASE:
            raise UsageError(f"--wait-lease {self.wait_lease}: give seconds from 0 to {MAX_WAIT_LEASE:.0f} (a week)")
        for stage in self.skip:
            if stage not in STAGES or not STAGES[stage].skippable:
                raise UsageError(f"--skip {stage!r}: not a skippable stage (skippable: "
                                 f"{', '.join(s.name for s in STAGES.values() if s.skippable)})")


def spark_software(options: SparkOptions) -> str:
    """The Spark nodes' software as one label: the Spark version, and the nodes' pyarrow where it
    is not the default (``4.3.0``, ``4.3.0 with pyarrow 25.0.1``); what versions.lock keys Spark's
    nodes by."""
    if options.pyarrow == SparkOptions.pyarrow:
        return options.version
    return f"{options.version} with pyarrow {options.pyarrow}"


@dataclasses.dataclass
class Stack:
    """The live deployer objects of one stack (nodes, layout, Ceph, monitoring), built once per
    stack ``key``; ``spark`` and ``ceph`` are rebuilt when what the start stage puts in force
    (``start_key``: Spark options, Ceph's pool settings) changes. The
    build stage adds the connector's ``build`` (for the Spark of ``build_spark`` and the object
    class's Arrow of ``build_arrow``; the start stage builds again when a point switches either)
    and, for readers that read through one, the CephFS ``mount``; for write jobs, ``writes``:
    each writer's :class:`~sae.running.writer.Writes` (what the application needs to write through
    it) and, for the baselines, ``write_target`` (where the stack lets Spark write).
    ``spark_installed``: the Spark software (:func:`spark_software`) installed on this stack."""

    ceph: CephCluster
    key: str | None = None
    monitoring: Monitoring | None = None
    marker_monitoring: Monitoring | None = None   # own connections: it publishes while spark-submit streams
    spark: SparkCluster | None = None
    start_key: str | None = None
    build: SubmitSpec | None = None
    build_spark: str | None = None
    build_arrow: str | None = None
    mount: str | None = None
    writes: dict = dataclasses.field(default_factory=dict)
    write_target: WriteTarget | None = None
    spark_installed: set = dataclasses.field(default_factory=set)

    @property
    def marker(self):
        """The run marker (None without monitoring)."""
        return self.marker_monitoring.marker if self.marker_monitoring else None

    def deployers(self, *names: str) -> list[tuple[str, object]]:
        """(name, deployer) for each of ``names`` (ceph, spark, monitoring) this stack has."""
        return [(n, getattr(self, n)) for n in names if getattr(self, n) is not None]

    def close(self) -> None:
        """Close the connections the stack's run marker opened for itself."""
        if self.marker_monitoring is not None:
            self.marker_monitoring.close()


@dataclasses.dataclass(frozen=True)
class Session:
    """What a session of a run starts with, the same for every step: the experiment, plan, run
    directory, ledger and options; ``console``, what the person at the console reads
    (:mod:`sae.running.console`); ``shared``, the warm Spark application of a catalogue
    (:mod:`sae.running.shared_app`; None: the run's own); ``applications``, the numbers of the
    Spark applications it submits (they name their raw files)."""

    experiment: Experiment
    plan: Plan
    run: RunDir
    ledger: RunLedger
    options: RunOptions
    console: RunConsole | Quiet = dataclasses.field(default_factory=Quiet)
    shared: SharedApplication | None = None
    applications: typing.Iterator[int] = dataclasses.field(default_factory=lambda: itertools.count(1))


@dataclasses.dataclass
class Hosts:
    """What the reserve stage gives: the run's ``reservation``, its remote-execution ``cluster``
    (connections opened as needed, reused) and this run's exclusive hold on it (``lease``; None
    once given back)."""

    reservation: Reservation
    cluster: Cluster
    lease: LeaseHolder | None = None

    def reservation_for(self, point: PlannedPoint) -> Reservation:
        """The reservation cut to the point's node count."""
        return sub_reservation(self.reservation, point.spec.cluster.nodes)

    def layout_for(self, point: PlannedPoint) -> Layout:
        """The point's layout (explicit roles or the default one), validated."""
        res = self.reservation_for(point)
        roles = point.spec.cluster.layout
        layout = Layout.from_dict({"roles": roles}) if roles else Layout.default(res)
        return layout.validate(res)

    def close(self) -> None:
        """Give the lease back and close the remote-execution connections."""
        if self.lease is not None:
            try:
                lease.give(self.cluster, self.lease)
            except SaeError:   # connections gone (Ctrl-C reaches ssh too): stale once we exit
                pass
            self.lease = None
        self.cluster.close()


@dataclasses.dataclass(frozen=True)
class StageResult:
    """What a stage step gives: its ``report`` (None: nothing to report) and what it made or
    changed for the steps after it, each where its stage's entry gives it
    (:attr:`~sae.planning.stages.Stage.gives`): the ``hosts`` (the reserve stage) and the live
    ``stack``."""

    report: StageReport | None = None
    hosts: Hosts | None = None
    stack: Stack | None = None


@dataclasses.dataclass(frozen=True)
class StageInput:
    """What a stage step takes: the ``session``, the ``point`` (None for a run-wide stage) and
    what earlier steps gave, each where its stage's entry takes it
    (:attr:`~sae.planning.stages.Stage.takes`; None before a step gave it): the ``hosts`` and the
    live ``stack``. The runner keeps one between steps (:meth:`for_step`, :meth:`fold`)."""

    session: Session
    point: PlannedPoint | None = None
    hosts: Hosts | None = None
    stack: Stack | None = None

    def for_step(self, stage: Stage, point: PlannedPoint | None) -> "StageInput":
        """The input of a step of ``stage`` at ``point``: what the stage's entry takes of this."""
        return StageInput(self.session, point, **{name: getattr(self, name) for name in stage.takes})

    def fold(self, stage: Stage, result: StageResult) -> "StageInput":
        """This with what a step of ``stage`` gave (what it replaces is closed); TypeError for a
        result that is not a :class:`StageResult` or gives what the entry does not."""
        if not isinstance(result, StageResult):
            raise TypeError(f"the {stage.name} stage's function returned {type(result).__name__}, "
                            f"not a StageResult")
        given = {name: getattr(result, name) for name in OUTPUTS if getattr(result, name) is not None}
        if extra := sorted(set(given) - set(stage.gives)):
            raise TypeError(f"the {stage.name} stage's function gave {', '.join(extra)}; its entry gives "
                            f"{', '.join(stage.gives) or 'nothing'}")
        for name, value in given.items():
            if (old := getattr(self, name)) is not None and old is not value:
                old.close()
        return dataclasses.replace(self, **given)

    def close(self) -> None:
        """Close what the steps gave: the stack's own connections, then the hosts' (lease too)."""
        if self.stack is not None:
            self.stack.close()
        if self.hosts is not None:
            self.hosts.close()


def sub_reservation(res: Reservation, nodes: int) -> Reservation:
    """``res`` limited to its first ``nodes`` nodes (same name, so per-node state is shared)."""
    return dataclasses.replace(res, nodes=list(res.nodes[:nodes]))


def merge_report(report: StageReport, part: StageReport | None, what: str) -> None:
    """Fold a deployer's StageReport into ``report``, node by node, prefixed with ``what``."""
    for node, outcome in (part.nodes.items() if part else []):
        old = report.nodes.get(node)
        report.add(node, outcome.changed or bool(old and old.changed),
                   (f"{old.message}; " if old else "") + f"{what}: {outcome.message}", log=False)


def sae_home() -> Path:
    """The controller's sae state directory (``$SAE_HOME``, default ``~/.sae``)."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae"))


class _Record:
    """A YAML file sae keeps per reservation, ``$SAE_HOME/<FOLDER>/<reservation>.yaml``, holding
    a dataclass's fields; a file that does not hold them is refused naming it and ``FIX``."""

    FOLDER = ""
    WHAT = ""
    FIX = ""   # what to do instead, formatted with the reservation's name

    @classmethod
    def path(cls, reservation_name: str) -> Path:
        return sae_home() / cls.FOLDER / f"{reservation_name}.yaml"

    @classmethod
    def load(cls, reservation_name: str):
        """The record, or None when there is none; UsageError naming the file when it is not a
        record sae wrote."""
        path = cls.path(reservation_name)
        if not path.exists():
            return None
        data = read_yaml(path, f"sae's {cls.WHAT}")
        fields = typing.get_type_hints(cls)
        if not isinstance(data, dict) or set(data) != set(fields) or \
                any(not isinstance(data[k], t) for k, t in fields.items()) or not cls._items_ok(data):
            raise UsageError(f"{path}: not a {cls.WHAT} sae wrote (fields: {', '.join(fields)}); restore it, or "
                             f"remove it and {cls.FIX.format(name=reservation_name)}")
        return cls(**data)

    @staticmethod
    def _items_ok(data: dict) -> bool:
        return True

    def save(self, reservation_name: str) -> None:
        path = self.path(reservation_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(dataclasses.asdict(self)))


@dataclasses.dataclass
class StackRecord(_Record):
    """The stack sae last installed on a reservation (``$SAE_HOME/stacks/<name>.yaml``): its key,
    node count, layout roles and ceph section. The install stage replaces a different one and
    writes its own; ``sae clean`` stops by its layout."""

    FOLDER, WHAT, FIX = "stacks", "stack record", "'sae clean' stops {name!r} by the default layout"

    stack_key: str
    nodes: int
    layout: dict
    ceph: dict


@dataclasses.dataclass
class WriteRecord(_Record):
    """Where sae's write jobs write on a reservation (``$SAE_HOME/writes/<name>.yaml``): CephFS
    directories and S3 buckets, recorded by the build stage before any job writes, so that
    ``sae clean`` removes what a crashed job left there (a finished point removes its own)."""

    FOLDER, WHAT, FIX = "writes", "write record", "remove what sae's writes left in {name!r} yourself"

    cephfs: list
    buckets: list

    @staticmethod
    def _items_ok(data: dict) -> bool:
        return all(isinstance(x, str) for v in data.values() for x in v)

    @classmethod
    def add(cls, reservation_name: str, cephfs=(), buckets=()) -> None:
        """Record ``cephfs`` directories and ``buckets`` beside those recorded already."""
        record = cls.load(reservation_name) or cls([], [])
        merged = cls(sorted({*record.cephfs, *cephfs}), sorted({*record.buckets, *buckets}))
        if merged != record or not cls.path(reservation_name).exists():
            merged.save(reservation_name)


def data_cache() -> Path:
    """Controller-side dataset cache (``$SAE_HOME/data``), shared by runs."""
    return sae_home() / "data"


def dataset_dirs(point: PlannedPoint) -> tuple[Path, Path]:
    """(generated or ingested source dir, split dir) of the point's dataset in the cache."""
    d = point.spec.data
    source = data_cache() / digest([d.generator, d.rows, d.seed, d.input])
    codec = "" if d.stored_compression == "none" else f"-{d.stored_compression}"
    fmt = "" if d.format == "parquet" else f"-{d.format}"   # Parquet: directories as before
    pages = f"-pages{d.page_rows}" if d.page_rows else ""
    return source / "source", source / f"split-{d.object_size}{fmt}{codec}{pages}"


def zones_path(point: PlannedPoint) -> str:
    """Where the zone dimension table of the point's dataset lives in CephFS (beside it)."""
    return dataset_path(point) + "-zones"


def dataset_path(point: PlannedPoint) -> str:
    """Where the point's dataset lives in CephFS."""
    d = point.spec.data
    codec = [] if d.stored_compression == "none" else [d.stored_compression]   # uncompressed: paths as before
    fmt = [] if d.format == "parquet" else [d.format]   # Parquet: paths as before
    pages = [f"pages{d.page_rows}"] if d.page_rows else []
    return "/sae/" + digest([d.generator, d.rows, d.seed, d.input, d.object_size, d.link_multiplier,
                             d.copy_multiplier, *codec, *fmt, *pages])
