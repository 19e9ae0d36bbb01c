"""Report plots in the paper's shapes, from a run's tidy results and metric windows.

* ``selectivity.png``: median query time vs selectivity, band p1–p99, one line per configuration.
* ``objectsize.png``: stacked init/compute bars (medians) per object size, one panel per selectivity.
* ``resources-<metric>.png``: per-node CPU / network over a repetition, stacked, with the area
  under the curve, one panel per configuration (e.g. offload vs not).
* ``points.png``: median time per point when the sweep varies something else.

Warm-up repetitions are excluded from every statistic (they stay in results.parquet).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from metareserve import parse_size  # noqa: E402

from .results import RunDir, load_results  # noqa: E402

CONFIG = ("reader", "offload", "compression", "batch_size", "object_size", "rows",
          "link_multiplier", "nodes", "store")
METRICS = {"cpu": "CPU busy (%)", "net": "network bytes/s (rx + tx)"}


def stats(df: pd.DataFrame, by: list[str], value: str = "total_s") -> pd.DataFrame:
    """Median, p1 and p99 of ``value`` over non-warm-up repetitions, grouped by ``by``."""
    d = df[~df["warmup"]].astype({value: float})
    g = d.groupby(by, dropna=False)[value]
    return pd.DataFrame({"median": g.median(), "p1": g.quantile(0.01), "p99": g.quantile(0.99),
                         "n": g.size()}).reset_index()


def _varying(df: pd.DataFrame, columns) -> list[str]:
    return [c for c in columns if c in df and df[c].astype(str).nunique() > 1]


def _label(row, keys) -> str:
    return ", ".join(f"{k}={row[k]}" for k in keys) or "all"


def plot_selectivity(df: pd.DataFrame, out: Path) -> Path:
    """Selectivity curve: median total time with a p1–p99 band per configuration."""
    keys = _varying(df, CONFIG)
    s = stats(df, keys + ["selectivity"]).sort_values("selectivity")
    fig, ax = plt.subplots(figsize=(6, 4))
    for cfg, grp in (s.groupby(keys, dropna=False) if keys else [((), s)]):
        label = _label(grp.iloc[0], keys)
        ax.plot(grp["selectivity"], grp["median"], marker="o", label=label)
        ax.fill_between(grp["selectivity"], grp["p1"], grp["p99"], alpha=0.2)
    ax.set_xlabel("selectivity (% of rows kept)")
    ax.set_ylabel("query time (s), median, p1–p99")
    ax.set_title("Selectivity")
    ax.legend(fontsize="small")
    return _save(fig, out / "selectivity.png")


def plot_objectsize(df: pd.DataFrame, out: Path) -> Path:
    """Stacked init/compute bars (medians) per object size; a panel per selectivity."""
    sels = sorted(df["selectivity"].unique())
    keys = _varying(df, [c for c in CONFIG if c != "object_size"])
    fig, axes = plt.subplots(1, len(sels), figsize=(4 * len(sels) + 1, 4), squeeze=False)
    for ax, sel in zip(axes[0], sels):
        d = df[df["selectivity"] == sel]
        init = stats(d, ["object_size"] + keys, "init_s")
        comp = stats(d, ["object_size"] + keys, "compute_s")
        order = [parse_size(s, what="object size") for s in init["object_size"]]
        init = init.assign(order=order).sort_values(["order"] + keys)
        comp = comp.set_index(["object_size"] + keys).loc[
            list(init.set_index(["object_size"] + keys).index)].reset_index()
        labels = [_label(r, ["object_size"] + keys).replace("object_size=", "") for _, r in init.iterrows()]
        x = range(len(labels))
        ax.bar(x, init["median"], label="init")
        ax.bar(x, comp["median"], bottom=init["median"].values, label="compute")
        ax.set_xticks(list(x), labels, rotation=30, ha="right", fontsize="small")
        ax.set_title(f"selectivity {sel}%")
        ax.set_ylabel("time (s), median")
    axes[0][0].legend()
    return _save(fig, out / "objectsize.png")


def plot_points(df: pd.DataFrame, out: Path) -> Path:
    """Median total time per point (fallback when neither selectivity nor object size varies)."""
    keys = _varying(df, list(CONFIG) + ["selectivity"])
    s = stats(df, ["order"] + keys).sort_values("order")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(range(len(s)), s["median"], yerr=[s["median"] - s["p1"], s["p99"] - s["median"]])
    ax.set_xticks(range(len(s)), [_label(r, keys) for _, r in s.iterrows()], rotation=30,
                  ha="right", fontsize="small")
    ax.set_ylabel("query time (s), median, p1–p99")
    return _save(fig, out / "points.png")


def _net(metric: pd.Series) -> pd.Series:
    return metric.replace({"net_rx": "net", "net_tx": "net"})


def load_windows(run: RunDir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Metric windows of every exported repetition (monitor_deploy's ``metrics.parquet`` and
    ``auc.parquet``): series as point, repetition, metric (``cpu``, ``net`` = received +
    transmitted), node, t (seconds into the window), value; and areas as point, repetition,
    metric, node, auc."""
    series, areas = [], []
    for f in sorted(run.metrics.glob("*/rep*/metrics.parquet")):
        ids = {"point": f.parent.parent.name, "repetition": int(f.parent.name[3:])}
        w = pd.read_parquet(f, columns=["timestamp", "node", "metric", "value"]).assign(
            metric=lambda d: _net(d["metric"]))
        w = w[w["metric"].isin(list(METRICS))]
        w = w.groupby(["metric", "node", "timestamp"], as_index=False)["value"].sum()
        series.append(w.assign(t=w["timestamp"] - w["timestamp"].min(), **ids))
        a = pd.read_parquet(f.with_name("auc.parquet"), columns=["metric", "node", "auc"])
        a = a.assign(metric=_net(a["metric"])).groupby(["metric", "node"], as_index=False)["auc"].sum()
        areas.append(a.assign(**ids))
    if not series:
        return (pd.DataFrame(columns=["point", "repetition", "metric", "node", "t", "value"]),
                pd.DataFrame(columns=["point", "repetition", "metric", "node", "auc"]))
    return pd.concat(series, ignore_index=True), pd.concat(areas, ignore_index=True)


def plot_resources(df: pd.DataFrame, windows: pd.DataFrame, areas: pd.DataFrame, out: Path) -> list[Path]:
    """Per-node CPU and network over one representative (median) repetition per configuration,
    stacked by node, titled with the total area under the curves."""
    keys = _varying(df, list(CONFIG) + ["selectivity"])
    d = df[~df["warmup"]]
    reps = []
    for _, grp in (d.groupby(keys, dropna=False) if keys else [((), d)]):
        med = grp.iloc[(grp["total_s"] - grp["total_s"].median()).abs().argsort().iloc[0]]
        reps.append((_label(med, keys), med["point"], med["repetition"]))
    paths = []
    for metric, ylabel in METRICS.items():
        m = windows[windows["metric"] == metric]
        if m.empty:
            continue
        fig, axes = plt.subplots(1, len(reps), figsize=(4.5 * len(reps) + 1, 3.6), squeeze=False,
                                 sharey=True)
        for ax, (label, point, rep) in zip(axes[0], reps):
            w = m[(m["point"] == point) & (m["repetition"] == rep)]
            wide = w.pivot_table(index="t", columns="node", values="value", aggfunc="sum").fillna(0)
            if not wide.empty:
                ax.stackplot(wide.index, *[wide[c] for c in wide.columns], labels=list(wide.columns))
            a = areas[(areas["point"] == point) & (areas["repetition"] == rep)
                      & (areas["metric"] == metric) & (areas["node"] == "total")]["auc"]
            ax.set_title(f"{label}\nAUC {a.sum():.3g}", fontsize="small")
            ax.set_xlabel("seconds into repetition")
        axes[0][0].set_ylabel(ylabel)
        axes[0][0].legend(fontsize="small", loc="upper left")
        paths.append(_save(fig, out / f"resources-{metric}.png"))
    return paths


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def make_report(path) -> list[Path]:
    """Write every plot that fits the run's sweep into ``report/``; returns their paths."""
    run = RunDir.find(path)
    df = load_results(run.root)
    run.report.mkdir(exist_ok=True)
    if df.empty or df.loc[~df["warmup"], "total_s"].isna().all():
        return []
    paths = []
    varies = _varying(df, ["selectivity", "object_size"])
    if "selectivity" in varies:
        paths.append(plot_selectivity(df, run.report))
    if "object_size" in varies:
        paths.append(plot_objectsize(df, run.report))
    if not varies:
        paths.append(plot_points(df, run.report))
    windows, areas = load_windows(run)
    if not windows.empty:
        paths += plot_resources(df, windows, areas, run.report)
    return paths
