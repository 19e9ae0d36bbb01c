"""Export a metrics window: per-node series → tidy Parquet, area under curve, stacked plots.

Everything is written into a temporary sibling directory first and renamed into place at the
end, so a failed export leaves nothing behind.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from metareserve.errors import OperationalError, UsageError

from .frames import write_frame
from .metrics import COUNTERS, METRICS, NODE_LABEL, source_for
from .options import parse_time, step_seconds

MAX_POINTS = 10000  # Prometheus refuses query_range with more than 11,000 points per series
READ_TIME = "sae_vhost_cpu_read_time_seconds"
"""The cgroup exporter's gauge of when it read the CPU time a scrape returns (monitor_deploy.vhost)."""
AUC_UNITS = {"%": "%·s", "bytes": "byte·s", "B/s": "bytes"}


@dataclasses.dataclass
class ExportResult:
    """What :func:`export_window` wrote: the tidy series, the AUC table and the plots."""

    out_dir: Path
    parquet: Path
    auc_path: Path
    plots: dict[str, Path]
    data: pd.DataFrame
    auc: pd.DataFrame

    @property
    def auc_dict(self) -> dict[str, dict[str, float]]:
        """metric → {node: area under curve, ..., "total": sum over nodes}."""
        out: dict[str, dict[str, float]] = {}
        for row in self.auc.itertuples():
            out.setdefault(row.metric, {})[row.node] = row.auc
        return out


def export_window(monitoring, start, end, out_dir, *, step=None, nodes=None, metrics=None,
                  overwrite: bool = False, plots: bool = True) -> ExportResult:
    """Query every per-node metric between ``start`` and ``end`` and write into ``out_dir``:
    ``metrics.parquet`` (columns time, timestamp, node, metric, value, unit), ``auc.parquet`` and
    ``auc.csv`` (area under each node's curve by Simpson's rule, plus a ``total`` row per metric),
    ``counters.parquet`` (raw samples of :data:`~monitor_deploy.metrics.COUNTERS` with their
    scrape times, one scrape interval either side: :func:`counter_totals` turns them into
    CPU-seconds and bytes per node over any interval inside the window),
    ``<metric>.png`` (one stacked per-node plot per metric) and ``window.json``.

    ``start``/``end`` are epoch seconds or ISO times; ``step`` defaults to the scrape interval;
    ``nodes`` and ``metrics`` (keys of :data:`~monitor_deploy.metrics.METRICS`) default to all.
    ``plots=False`` skips the PNGs (most of an export's CPU time), e.g. for many short windows.
    Raises UsageError for a bad window, node or metric, OperationalError when Prometheus is down
    or holds no samples for the window; nothing is written then.
    """
    result = export_windows(monitoring, [(start, end, out_dir)], step=step, nodes=nodes, metrics=metrics,
                            overwrite=overwrite, plots=plots)[0]
    if isinstance(result, Exception):
        raise result
    return result


def export_windows(monitoring, windows, *, step=None, nodes=None, metrics=None, overwrite: bool = False,
                   plots: bool = True) -> list[ExportResult | UsageError | OperationalError]:
    """Export each ``(start, end, out_dir)`` of ``windows`` as :func:`export_window` does, querying
    Prometheus once per series for windows that lie close together (a query's span holds at most
    :data:`MAX_POINTS` steps) instead of once per window (the main job's 59 windows: 14 range
    queries instead of about 830, in the same second or so as four windows at a time took).
    Returns, in order, each window's result or the UsageError or OperationalError that left it
    unwritten; a bad metric or node raises."""
    keys = list(metrics or METRICS)
    unknown = [k for k in keys if k not in METRICS]
    if unknown:
        raise UsageError(f"export: unknown metric(s) {', '.join(unknown)} (known: {', '.join(METRICS)})")
    names = [monitoring.reservation.node(n).name for n in nodes] if nodes else \
        [n.name for n in monitoring.reservation.nodes]
    results: list = [None] * len(windows)
    parsed: list[_Window] = []
    for i, (start, end, out_dir) in enumerate(windows):
        try:
            t0, t1 = parse_time(start, what="start"), parse_time(end, what="end")
            if t1 <= t0:
                raise UsageError(f"export: empty window (end {end!r} is not after start {start!r})")
            out_dir = Path(out_dir)
            if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
                raise UsageError(f"export: {out_dir} exists and is not empty; pick a new directory or pass overwrite")
            step_s = max(step_seconds(step, monitoring.options.interval_seconds), math.ceil((t1 - t0) / MAX_POINTS))
            parsed.append(_Window(i, t0, t1, out_dir, step_s))
        except UsageError as e:
            results[i] = e
    for group in _query_groups(parsed):
        t0, t1, step_s = group[0].start, max(w.end for w in group), group[0].step
        try:
            data = collect(monitoring, t0, t1, step_s, names, keys)
            now = time.time()
            counters = collect_counters(monitoring, t0, t1, names)
        except OperationalError as e:
            for w in group:
                results[w.index] = e
            continue
        for w in group:
            try:
                results[w.index] = _write_window(monitoring, _within(data, w.start, w.end),
                                                 _counters_within(monitoring, counters, w.start, w.end, now),
                                                 w.start, w.end, step_s, w.out_dir, names, keys, plots)
            except OperationalError as e:
                results[w.index] = e
    return results


@dataclasses.dataclass(frozen=True)
class _Window:
    """One window of :func:`export_windows`: its place in the call's list, bounds (epoch s),
    directory and step (s)."""

    index: int
    start: float
    end: float
    out_dir: Path
    step: float


def _query_groups(windows: list[_Window]) -> list[list[_Window]]:
    """``windows`` in groups, by start, each of one step and spanning at most :data:`MAX_POINTS`
    of its steps: what one range query per series covers."""
    groups: list[list[_Window]] = []
    for w in sorted(windows, key=lambda w: w.start):
        g = groups[-1] if groups else None
        if g and g[0].step == w.step and (max(w.end, *(x.end for x in g)) - g[0].start) / w.step <= MAX_POINTS:
            g.append(w)
        else:
            groups.append([w])
    return groups


def _within(data: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    return data[(data["timestamp"] >= t0) & (data["timestamp"] <= t1)].reset_index(drop=True)


def _counters_within(monitoring, counters: pd.DataFrame, t0: float, t1: float, now: float) -> pd.DataFrame:
    """The samples :func:`collect_counters` called at ``now`` gives for ``t0``..``t1``, cut from
    those it gave for a span holding it."""
    interval = monitoring.options.interval_seconds
    t_end = min(t1 + interval + max(counter_lags(monitoring).values()), now)
    first = t_end - math.ceil(t_end - t0 + interval)
    return counters[(counters["timestamp"] >= first) & (counters["timestamp"] <= t_end)].reset_index(drop=True)


def _write_window(monitoring, data: pd.DataFrame, counters: pd.DataFrame, t0: float, t1: float, step_s: float,
                  out_dir: Path, names: list[str], keys: list[str], plots: bool) -> ExportResult:
    """Write one window's files (:func:`export_window`) into ``out_dir``, through a temporary
    sibling renamed into place."""
    for key in keys:
        seen = set(data.loc[data["metric"] == key, "node"])
        missing = [n for n in names if n not in seen]
        if missing:
            raise OperationalError(
                f"[{monitoring.prometheus_node.name} monitor export] no samples of {METRICS[key].record} for "
                f"{', '.join(missing)} between {_iso(t0)} and {_iso(t1)}: the window lies outside the "
                f"recorded data or the node was not scraped; check 'monitor-deploy status'")
    auc = area_under_curves(data)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        write_frame(data, tmp / "metrics.parquet")
        write_frame(auc, tmp / "auc.parquet")
        auc.to_csv(tmp / "auc.csv", index=False)
        write_frame(counters, tmp / "counters.parquet")
        drawn = {k: plot_metric(data[data.metric == k], METRICS[k], tmp / f"{k}.png", t0)
                 for k in keys} if plots else {}
        (tmp / "window.json").write_text(json.dumps(
            {"start": t0, "end": t1, "step": step_s, "nodes": names, "counter_lags": counter_lags(monitoring),
             "queries": {k: METRICS[k].record for k in keys}, "prometheus": monitoring.url}, indent=1))
        _move_into_place(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportResult(out_dir, out_dir / "metrics.parquet", out_dir / "auc.parquet",
                        {k: out_dir / p.name for k, p in drawn.items()}, data, auc)


def collect(monitoring, t0: float, t1: float, step: float, nodes: list[str], keys: list[str]) -> pd.DataFrame:
    """Tidy frame of the recorded series for ``nodes`` and metric ``keys`` over [t0, t1] (a node
    without samples of a metric has no rows of it)."""
    selector = f'{{{NODE_LABEL}=~"{"|".join(nodes)}"}}'
    frames = []
    for key in keys:
        m = METRICS[key]
        for r in monitoring.client.query_range(m.record + selector, t0, t1, step):
            ts = [float(t) for t, _ in r["values"]]
            frames.append(pd.DataFrame({"timestamp": ts, "node": r["metric"][NODE_LABEL], "metric": key,
                                        "value": [float(v) for _, v in r["values"]], "unit": m.unit}))
    data = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {"timestamp": pd.Series(dtype=float), "node": pd.Series(dtype=object), "metric": pd.Series(dtype=object),
         "value": pd.Series(dtype=float), "unit": pd.Series(dtype=object)})
    data.insert(0, "time", pd.to_datetime(data["timestamp"], unit="s", utc=True))
    return data.sort_values(["metric", "node", "timestamp"], ignore_index=True)


def collect_counters(monitoring, t0: float, t1: float, nodes: list[str]) -> pd.DataFrame:
    """Raw samples (timestamp, node, counter, series, value, measured) of every counter for
    ``nodes`` as scraped (no rate, no recording rule), from one scrape interval before ``t0`` to
    one interval plus the counters' lag after ``t1`` (what has been scraped of it), so that
    :func:`counter_totals` finds a fresh scrape after activity ending at ``t1``. ``measured`` is
    when the value was read: the scrape time, except for the local cluster's cgroup CPU time,
    which its exporter read up to ``vhost_interval`` before the scrape (rates belong between
    these times)."""
    interval = monitoring.options.interval_seconds
    t_end = min(t1 + interval + max(counter_lags(monitoring).values()), time.time())
    span = math.ceil(t_end - t0 + interval)
    source = source_for(monitoring.reservation.provider)
    read_at = {}   # (node, scrape time) -> when the cgroup exporter read the CPU time it served
    if source == "cgroup":
        selector = f'{READ_TIME}{{job="node",{NODE_LABEL}=~"{"|".join(nodes)}"}}'
        for r in monitoring.client.query(f"{selector}[{span}s]", t_end):
            read_at.update({(r["metric"][NODE_LABEL], float(t)): float(v) for t, v in r["values"]})
    rows = []
    for key, c in COUNTERS.items():
        for r in monitoring.client.query(f"{c.selector(source, nodes)}[{span}s]", t_end):
            labels = ",".join(f"{k}={v}" for k, v in sorted(r["metric"].items()) if k != "__name__")
            node = r["metric"][NODE_LABEL]
            rows += [(float(t), node, key, labels, float(v),
                      read_at.get((node, float(t)), float(t)) if key == "cpu_seconds" else float(t))
                     for t, v in r["values"]]
    return pd.DataFrame(rows, columns=["timestamp", "node", "counter", "series", "value", "measured"])


def continued(values: np.ndarray) -> np.ndarray:
    """A counter's readings in time order, each reset continued from the value before it (an
    exporter that restarted counts from 0 again): a copy that never falls across a reset."""
    v = np.array(values, dtype=float)
    for i in np.flatnonzero(np.diff(v) < 0):   # a reset
        v[i + 1:] += v[i]
    return v


def _series_at(t: np.ndarray, v: np.ndarray, times) -> np.ndarray:
    """One counter series' value at ``times``: linearly interpolated between its samples (held
    flat outside them; after a reset it continues from the value before it)."""
    order = np.argsort(t, kind="stable")
    return np.interp(times, t[order], continued(v[order]))


def _series(samples: pd.DataFrame, by: list[str]):
    """(key, timestamps, values) of each group of ``samples`` by the columns ``by``, as arrays
    (a window holds dozens of small series: no frame is made per group)."""
    t, v = samples["timestamp"].to_numpy(dtype=float), samples["value"].to_numpy(dtype=float)
    for key, rows in samples.groupby(by, sort=False).indices.items():
        yield key, t[rows], v[rows]


def counter_values(samples: pd.DataFrame, times) -> dict[str, dict[str, np.ndarray]]:
    """counter → {node: value at each of ``times``}: each series linearly interpolated between
    its samples (held flat outside them; after a reset it continues from the value before it),
    summed per node. Differences between two times are what the node spent in between."""
    times = np.asarray(times, dtype=float)
    out: dict[str, dict[str, np.ndarray]] = {}
    for (counter, node, _), t, v in _series(samples, ["counter", "node", "series"]):
        node_values = out.setdefault(counter, {})
        node_values[node] = node_values.get(node, 0.0) + _series_at(t, v, times)
    return out


def read_by(monitoring) -> list[str]:
    """PromQL expressions, each the time (epoch s) up to which Prometheus holds a reading of every
    host's counters (:data:`~monitor_deploy.metrics.COUNTERS`) as :func:`counter_totals` reads
    them: the oldest of the node jobs' last scrapes, less the counters' lag
    (:func:`counter_lags`). Activity that ended at ``t`` is in a scrape of every host that
    :func:`counter_totals` takes as after it once each is at least ``t``, so a client can wait
    for that instead of a fixed interval."""
    return [f'min(timestamp(up{{job="node"}})) - {max(counter_lags(monitoring).values()):g}']


def counter_lags(monitoring) -> dict[str, float]:
    """Counter → how stale a scraped value may be (s): the local cluster's cgroup CPU counter is
    written every ``vhost_interval``; node_exporter reads everything else when scraped."""
    cgroup = source_for(monitoring.reservation.provider) == "cgroup"
    return {k: monitoring.options.vhost_interval if cgroup and k == "cpu_seconds" else 0.0 for k in COUNTERS}


def counter_totals(samples: pd.DataFrame, start: float, end: float, *, after: float | None = None,
                   before: float | None = None, lags: dict | None = None) -> dict[str, dict[str, float]]:
    """counter → {node: increase between ``start`` and ``end``}.

    Given the quiet interval around them (``after``: the end of the activity before ``start``,
    ``before``: the start of the activity after ``end``), each series is read at its samples
    closest to ``start`` and ``end`` inside that interval, allowing for the counter's lag (a
    scraped value may be ``lags[counter]`` seconds old), so the increase holds all of the
    activity and none of its neighbours'; where no such sample exists (or without ``after`` and
    ``before``: a host never quiet between activities, e.g. beside a second tenant) it is
    interpolated at ``start`` and ``end`` shifted by the lag (:func:`counter_values`), so the
    increase spans the activity's own interval."""
    out: dict[str, dict[str, float]] = {}
    for (counter, node, _), t, v in _series(samples, ["counter", "node", "series"]):
        lag = (lags or {}).get(counter, 0.0)
        lo = t[(t <= start) & (t >= after + lag)] if after is not None else t[:0]
        hi = t[(t >= end + lag) & (t <= before)] if before is not None else t[:0]
        if len(lo) or len(hi):
            a, b = _series_at(t, v, [lo.max() if len(lo) else start, hi.min() if len(hi) else end])
        else:
            a, b = _series_at(t, v, [start + lag, end + lag])
        out.setdefault(counter, {}).setdefault(node, 0.0)
        out[counter][node] += float(b - a)
    return out


def counter_gaps(samples: pd.DataFrame, start: float, end: float, nodes, interval: float) -> list[str]:
    """Why the counters of ``nodes`` do not fully cover ``start``..``end`` (empty: they do).

    Covered means: every counter of every node was scraped at or before ``start`` and at or after
    ``end``, each within 2.5 intervals of it (at most one scrape missed there: the readings at the
    edges are not spread over a long gap), and in between it either missed no more than one
    scrape or did not fall across a longer gap: a counter that falls was reset (an exporter
    restarted) and a gap hides part of it, while one that rose across a gap (Prometheus starved of
    CPU for a few seconds) still holds everything done in it."""
    gaps, empty = [], np.empty(0)
    scraped = {key: (t, v) for key, t, v in _series(samples, ["node", "counter"])}
    for node in nodes:
        for counter in COUNTERS:
            t, v = scraped.get((node, counter), (empty, empty))
            t, at = np.unique(t, return_inverse=True)   # each scrape's series summed
            v = np.bincount(at, weights=v, minlength=len(t))
            if not len(t) or t.min() > start or t.max() < end:
                where = "at all" if not len(t) else "before the start" if t.min() > start else "after the end"
                gaps.append(f"{node} {counter}: no scrape {where}")
                continue
            keep = (t >= t[t <= start].max()) & (t <= t[t >= end].min())   # the scrapes spanning it
            t, v = t[keep], v[keep]
            if len(t) < 2:
                continue
            step, rose = np.diff(t), np.diff(v) >= 0
            edges = np.zeros(len(step), bool)
            edges[[0, -1]] = True
            bad = (step > 2.5 * interval) & (edges | ~rose)
            if bad.any():
                gaps.append(f"{node} {counter}: {step[bad].max():.1f} s without a scrape"
                            f"{'' if edges[bad].any() else ' across which it fell'}")
    return gaps


def area_under_curves(data: pd.DataFrame) -> pd.DataFrame:
    """Area under each (metric, node) curve by Simpson's rule over time in seconds, plus totals."""
    from scipy.integrate import simpson   # here: scipy.integrate takes ~0.7 s to import, and every CLI imports this module
    rows = []
    for (metric, node), g in data.groupby(["metric", "node"], sort=False):
        auc = float(simpson(g["value"].to_numpy(), x=g["timestamp"].to_numpy())) if len(g) > 1 else 0.0
        rows.append({"metric": metric, "node": node, "auc": auc, "unit": AUC_UNITS[g["unit"].iloc[0]],
                     "samples": len(g)})
    auc = pd.DataFrame(rows)
    totals = auc.groupby("metric", sort=False).agg(auc=("auc", "sum"), unit=("unit", "first"),
                                                    samples=("samples", "sum")).reset_index()
    totals.insert(1, "node", "total")
    return pd.concat([auc, totals], ignore_index=True)


def plot_metric(data: pd.DataFrame, metric, path: Path, t0: float) -> Path:
    """One panel per node, stacked with a shared time axis (seconds since the window start)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    nodes = sorted(data["node"].unique())
    fig, axes = plt.subplots(len(nodes), 1, sharex=True, sharey=True, squeeze=False, figsize=(8, 1.6 * len(nodes) + 0.8))
    for ax, node in zip(axes[:, 0], nodes):
        g = data[data.node == node]
        ax.plot(g["timestamp"] - t0, g["value"], linewidth=1)
        ax.fill_between(g["timestamp"] - t0, g["value"], alpha=0.25)
        ax.set_ylabel(f"{node}\n{metric.unit}")
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(metric.title)
    axes[-1, 0].set_xlabel("time since window start (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _move_into_place(tmp: Path, out_dir: Path) -> None:
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out_dir)


def _iso(t: float) -> str:
    return pd.Timestamp(t, unit="s", tz="UTC").isoformat()
