"""A cost model of each reader, fitted on earlier runs of the cluster it predicts (used by
:mod:`sae.results.analysis.advice`, ``sae advise``; the equations, assumptions and limits: docs/results.md,
"Should I push this query down?").

A query's **volumes** follow from its configuration (:class:`Config`) and the data's **shape**
(:class:`Shape`: stored and reply bytes per row, fitted from the runs' ``cls_*`` columns): rows
the OSDs decode and filter, rows encoded into replies, bytes over the link, rows Spark's Parquet
reader decodes, rows Spark filters and keeps, objects requested (:func:`volumes`; how each reader
reads is defined once, in :mod:`sae.planning.readers`). The **constants** turn volumes into work:
the storage side's and the compute side's CPU-seconds (two linear fits on ``storage_cpu_s`` and
``compute_cpu_s``, each beside what the side's hosts cost per second the query lasts, measured in
the runs' idle windows: ``*_idle_cpu_rate``), then the query's time (a third fit on ``total_s``)::

    cpu      = max(W_storage / C_storage, W_compute / C_compute, (W_storage + W_compute) / C_pool)
    transfer = bytes over the link / link rate
    time     = query_s + request_s * objects / C_compute + max(cpu, transfer) + overlap * min(cpu, transfer)

Every fit is a bounded linear least squares (:func:`scipy.optimize.lsq_linear`, every constant
non-negative, ``overlap`` at most 1) over per-point medians of measured repetitions (warm-ups, the
drift check and the first, cold query of a Spark application left out). A constant whose column
the runs never exercise, or cannot tell apart from the others, is not fitted (0) and named. As the
hosts' cost per second makes a side's work depend on the query's time, a prediction solves the
two together (:meth:`Model.predict`).
"""
from __future__ import annotations

import collections
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd

from metareserve import format_rate, format_size
from metareserve.errors import UsageError

from ...planning import queries, readers
from .compare import Run
from ..run.storage_work import json_lines

PUSHDOWN, SHIP, FILES = "pushdown", "ship", "files"


def _path_of(reader: readers.Reader) -> str | None:
    """How ``reader`` reads, by its entry: the OSDs filter, the OSDs ship every row, Spark reads
    the stored files; None for a reader deciding per object (pushback), probing an index in the
    OSDs or keeping the data in memory (its queries read no storage), which are not modelled."""
    mode = reader.reads.mode
    if reader.reads.keep:
        return None
    if mode is None:
        return FILES
    return None if mode.pushback or mode.index else PUSHDOWN if mode.pushdown else SHIP


PATHS = {name: path for name, reader in readers.READERS.items() if (path := _path_of(reader))}
"""The readers the model covers and how each reads (:func:`_path_of`)."""
PREDICT_ROUNDS = 200
"""Rounds :meth:`Model.predict` solves a query's time and work in before it gives up."""
GRID = 991
"""Selectivities the crossover search evaluates between its bounds (then refined by bisection)."""


def path(reader: str) -> str:
    """How ``reader`` reads (:data:`PATHS`); UsageError for a reader the model does not cover."""
    if reader not in PATHS:
        raise UsageError(f"reader {reader}: the model covers {', '.join(PATHS)}")
    return PATHS[reader]


SUBJECTS = tuple(r for r in readers.OFFLOADING if r in PATHS)
BASES = tuple(r for r in readers.BASELINES if r in PATHS)


@dataclasses.dataclass(frozen=True)
class Config:
    """What to predict for: ``selectivity`` (% of rows kept), ``rows`` scanned per query, stored as
    ``rows / links`` rows linked ``links`` times in objects of ``object_size`` bytes, replies
    compressed with ``compression``, ``whole_objects`` (the offload reader answers a 100 % query
    with the objects as stored), each side's cores and the link rate (bits/s, ``inf``: unlimited);
    ``shared_cores``: both sides run on the same cores; each side's hosts (a host on both sides
    counts on both)."""

    selectivity: float
    rows: float
    object_size: int
    storage_cores: float
    compute_cores: float
    link_bps: float
    compression: str = "zstd"
    whole_objects: bool = True
    links: int = 1
    shared_cores: bool = False
    storage_hosts: int = 1
    compute_hosts: int = 1

    def text(self) -> str:
        link = "unlimited" if math.isinf(self.link_bps) else format_rate(int(self.link_bps))
        return (f"{self.rows:,.0f} rows per query in {format_size(int(self.object_size))} objects"
                f"{f' (linked {self.links} times)' if self.links > 1 else ''}, {self.compression} replies"
                f"{'' if self.whole_objects else ', no whole objects'}, storage cores {self.storage_cores:g}, "
                f"compute cores {self.compute_cores:g}{' (shared)' if self.shared_cores else ''}, link {link}, "
                f"{self.storage_hosts} storage and {self.compute_hosts} compute host(s)")


@dataclasses.dataclass(frozen=True)
class Shape:
    """The data as stored and as replied: bytes per row stored (Parquet) and per reply row by
    compression codec (Arrow IPC), medians over the runs' connector points."""

    stored_bytes_per_row: float
    reply_bytes_per_row: tuple[tuple[str, float], ...]

    def reply(self, codec: str) -> float:
        """Reply bytes per row with ``codec``; UsageError when no run replied with it."""
        known = dict(self.reply_bytes_per_row)
        if codec not in known:
            raise UsageError(f"--compression {codec}: no fitted run replied with {codec} "
                             f"(fitted: {', '.join(known) or 'none'})")
        return known[codec]


@dataclasses.dataclass(frozen=True)
class Volumes:
    """What one query of one reader moves and processes (rows, bytes, requests)."""

    reader: str
    codec: str
    objects: float
    osd_rows: float        # rows the OSDs decode
    osd_filter_rows: float  # rows the OSDs filter
    ipc_rows: float        # rows encoded into Arrow IPC replies
    ipc_bytes: float       # their bytes
    parquet_rows: float    # rows Spark's Parquet reader decodes on the compute side
    filter_rows: float     # rows Spark filters
    kept_rows: float       # rows Spark keeps and processes
    wire_bytes: float      # bytes over the link
    storage_hosts: float = 1.0
    compute_hosts: float = 1.0
    seconds: float = 0.0   # the query's time (measured, or predicted: Model.predict)


def volumes(reader: str, config: Config, shape: Shape, seconds: float = 0.0) -> Volumes:
    """The volumes of one query of ``reader`` at ``config`` lasting ``seconds``."""
    rows, kept = config.rows, config.rows * config.selectivity / 100
    stored = rows * shape.stored_bytes_per_row
    objects = config.links * math.ceil(stored / config.links / config.object_size)
    how, hosts = path(reader), (config.storage_hosts, config.compute_hosts)
    if how == FILES or (how == PUSHDOWN and config.whole_objects and config.selectivity >= 100):
        return Volumes(reader, config.compression, objects, 0, 0, 0, 0, rows, rows if how == FILES else 0, kept,
                       stored, *hosts, seconds)
    replied = kept if how == PUSHDOWN else rows
    ipc = replied * shape.reply(config.compression)
    return Volumes(reader, config.compression, objects, rows, rows if how == PUSHDOWN else 0, replied, ipc, 0,
                   rows if how == SHIP else 0, kept, ipc, *hosts, seconds)


@dataclasses.dataclass(frozen=True)
class Term:
    """One constant of the model: ``name``, ``unit``, what it costs, the measured column it is
    fitted on (``target``), its volume (a function of :class:`Volumes`) and its upper bound;
    ``measured``: the results column that gives its value instead of a fit (median over the
    points)."""

    name: str
    unit: str
    what: str
    target: str
    volume: object = dataclasses.field(repr=False, compare=False)
    upper: float = math.inf
    measured: str = ""


def terms(readers_seen, codecs) -> list[Term]:
    """The model's constants for the readers and reply codecs the runs measured, in fitting order
    (a later term is fitted only where it adds to the earlier ones)."""
    per_codec = lambda c, field: lambda v: getattr(v, field) if v.codec == c else 0.0  # noqa: E731
    storage = [Term("osd_services_s", "CPU-s/s", "the storage side's services' host per second of the query, idle",
                    "storage_cpu_s", lambda v: v.seconds, measured="storage_idle_services_cpu_rate"),
               Term("osd_host_s", "CPU-s/host-s", "each further storage host (an OSD) per second of the query, idle",
                    "storage_cpu_s", lambda v: (v.storage_hosts - 1) * v.seconds, measured="storage_idle_cpu_rate"),
               Term("osd_query", "CPU-s", "the storage side per query", "storage_cpu_s", lambda v: 1.0),
               Term("osd_decode_row", "CPU-s/row", "decoding a row in the OSDs", "storage_cpu_s",
                    lambda v: v.osd_rows),
               Term("osd_filter_row", "CPU-s/row", "filtering a row in the OSDs", "storage_cpu_s",
                    lambda v: v.osd_filter_rows),
               *(Term(f"osd_encode_row[{c}]", "CPU-s/row", f"encoding a reply row, {c}", "storage_cpu_s",
                      per_codec(c, "ipc_rows")) for c in codecs),
               Term("osd_send_byte", "CPU-s/B", "sending a byte from the OSDs", "storage_cpu_s",
                    lambda v: v.wire_bytes)]
    compute = [Term("client_services_s", "CPU-s/s", "the driver's host per second of the query, idle", "compute_cpu_s",
                    lambda v: v.seconds, measured="compute_idle_services_cpu_rate"),
               Term("client_host_s", "CPU-s/host-s", "each further compute host (an executor) per second of the query, "
                    "idle", "compute_cpu_s", lambda v: (v.compute_hosts - 1) * v.seconds, measured="compute_idle_cpu_rate"),
               *(Term(f"client_query[{r}]", "CPU-s", f"the compute side per query, {r}", "compute_cpu_s",
                      (lambda name: lambda v: float(v.reader == name))(r)) for r in readers_seen),
               *(Term(f"client_decode_byte[{c}]", "CPU-s/B", f"decoding a reply byte, {c}", "compute_cpu_s",
                      per_codec(c, "ipc_bytes")) for c in codecs),
               Term("client_parquet_row", "CPU-s/row", "Spark's Parquet reader per row", "compute_cpu_s",
                    lambda v: v.parquet_rows),
               Term("client_filter_row", "CPU-s/row", "Spark filtering a row", "compute_cpu_s",
                    lambda v: v.filter_rows),
               Term("client_kept_row", "CPU-s/row", "Spark's work per kept row", "compute_cpu_s",
                    lambda v: v.kept_rows)]
    return storage + compute


TIME_TERMS = (("query_s", "s", "fixed time per query"),
              ("request_s", "s", "fixed time per object request, per compute core"),
              ("overlap", "share", "of the shorter of CPU and transfer time not hidden by the longer"))


@dataclasses.dataclass(frozen=True)
class Constant:
    """A fitted constant: ``value`` in ``unit`` and what it is; ``fitted`` False (value 0) with
    ``why`` when the runs could not fit it."""

    name: str
    value: float
    unit: str
    what: str
    fitted: bool = True
    why: str = ""

    def text(self) -> str:
        value = f"{self.value:.4g} {self.unit}" if self.fitted else "not fitted (0)"
        return f"{self.name:26} {value:20} {self.what}"


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One reader's predicted query at a :class:`Config`: time and its parts, each side's CPU and
    the bytes over the link; ``bound``: ``cpu`` or ``link``, whichever is longer."""

    reader: str
    config: Config
    time_s: float
    cpu_s: float
    transfer_s: float
    storage_cpu_s: float
    compute_cpu_s: float
    wire_bytes: float

    @property
    def bound(self) -> str:
        return "link" if self.transfer_s > self.cpu_s else "cpu"


@dataclasses.dataclass(frozen=True)
class Crossover:
    """Where ``subject`` stops beating the fastest baseline between ``low`` and ``high`` %:
    ``verdict`` ``at`` (``selectivity``), ``always`` (it wins throughout), ``never`` (it loses
    throughout) or ``unknown`` (``why``)."""

    verdict: str
    subject: str = ""
    low: float = math.nan
    high: float = math.nan
    selectivity: float | None = None
    why: str = ""

    def edge(self) -> float:
        """The selectivity it stands for: its own, ``high`` for always, ``low`` for never."""
        return {"at": self.selectivity, "always": self.high, "never": self.low}.get(self.verdict, math.nan)

    def text(self) -> str:
        span = f"between {self.low:g} and {self.high:g} %"
        if self.verdict == "at":
            return f"{self.subject} stops beating the fastest baseline at {self.selectivity:.1f} % selectivity"
        if self.verdict == "always":
            return f"{self.subject} beats the fastest baseline at every selectivity {span}"
        if self.verdict == "never":
            return f"{self.subject} never beats the fastest baseline {span}"
        return f"unknown ({self.why})"


def crossing(selectivities, differences, subject: str) -> Crossover:
    """The :class:`Crossover` of ``subject`` from its time minus the fastest baseline's at
    ascending ``selectivities`` (linear between the two that bracket the first loss)."""
    s, d = np.asarray(selectivities, float), np.asarray(differences, float)
    if len(s) < 2:
        return Crossover("unknown", subject, why="offload and a baseline measured at fewer than 2 selectivities")
    low, high = float(s[0]), float(s[-1])
    if d[0] >= 0:
        return Crossover("never", subject, low, high)
    losing = np.flatnonzero(d >= 0)
    if not len(losing):
        return Crossover("always", subject, low, high)
    i = losing[0]
    at = s[i - 1] + (s[i] - s[i - 1]) * -d[i - 1] / (d[i] - d[i - 1])
    return Crossover("at", subject, low, high, float(at))


@dataclasses.dataclass(frozen=True)
class Model:
    """The fitted model: the data's :class:`Shape`, the :class:`Constant` s, the readers it was
    fitted for, the runs and points it was fitted on, and what was left out of the fit."""

    shape: Shape
    constants: tuple[Constant, ...]
    readers: tuple[str, ...]
    runs: tuple[str, ...]
    points: int
    left_out: tuple[str, ...] = ()
    reference: Config | None = None
    terms: tuple[Term, ...] = dataclasses.field(default=(), repr=False, compare=False)

    def value(self, name: str) -> float:
        return next(c.value for c in self.constants if c.name == name)

    def work(self, v: Volumes, target: str) -> float:
        """A side's CPU-seconds (``target``: storage_cpu_s or compute_cpu_s) for volumes ``v``."""
        return sum(self.value(t.name) * t.volume(v) for t in self.terms if t.target == target)

    def predict(self, reader: str, config: Config) -> Prediction:
        """``reader``'s query at ``config``: its time and each side's work, which the hosts' cost per
        second makes depend on each other, solved together (the time from none, then again with
        each side's work at the time before, until it stops changing: the hosts' cost per second
        adds less than a second of time per second). UsageError for a reader the model was not
        fitted for, or where the hosts' cost per second alone takes all their cores."""
        if reader not in self.readers:
            raise UsageError(f"reader {reader}: not in the fitted runs (fitted: {', '.join(self.readers)})")
        v, time = volumes(reader, config, self.shape), 0.0
        for _ in range(PREDICT_ROUNDS):
            v = dataclasses.replace(v, seconds=time)
            storage, compute = self.work(v, "storage_cpu_s"), self.work(v, "compute_cpu_s")
            cpu, transfer = bottlenecks(storage, compute, v.wire_bytes, config)
            time, before = (self.value("query_s") + self.value("request_s") * v.objects / config.compute_cores
                            + max(cpu, transfer) + self.value("overlap") * min(cpu, transfer)), time
            if abs(time - before) <= 1e-6 * time:
                return Prediction(reader, config, time, cpu, transfer, storage, compute, v.wire_bytes)
        raise UsageError(f"{config.text()}: the hosts' own CPU per second (osd_host_s, client_host_s and the services') "
                         f"takes every core; no prediction")

    def crossover(self, config: Config, among=None, low: float = 1.0, high: float = 100.0) -> Crossover:
        """Where the first offloading reader of ``among`` (default: the fitted readers) stops beating
        the fastest of its baselines between ``low`` and ``high`` % (a grid, then bisection)."""
        among = [r for r in (among or self.readers) if r in self.readers]
        subject = next((r for r in among if r in SUBJECTS), None)
        bases = [r for r in among if r in BASES]
        if not subject or not bases:
            return Crossover("unknown", subject or "", low, high, why="needs an offloading reader and a baseline")

        def difference(s: float) -> float:
            at = dataclasses.replace(config, selectivity=s)
            return self.predict(subject, at).time_s - min(self.predict(b, at).time_s for b in bases)
        grid = np.unique(np.r_[np.linspace(low, high, GRID), high])
        found = crossing(grid, [difference(s) for s in grid], subject)
        if found.verdict != "at" or found.selectivity >= high:
            return found
        i = int(np.searchsorted(grid, found.selectivity))
        from scipy.optimize import brentq
        a, b = grid[max(i - 1, 0)], grid[i]
        at = brentq(difference, a, b, xtol=1e-3) if difference(a) * difference(b) < 0 else found.selectivity
        return dataclasses.replace(found, selectivity=float(at))

    def text(self) -> str:
        unfitted = [c for c in self.constants if not c.fitted]
        return "\n".join([
            f"fitted on {self.points} points of {len(self.runs)} run(s): {', '.join(self.runs)}",
            *(f"left out: {x}" for x in self.left_out),
            f"shape: {self.shape.stored_bytes_per_row:.1f} B/row stored; reply "
            + ", ".join(f"{c} {b:.1f} B/row" for c, b in self.shape.reply_bytes_per_row),
            *(c.text() for c in self.constants),
            *(["cannot fit: " + "; ".join(f"{c.name} ({c.why})" for c in unfitted)] if unfitted else [])])


def bottlenecks(storage: float, compute: float, wire_bytes: float, config: Config) -> tuple[float, float]:
    """(CPU time, transfer time) of a query: each side's work over its cores, or both sides' over
    the pool they share (sides apart: the pool is every core); bytes over the link rate."""
    pool = max(config.storage_cores, config.compute_cores) if config.shared_cores \
        else config.storage_cores + config.compute_cores
    cpu = max(storage / config.storage_cores, compute / config.compute_cores, (storage + compute) / pool)
    return cpu, 8 * wire_bytes / config.link_bps


# ---- observations: per-point medians of the runs' measured, warm repetitions

PARAMS = ("reader", "selectivity", "rows", "link_multiplier", "copy_multiplier", "object_size", "compression",
          "whole_objects", "link_rate", "cluster_cores", "storage_hosts", "compute_hosts")
MEASURES = ("total_s", "storage_cpu_s", "compute_cpu_s", "cls_read_bytes", "cls_rows_in", "cls_reply_bytes",
            "cls_rows_out", "cls_whole_objects", "compute_rx_bytes", "storage_idle_cpu_rate", "compute_idle_cpu_rate",
            "storage_idle_services_cpu_rate", "compute_idle_services_cpu_rate")
CAPACITIES = {"storage_cores": ("storage_cores_measured", "storage_cores_declared"),
              "compute_cores": ("compute_cores_measured", "compute_cores_declared"),
              "link_bps": ("link_rate_measured_bps", "link_rate_declared_bps")}


def cold(root: Path) -> set[tuple[str, int]]:
    """(point, repetition) of each recorded query that was the first of its Spark application
    (``raw/*.jsonl``) with no warm-up query before it: JIT compilation makes it up to 5x slower."""
    out = set()
    for log in sorted(Path(root, "raw").glob("*.jsonl")):
        if log.name.endswith(".ceph.jsonl"):
            continue
        first = next((e for e in json_lines(log) if e.get("event") == "rep"), None)
        if first and not first.get("discarded"):
            out.add((first["point"], first["repetition"]))
    return out


COLD = "cold queries (the first of their Spark application, no warm-up before)"
OTHER = "repetitions of other queries or projections (the model covers the scan of every column)"
UNMODELLED = f"repetitions of readers the model does not cover (it covers {', '.join(PATHS)})"
TENANT = "repetitions beside a second tenant on the storage side (the model counts the storage cores as the query's)"


def exclusions(run: Run) -> pd.Series:
    """Per measured repetition of ``run``, why the model leaves it out (:data:`COLD`,
    :data:`OTHER`, :data:`UNMODELLED`) or ``""``."""
    df, first = run.results, cold(run.root)
    query = df["query"].fillna(queries.SCAN.name) if "query" in df else pd.Series(queries.SCAN.name, index=df.index)
    columns = df["columns"] if "columns" in df else pd.Series([None] * len(df), index=df.index)
    why = pd.Series("", index=df.index, dtype=object)
    why[(query != queries.SCAN.name) | columns.map(lambda c: c is not None and len(c) > 0)] = OTHER
    if "reader" in df:
        why[~df["reader"].isin(list(PATHS))] = UNMODELLED
    for tenant in ("storage_load", "storage_scans"):
        if tenant in df:
            why[pd.to_numeric(df[tenant], errors="coerce").fillna(0) > 0] = TENANT
    why[[(pt, rep) in first for pt, rep in zip(df["point"], df["repetition"])]] = COLD
    return why


def observations(paths) -> tuple[pd.DataFrame, list[str]]:
    """Per run and point, medians of :data:`MEASURES` and capacities over the measured, warm
    repetitions the model covers; and one line per kind of repetition left out (:func:`exclusions`).
    UsageError naming a run that has no results or no measured capacities."""
    frames, left = [], collections.Counter()
    for p in paths:
        run = Run.load(p)
        run.label = str(run.root)
        why = exclusions(run)
        left.update(why[why != ""])
        frames.append(point_medians(run, run.results[why == ""].copy()))
    return pd.concat(frames, ignore_index=True), [f"{what}: {n}" for what, n in left.items()]


def point_medians(run: Run, df: pd.DataFrame) -> pd.DataFrame:
    """One row per point of ``run``: its parameters, the medians of the measures and capacities."""
    missing = [c for c in ("reader", "selectivity", "rows", "object_size", "total_s") if c not in df]
    if missing:
        raise UsageError(f"{run.root}: results.parquet has no {', '.join(missing)}; the model needs them")
    for name, columns in CAPACITIES.items():
        df[name] = np.nan
        for c in columns:
            if c in df:
                df[name] = df[name].fillna(pd.to_numeric(df[c], errors="coerce"))
        if df[name].isna().any():
            raise UsageError(f"{run.root}: no {columns[0]} in results.parquet; the model needs each point's "
                             f"measured capacities, which runs of a current sae record")
    measures = [c for c in (*MEASURES, *CAPACITIES) if c in df]
    params = [c for c in PARAMS if c in df]
    df = df.assign(**{c: pd.to_numeric(df[c], errors="coerce") for c in measures})
    out = df.groupby("point", sort=False).agg({**{c: "first" for c in params}, **{c: "median" for c in measures}})
    out["n"] = df.groupby("point", sort=False)["total_s"].count()
    out["times"] = df.groupby("point", sort=False)["total_s"].agg(list)
    out["run"] = run.label
    return out.reset_index()


def config_of(row) -> Config:
    """The :class:`Config` of an observed point."""
    links = int(row.get("link_multiplier", 1) or 1) * int(row.get("copy_multiplier", 1) or 1)
    hosts = lambda side: set(str(row.get(f"{side}_hosts") or "").split(",")) - {""}  # noqa: E731
    shared = str(row.get("cluster_cores")) == "shared" or bool(hosts("storage") & hosts("compute"))
    compression, whole = row.get("compression"), row.get("whole_objects")
    return Config(float(row["selectivity"]), float(row["rows"]) * links, int(row["object_size"]),
                  float(row["storage_cores"]), float(row["compute_cores"]), float(row["link_bps"]),
                  compression if isinstance(compression, str) else "zstd",
                  True if whole is None or pd.isna(whole) else bool(whole), links, shared,
                  len(hosts("storage")) or 1, len(hosts("compute")) or 1)


# ---- the fit

def fit_shape(data: pd.DataFrame) -> Shape:
    """Stored bytes per row (the class's reads, else vanilla's received bytes) and reply bytes per
    row by codec (replies that are not whole objects); UsageError when the runs cannot tell."""
    num = lambda c: data[c] if c in data else pd.Series(np.nan, index=data.index)  # noqa: E731
    scanned = data["rows"] * data.get("link_multiplier", 1) * data.get("copy_multiplier", 1)
    stored = (num("cls_read_bytes") / num("cls_rows_in")).dropna()
    if stored.empty:
        stored = (num("compute_rx_bytes") / scanned)[data["reader"].map(path) == FILES].dropna()
    filtered = (num("cls_whole_objects").fillna(0) == 0) & (num("cls_rows_out") > 0)
    reply = (num("cls_reply_bytes") / num("cls_rows_out"))[filtered].groupby(data["compression"]).median().dropna()
    if stored.empty:
        raise UsageError("the runs record no stored bytes per row (cls_read_bytes, or vanilla's compute_rx_bytes)")
    return Shape(float(stored.median()), tuple((str(c), float(b)) for c, b in reply.items()))


def identified(design: np.ndarray, names: list[str]) -> dict[str, str]:
    """Column name → why it cannot be fitted: never exercised (all zero), or a combination of
    the earlier columns kept (too few points, or varied together with them)."""
    scaled = design / np.where(np.abs(design).max(axis=0) > 0, np.abs(design).max(axis=0), 1)
    kept, why = [], {}
    for j, name in enumerate(names):
        if not np.any(scaled[:, j]):
            why[name] = "the runs never exercise it"
            continue
        trial = scaled[:, kept + [j]]
        if np.linalg.matrix_rank(trial, tol=1e-9 * max(1, len(trial))) > len(kept):
            kept.append(j)
            continue
        coef = np.linalg.lstsq(scaled[:, kept], scaled[:, j], rcond=None)[0]
        with_ = [names[k] for k, c in zip(kept, coef) if abs(c) > 1e-6]
        why[name] = (f"{len(design)} points are too few" if len(kept) >= len(design) else
                     f"in these runs it moves in step with {', '.join(with_)}")
    return why


def solve(design: np.ndarray, target: np.ndarray, names: list[str], upper: list[float]) -> tuple[dict, dict]:
    """(name → value, name → why not fitted): bounded least squares on the identified columns."""
    from scipy.optimize import lsq_linear
    why = identified(design, names)
    cols = [j for j, n in enumerate(names) if n not in why]
    values = dict.fromkeys(names, 0.0)
    if cols:
        scale = np.abs(design[:, cols]).max(axis=0)
        res = lsq_linear(design[:, cols] / scale, target, bounds=(0, np.array([upper[j] for j in cols]) * scale))
        tiny = 1e-9 * max(1.0, float(np.abs(target).max(initial=0)))   # the solver's zeros, as zeros
        values.update({names[j]: float(x / s) if x > tiny else 0.0 for j, x, s in zip(cols, res.x, scale)})
    return values, why


def fit(paths) -> Model:
    """The model fitted on the run directories ``paths`` (each as ``sae run`` printed it or an
    experiment's directory holding ``latest``). UsageError naming what is missing."""
    paths = list(paths)
    if not paths:
        raise UsageError("advise needs one or more run directories to fit on")
    data, left = observations(paths)
    if data.empty:
        raise UsageError(f"{', '.join(map(str, paths))}: no point the model covers (left out: {'; '.join(left)})")
    return fit_observations(data, left)


def fit_observations(data: pd.DataFrame, left_out=()) -> Model:
    """The model fitted on per-point observations (:func:`observations`' frame)."""
    runs = tuple(dict.fromkeys(data["run"])) if "run" in data else ()
    seen = [r for r in PATHS if "reader" in data and r in set(data["reader"])]
    if not set(seen) & set(SUBJECTS) or not set(seen) & set(BASES):
        raise UsageError(f"{', '.join(runs) or 'the runs'}: measured readers {', '.join(seen) or 'none'}; the "
                         f"model needs {' or '.join(SUBJECTS)} and a baseline ({', '.join(BASES)}) to fit on")
    shape = fit_shape(data)
    connector = data["reader"].map(path) != FILES
    codecs = sorted(set(data.loc[connector, "compression"].dropna()) & {c for c, _ in shape.reply_bytes_per_row})
    data = data[~connector | data["compression"].isin(codecs)]
    configs = [config_of(row) for _, row in data.iterrows()]
    vols = [volumes(r, c, shape, s) for r, c, s in zip(data["reader"], configs, data["total_s"].astype(float))]
    all_terms = terms(seen, codecs)
    constants = []
    for target in ("storage_cpu_s", "compute_cpu_s"):
        measured = [_measured(t, data) for t in all_terms if t.target == target and t.measured]
        ts = [t for t in all_terms if t.target == target and not t.measured]
        known = data[target].notna().to_numpy() if target in data else np.zeros(len(data), bool)
        design = np.array([[t.volume(v) for t in ts] for v, k in zip(vols, known) if k]).reshape(-1, len(ts))
        beside = np.array([sum(c.value * t.volume(v) for t, c in measured) for v, k in zip(vols, known) if k])
        got, why = solve(design, data.loc[known, target].to_numpy(float) - beside.reshape(-1),
                         [t.name for t in ts], [t.upper for t in ts])
        constants += [c for _, c in measured]
        constants += [Constant(t.name, got[t.name], t.unit, t.what, t.name not in why, why.get(t.name, ""))
                      for t in ts]
    partial = Model(shape, tuple(constants), tuple(seen), runs, len(data), tuple(left_out), configs[0],
                    tuple(all_terms))
    return fit_time(partial, data, configs, vols)


def _measured(term: Term, data: pd.DataFrame) -> tuple[Term, Constant]:
    """``term`` and its constant: the median of its ``measured`` column over the points that
    recorded it, else not fitted (0)."""
    values = pd.to_numeric(data[term.measured], errors="coerce").dropna() if term.measured in data else pd.Series(dtype=float)
    if values.empty:
        return term, Constant(term.name, 0.0, term.unit, term.what, False,
                              f"the runs recorded no {term.measured} (an application's idle window, with monitoring; "
                              f"a host running only the side's executor or OSD)")
    return term, Constant(term.name, float(values.median()), term.unit, f"{term.what}, measured", True)


def fit_time(partial: Model, data: pd.DataFrame, configs, vols) -> Model:
    """The model with its time constants (:data:`TIME_TERMS`) fitted on ``total_s``."""
    rows, target = [], []
    for config, v, total in zip(configs, vols, data["total_s"].astype(float)):
        cpu, transfer = bottlenecks(partial.work(v, "storage_cpu_s"), partial.work(v, "compute_cpu_s"),
                                    v.wire_bytes, config)
        rows.append([1.0, v.objects / config.compute_cores, min(cpu, transfer)])
        target.append(total - max(cpu, transfer))
    names = [n for n, _, _ in TIME_TERMS]
    got, why = solve(np.array(rows), np.array(target), names, [math.inf, math.inf, 1.0])
    time = tuple(Constant(n, got[n], unit, what, n not in why, why.get(n, "")) for n, unit, what in TIME_TERMS)
    return dataclasses.replace(partial, constants=partial.constants + time)
