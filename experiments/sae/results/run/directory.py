"""The result directory of one experiment run, and the tidy results table.

Layout (spec and plan are written first, before any node is touched)::

    <out>/<experiment>/<YYYYmmdd-HHMMSS>-<profile>/
        spec.yaml  plan.yaml  versions.lock  ledger.json  stages.yaml  reservation.yaml  layout.yaml
        raw/<point>-a<attempt>.jsonl     per-repetition timings as the Spark application wrote them
        logs/<point>-a<attempt>/         driver log, spark-submit output
        metrics/<point>/rep<k>/          Prometheus window of each repetition (series, AUCs, raw counters)
        metrics/idle/<application>/      Prometheus window of each application's idle window (after its queries)
        results.parquet                  one row per point × repetition (done ones)
        report/                          index.html (one self-contained page), summary.txt/.csv, *.png
    <out>/<experiment>/latest -> the newest run directory
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.metadata
import json
import math
import os
import time
from pathlib import Path

import pandas as pd
import yaml

from metareserve import Layout, LeaseHolder, load_reservation
from metareserve.errors import UsageError
from metareserve.model import read_yaml
from monitor_deploy import counter_gaps, counter_totals, read_frame, write_frame

from ...planning.capacities import SideFigures
from ...planning.planner import Plan, PlannedPoint
from ...planning.spec import SECTIONS, PointSpec
from . import provenance
from .eventlog import task_cpu_seconds
from .ledger import RunLedger
from .storage_work import cls_columns, json_lines, osd_ops

COMPONENTS = ("sae", "metareserve", "spark_deploy", "rados_deploy", "data_deploy", "monitor_deploy",
              "pyspark", "pyarrow", "pandas")


@functools.lru_cache(maxsize=32)
def _parsed_run_file(path: str, version: tuple) -> object:
    """``path`` parsed; ``version`` (inode, times, size) tells a rewritten file from the one cached."""
    return read_yaml(path, f"run file {Path(path).name}")


def versions() -> dict:
    """Versions of the controller-side components (part of every ledger key)."""
    out = {}
    for name in COMPONENTS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


@dataclasses.dataclass
class RunDir:
    """Paths inside one run directory."""

    root: Path

    def __post_init__(self):
        self.root = Path(self.root)

    spec = property(lambda self: self.root / "spec.yaml")
    plan = property(lambda self: self.root / "plan.yaml")
    versions = property(lambda self: self.root / "versions.lock")
    ledger = property(lambda self: self.root / "ledger.json")
    stages = property(lambda self: self.root / "stages.yaml")
    reservation = property(lambda self: self.root / "reservation.yaml")
    layout = property(lambda self: self.root / "layout.yaml")

    def stack_layout(self, stack_key: str) -> Path:
        """The layout of one stack of the run (``layouts/<stack key>.yaml``)."""
        return self.root / "layouts" / f"{stack_key}.yaml"

    def capacities(self, shape_key: str) -> Path:
        """Declared and measured host capacities of the points with ``shape_key``."""
        return self.root / "capacities" / f"{shape_key}.yaml"

    def placement(self, point_id: str) -> Path:
        """Where the point's data lived on the OSDs before and after its application ran."""
        return self.root / "placement" / f"{point_id}.json"

    def osd_index(self, point_id: str) -> Path:
        """What the OSD index the point's reader probes holds, per object (its column; each
        object's rows, bytes and build seconds), as the build stage found it."""
        return self.root / "osd_index" / f"{point_id}.json"

    def idle_window(self, application: str) -> Path:
        """The Prometheus window of ``application``'s idle window (its raw file's name without
        ``.jsonl``; sae.app.run_points, ``idle``): its processes up, no query running."""
        return self.metrics / "idle" / application

    raw = property(lambda self: self.root / "raw")
    logs = property(lambda self: self.root / "logs")
    metrics = property(lambda self: self.root / "metrics")
    results = property(lambda self: self.root / "results.parquet")
    report = property(lambda self: self.root / "report")

    @classmethod
    def new(cls, out, experiment: str, profile: str | None) -> "RunDir":
        """A fresh run directory under ``out/<experiment>/`` with the ``latest`` link updated."""
        parent = Path(out) / experiment
        stamp = time.strftime("%Y%m%d-%H%M%S")
        root = parent / f"{stamp}-{profile or 'default'}"
        n = 1
        while root.exists():
            n += 1
            root = parent / f"{stamp}-{profile or 'default'}-{n}"
        for d in ("raw", "logs", "metrics", "report"):
            (root / d).mkdir(parents=True, exist_ok=True)
        link = parent / "latest"
        tmp = parent / f".latest-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(root.name)
        os.replace(tmp, link)
        return cls(root)

    @classmethod
    def find(cls, path) -> "RunDir":
        """The run directory at ``path`` (or the ``latest`` one under it); UsageError otherwise."""
        p = Path(path)
        for cand in (p, p / "latest"):
            if (cand / "ledger.json").exists():
                return cls(cand.resolve())
        subs = sorted(p.glob("*/latest")) if p.is_dir() else []
        if len(subs) == 1:
            return cls(subs[0].resolve())
        raise UsageError(f"{p}: not an sae run directory (no ledger.json); pass the directory "
                         f"'sae run' printed, or its parent holding 'latest'")

    def write_yaml(self, path: Path, data) -> None:
        """Write YAML atomically."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
        os.replace(tmp, path)

    def write_json(self, path: Path, data) -> None:
        """Write JSON atomically."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)

    def read_yaml(self, path: Path):
        """The YAML run file at ``path`` (None if there is none), parsed once per version of the
        file (a report reads plan.yaml hundreds of times; parsing is most of that)."""
        try:
            st = Path(path).stat()
        except FileNotFoundError:
            return None
        return copy.deepcopy(_parsed_run_file(str(path), (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)))

    def load_plan(self) -> Plan:
        """The run's plan (``plan.yaml``, written before anything ran); UsageError naming the file
        if it is missing or damaged."""
        data = self.read_yaml(self.plan)
        try:
            return Plan.from_dict(data)
        except UsageError as e:
            raise UsageError(f"{self.plan}: damaged plan ({e}); start a new run") from None
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            what = f"no {e}" if isinstance(e, KeyError) else str(e)
            raise UsageError(f"{self.plan}: damaged plan ({what}); start a new run") from None

    def lease_holder(self):
        """Who took the cluster's lease for this run (``lease.yaml``: reservation name and
        :class:`metareserve.LeaseHolder`), or None if the run took none yet; UsageError naming the
        file if it is damaged."""
        held = self.read_yaml(self.root / "lease.yaml")
        if held is None:
            return None
        try:
            holder = LeaseHolder(**{k: v for k, v in held.items() if k != "reservation"})
        except (TypeError, AttributeError):   # not a mapping, or fields missing or unknown
            holder = None
        if holder is None or not (isinstance(held.get("reservation"), str) and isinstance(holder.pid, int)
                                  and isinstance(holder.host, str) and isinstance(holder.since, (int, float))):
            raise UsageError(f"{self.root / 'lease.yaml'}: damaged lease record; the run's lease is on its "
                             f"cluster ('metareserve break-lease' frees a stale one): delete this file")
        return held["reservation"], holder


QUERY_RESULTS = ("init_s", "compute_s", "total_s", "rows", "checksum", "answer")
"""The result values every query records (``rows`` becomes ``rows_out``; ``answer``, a statement's
rows, is kept as JSON text); a run stage may record
more (e.g. the backend scans' ``objects``, ``batches``, ``reply_bytes``), each its own column."""
QUALIFIED = {"layout": "cluster_layout", "cores": "cluster_cores", "conf": "spark_conf", "enabled": "monitor_enabled",
             "input": "data_input", "format": "data_format", "version": "spark_version",
             "pyarrow": "spark_pyarrow", "jit": "spark_jit"}
"""Parameters whose field name alone says nothing → their column (section_field). Run
directories written before carry the bare names; :func:`load_results` renames them."""


def flat_params(spec: PointSpec) -> dict:
    """One column per parameter, named by field (field names are unique across sections;
    :data:`QUALIFIED` ones carry their section); dict-valued parameters (layout, conf) become
    JSON text."""
    out = {}
    params = spec.params()
    for section in SECTIONS:
        for k, v in params[section].items():
            out[QUALIFIED.get(k, k)] = json.dumps(v, sort_keys=True) if isinstance(v, dict) else v
    return out


SIDES = {"compute": ("compute", "both"), "storage": ("storage", "both")}
"""Which tagged hosts count for each side (a host playing both counts for both)."""
RESOURCES = {"compute_rx_bytes": ("compute", "net_rx_bytes"), "compute_cpu_s": ("compute", "cpu_seconds"),
             "storage_cpu_s": ("storage", "cpu_seconds"), "storage_tx_bytes": ("storage", "net_tx_bytes")}
"""Result column → (side, counter) summed over that side's hosts during each repetition."""


def point_layout(run: RunDir, point: PlannedPoint) -> Layout | None:
    """A planned point's layout: its explicit one, else its stack's as distributed (``layouts/``;
    runs before it: ``layout.yaml`` for the first stack), else the default layout on the run's
    reservation cut to the point's node count; None without a reservation."""
    roles = point.spec.cluster.layout
    if roles:
        return Layout.from_dict({"roles": roles})
    if run.stack_layout(point.stack_key).exists():
        return Layout.load(run.stack_layout(point.stack_key))
    if run.layout.exists() and point.stack_key == run.load_plan().points[0].stack_key:
        return Layout.load(run.layout)
    if not run.reservation.exists():
        return None
    res = load_reservation(run.reservation)
    return Layout.default(dataclasses.replace(res, nodes=res.nodes[:point.spec.cluster.nodes]))


def host_roles(run: RunDir, point: PlannedPoint) -> dict[str, str]:
    """Node → ``compute``/``storage``/``both`` for a planned point (:func:`point_layout`)."""
    layout = point_layout(run, point)
    return layout.host_roles() if layout is not None else {}


PLAIN = {"compute": ({"spark-worker"}, {"spark-master", "spark-worker", "driver"}),
         "storage": ({"ceph-osd"}, {"ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-rgw"})}
"""Side → (the roles of a plain host, the side's roles): a plain host runs only the daemon a side
adds a host for (an executor's worker; an OSD), the side's other hosts also its services (the
driver and master; the monitors, managers, metadata servers)."""


def plain_hosts(layout: Layout | None) -> dict[str, set[str]]:
    """Side → its plain hosts (:data:`PLAIN`): nodes of that side only, running only its plain role."""
    if layout is None:
        return {side: set() for side in PLAIN}
    sides = layout.host_roles()
    return {side: {n for n, r in sides.items() if r == side and set(layout.roles_of(n)) & mine == plain}
            for side, (plain, mine) in PLAIN.items()}


TENANT_TOUCHED = ("storage_cpu_s",)
"""The :data:`RESOURCES` columns a second tenant on the storage hosts adds to between queries
(its CPU load and its scans' OSD work): beside one they are read over the repetition's own
interval. The others stay read at the scrapes around the query (the compute hosts are quiet
between queries whatever the storage side does; reading a burst of network bytes between two
scrapes by interpolation would undercount it)."""


def side_resources(window: Path, start: float, end: float, roles: dict[str, str], *,
                   after: float | None = None, before: float | None = None, busy: tuple[str, ...] = ()) -> dict:
    """The :data:`RESOURCES` columns of one repetition from the raw counters of its exported
    window (``after``/``before``: when the queries around it ended and began; the columns in
    ``busy``, whose hosts are not quiet between queries, e.g. :data:`TENANT_TOUCHED` beside a
    second tenant, are read over the repetition's own interval), and
    ``metric_window``: ``complete``, or ``partial`` (a host's counters were not scraped
    throughout, e.g. Prometheus was down: the columns are then left empty, never undercounted)
    or ``missing`` (no window was exported)."""
    if not (window / "counters.parquet").exists():
        return {"metric_window": "missing"}
    meta = json.loads((window / "window.json").read_text()) if (window / "window.json").exists() else {}
    samples = read_frame(window / "counters.parquet")
    if counter_gaps(samples, start, end, sorted(roles), meta.get("step", 1.0)):
        return {"metric_window": "partial"}
    lags = meta.get("counter_lags")
    quiet = counter_totals(samples, start, end, after=after, before=before, lags=lags)
    own = counter_totals(samples, start, end, after=None, before=None, lags=lags) if busy else quiet
    return {"metric_window": "complete",
            **{col: sum(v for node, v in (own if col in busy else quiet).get(counter, {}).items()
                        if roles.get(node) in SIDES[side])
               for col, (side, counter) in RESOURCES.items()}}


def idle_rates(run: RunDir, roles: dict[str, dict[str, str]], plain: dict[str, dict[str, set]]) -> dict[str, dict]:
    """Point → each side's CPU-seconds per second during the idle window of the application that
    ran the point's repetitions (sae.app.run_points, ``idle``: its processes up, no query
    running): ``<side>_idle_cpu_rate``, per plain host on average (``plain``: point → side → its
    hosts, :func:`plain_hosts`; absent for a side without one), and
    ``<side>_idle_services_cpu_rate``, its other hosts summed. A point run by several
    applications (a resume) takes the last one's; nothing for a point whose application recorded
    no complete idle window."""
    out = {}
    for log in sorted(run.raw.glob("*.jsonl")):
        if log.name.endswith(".ceph.jsonl"):
            continue
        events = json_lines(log)
        idle = next((e for e in events if e.get("event") == "idle"), None)
        window = run.idle_window(log.stem)
        if idle is None or not (window / "counters.parquet").exists():
            continue
        meta = json.loads((window / "window.json").read_text())
        samples = read_frame(window / "counters.parquet")
        points = [pid for pid in dict.fromkeys(e["point"] for e in events if e.get("event") == "rep") if pid in roles]
        nodes = sorted({n for pid in points for n in roles[pid]})
        if not points or counter_gaps(samples, idle["start"], idle["end"], nodes, meta.get("step", 1.0)):
            continue
        cpu = counter_totals(samples, idle["start"], idle["end"], lags=meta.get("counter_lags")).get("cpu_seconds", {})
        seconds = idle["end"] - idle["start"]
        rate = lambda hosts: sum(cpu.get(n, 0.0) for n in hosts) / seconds  # noqa: E731
        for pid in points:
            out[pid] = {}
            for side in SIDES:
                mine, flat = [n for n, r in roles[pid].items() if r in SIDES[side]], plain[pid][side]
                if flat:
                    out[pid][f"{side}_idle_cpu_rate"] = rate(flat) / len(flat)
                if mine:
                    out[pid][f"{side}_idle_services_cpu_rate"] = rate(set(mine) - flat)
    return out


def _imbalance(objects: dict) -> float:
    """The most objects an OSD held over the mean per OSD (1: even)."""
    mean = sum(objects.values()) / len(objects) if objects else 0
    return max(objects.values()) / mean if mean else math.nan


def placement_columns(path: Path, hosts: int) -> dict:
    """``hosts`` and, where the run recorded where the point's data lived (before its queries),
    ``osds``, ``objects_per_osd`` and ``bytes_per_osd`` (JSON: OSD name → count), and
    ``placement_imbalance`` (:func:`_imbalance`); where it also recorded it after its application,
    the same ``..._after`` and ``bytes_moved``: the bytes OSDs gained in between, summed (what the
    placement groups' changes moved, such as the autoscaler's)."""
    out = {"hosts": hosts}
    if not path.exists():
        return out
    record = json.loads(path.read_text())
    for when, suffix in (("before", ""), ("after", "_after")):
        if when in record:
            objects = {osd: v["objects"] for osd, v in record[when].items()}
            out.update({f"objects_per_osd{suffix}": json.dumps(objects),
                        f"bytes_per_osd{suffix}": json.dumps({osd: v["bytes"] for osd, v in record[when].items()}),
                        f"placement_imbalance{suffix}": _imbalance(objects)})
    if "before" in record:
        out["osds"] = len(record["before"])
    if "before" in record and "after" in record:
        before, after = record["before"], record["after"]
        out["bytes_moved"] = sum(max(0, v["bytes"] - before.get(osd, {}).get("bytes", 0)) for osd, v in after.items())
    return out


def osd_index_columns(path: Path) -> dict:
    """Where the point's reader probes an OSD index (``RunDir.osd_index``): ``index_bytes`` (the
    objects' indexes in their omaps), ``index_build_s`` (the OSDs' seconds building them, summed)
    and ``index_partitions`` (JSON, per object: ``[rows, index bytes]``); nothing elsewhere."""
    if not path.exists():
        return {}
    objects = json.loads(path.read_text())["objects"]
    return {"index_bytes": sum(o["bytes"] for o in objects), "index_build_s": sum(o["build_s"] for o in objects),
            "index_partitions": json.dumps([[o["rows"], o["bytes"]] for o in objects])}


def neighbours(entries) -> dict[tuple, tuple]:
    """(point, repetition) → (end of the previous query, start of the next one) over every
    recorded repetition of the run: None before the first (the application's start-up precedes
    it), infinity after the last (nothing of the run follows)."""
    spans = sorted((e["start"], e["end"], (e["point"], e["repetition"])) for e in entries
                   if e.get("start") and e.get("end"))
    out = {}
    for i, (_, _, key) in enumerate(spans):
        out[key] = (spans[i - 1][1] if i else None, spans[i + 1][0] if i + 1 < len(spans) else math.inf)
    return out


def tidy(run: RunDir) -> pd.DataFrame:
    """The results table of a run: one row per done point × repetition, with timings,
    parameters (one column each), warm-up flag, the compute and storage sides' hosts and
    resources during the repetition (:data:`RESOURCES`) and metric AUCs."""
    ledger = RunLedger.load(run.ledger)
    plan = run.load_plan()
    points = {p.id: p for p in plan.points}
    order = {pid: i for i, pid in enumerate(plan.order)}
    layouts = {pid: point_layout(run, p) for pid, p in points.items()}
    roles = {pid: layout.host_roles() if layout is not None else {} for pid, layout in layouts.items()}
    sides = {key: dataclasses.asdict(SideFigures.of(run.read_yaml(run.capacities(key))))
             for key in {p.shape_key for p in points.values()}}
    around = neighbours(ledger.entries.values())
    idle = idle_rates(run, roles, {pid: plain_hosts(layout) for pid, layout in layouts.items()})
    ops = osd_ops(run.raw)
    exclusive = (run.root / "lease.yaml").exists()
    rows = []
    for e in ledger.entries.values():
        if e["state"] != "done":
            continue
        p = points[e["point"]]
        result = e.get("result") or {}
        row = {"experiment": plan.experiment, "profile": plan.profile, "point": e["point"],
               "order": order[e["point"]], "repetition": e["repetition"], "warmup": e["warmup"],
               "drift": bool(p.drift_of),   # the drift check: the reference point again, at the end
               "start": e["start"], "end": e["end"],
               "init_s": result.get("init_s"), "compute_s": result.get("compute_s"),
               "total_s": result.get("total_s"), "rows_out": result.get("rows"),
               "checksum": result.get("checksum"), "attempts": e["attempts"], "exclusive": exclusive,
               "answer": json.dumps(result["answer"]) if "answer" in result else None}
        row.update({k: v for k, v in result.items() if k not in QUERY_RESULTS})   # a run stage's own measures
        row.update(flat_params(p.spec))
        row.update(sides[p.shape_key])
        row.update({f"{side}_hosts": ",".join(n for n, r in roles[e["point"]].items() if r in SIDES[side])
                    for side in SIDES})
        window = run.metrics / e["point"] / f"rep{e['repetition']}"
        if not p.spec.monitor.enabled:
            row["metric_window"] = "off"
        elif e["end"]:
            after, before = around[e["point"], e["repetition"]]
            busy = TENANT_TOUCHED if p.spec.cluster.second_tenant else ()
            row.update(side_resources(window, e["start"], e["end"], roles[e["point"]], after=after, before=before,
                                      busy=busy))
        row.update(idle.get(e["point"], {}))
        row.update({f"auc_{k}": v for k, v in (e.get("auc") or {}).items()})
        row.update(placement_columns(run.placement(e["point"]), p.spec.cluster.nodes))
        row.update(osd_index_columns(run.osd_index(e["point"])))
        row.update(cls_columns(result.get("scan")))
        row.update(ops.get((e["point"], e["repetition"], e["start"]), {}))
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in [c for c in RESOURCES if c not in df and "metric_window" in df]:
        df[col] = math.nan   # no complete window at all: the columns are there, empty
    if not df.empty:
        df["compute_task_cpu_s"] = task_cpu_seconds(run.root, df)   # from the event logs, not the windows
        # seq: the order the repetitions ran in, over the whole run (interleaved readers)
        df["seq"] = df["start"].astype(float).rank(method="first").astype(int) - 1
        df = df.sort_values(["order", "repetition"]).reset_index(drop=True)
    return df


def write_results(run: RunDir) -> Path:
    """Write ``results.parquet`` from the ledger; returns its path."""
    df = tidy(run)
    tmp = run.results.with_name("results.parquet.tmp")
    write_frame(df, tmp)
    os.replace(tmp, run.results)
    return run.results


def load_results(path) -> pd.DataFrame:
    """The tidy results of a run directory (or of the ``latest`` run under ``path``).

    One row per point × repetition: ``point``, ``order`` (the point's place in the plan),
    ``repetition``, ``seq`` (the repetition's place in the order the run executed them: the
    readers of a comparison take turns), ``warmup``, ``init_s``,
    ``compute_s``, ``total_s``, ``rows_out`` (rows the scan kept; a statement's answer rows),
    ``checksum`` (a statement's: a fingerprint of its answer), ``answer`` (a statement's first
    rows as JSON; None for the scan), one column per
    parameter (``rows`` is the dataset's row count) (``selectivity``, ``object_size``,
    ``reader``, ...; ``cluster_layout``, ``spark_conf``, ``monitor_enabled``, ``data_input``
    carry their section), ``compute_hosts``/``storage_hosts`` (comma-separated node names; a host
    running both Spark and a Ceph daemon is on both sides), and from the repetition's Prometheus
    window (counters interpolated at its start and end): ``compute_rx_bytes`` (bytes the compute
    hosts received), ``compute_cpu_s`` and ``storage_cpu_s`` (CPU-seconds of each side's hosts),
    ``compute_task_cpu_s`` (from Spark's event log, not the window: the executors' task threads'
    CPU-seconds, the query's own work on the compute side; NaN where the run holds no event log),
    ``storage_tx_bytes`` (bytes the storage hosts sent), ``metric_window`` (``complete``; else
    ``partial``/``missing``/``off`` and those four columns empty), plus ``auc_*`` metric areas;
    ``compute_idle_cpu_rate``/``storage_idle_cpu_rate`` (CPU-seconds per second of a side's
    plain host while its application was up and idle) and ``..._idle_services_cpu_rate`` (its
    other hosts': :func:`idle_rates`);
    ``exclusive``: the run held its cluster's lease (no other run measured beside it);
    ``compute_cores_declared``/``_measured``, ``storage_cores_declared``/``_measured`` (each
    side's cores, spinning together) and ``link_rate_declared_bps``/``_measured_bps`` (storage →
    compute) from the point's ``capacities/`` record (declared: NaN where nothing was emulated);
    the storage side's work (:mod:`sae.results.run.storage_work`): ``osd_*`` (the OSDs' own counters: read
    ops, reply bytes, reads from the store and their bytes) and, for the sae-ceph readers,
    ``cls_*`` (the object class's phase CPU-seconds, rows, batches and bytes, summed over the
    query's calls) and ``reply_wait_s``.
    ``drift``: the drift check's repetitions (``Experiment.drift``: the reference point ``<id>`` run
    again at the end of the run as point ``<id>-drift``).
    Filter ``~df.warmup & ~df.drift`` for statistics. Every column: docs/results.md.
    """
    return read_results(RunDir.find(path))


def read_results(run: RunDir) -> pd.DataFrame:
    """:func:`load_results` of the run directory ``run`` as it is (a run's own, or one trimmed
    for the results page, :mod:`sae.results.drawing.gallery`): its results.parquet, else from its ledger."""
    if run.results.exists():
        df = read_frame(run.results)
        return _recorded_software(run, df.rename(columns={k: v for k, v in QUALIFIED.items() if v not in df}))
    return tidy(run)


RECORDED_SOFTWARE = {"spark_version": "spark", "spark_pyarrow": "pyarrow"}
"""Parameter columns added after runs were written → the key of the Spark nodes' software in the
run's versions.lock that says what those runs ran (one value: they had no such axis)."""


def _recorded_software(run: RunDir, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the :data:`RECORDED_SOFTWARE` columns a run written before them lacks, taken
    from what its versions.lock says its Spark nodes ran (:func:`provenance.spark_nodes`), so
    ``sae compare`` matches its points with a newer run's; left out where the lock does not say
    one value."""
    missing = [c for c in RECORDED_SOFTWARE if c not in df]
    if not missing or not run.versions.exists():
        return df
    nodes = provenance.spark_nodes(run.read_yaml(run.versions) or {})
    for column in missing:
        key = RECORDED_SOFTWARE[column]
        values = {str(n[key]) for n in nodes if n.get(key)}
        values = {v for v in values if not v.startswith("unavailable")}
        if len(values) == 1:
            df = df.assign(**{column: values.pop()})
    return df
