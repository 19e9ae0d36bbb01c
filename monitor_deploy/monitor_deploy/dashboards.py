"""Grafana dashboards (grafanalib) and provisioning files for the monitoring Prometheus.

No Grafana server is installed by this package: the JSON and provisioning files are written
for the user to import (Grafana → Dashboards → Import, or copy the provisioning directory into
``/etc/grafana/provisioning``). :func:`panel_queries` lists every panel's PromQL so tests and
users can check them against Prometheus.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from grafanalib._gen import DashboardEncoder
from grafanalib.core import Dashboard, GridPos, Target, Templating, Time, TimeSeries

from metareserve.errors import UsageError

from .metrics import METRICS, NODE_LABEL
from .targets import SLOW_INTERVAL

DATASOURCE = "Prometheus"
GRAFANA_SOURCE = "https://apt.grafana.com/gpg.key"

SPARK_PANELS = [
    ("Alive workers", 'metrics_master_aliveWorkers_Value', "{{job}}", "short"),
    ("Running applications", 'metrics_master_apps_Value', "{{job}}", "short"),
    ("Worker cores used", 'metrics_worker_coresUsed_Value', "{{%s}}" % NODE_LABEL, "short"),
    ("Worker memory used", 'metrics_worker_memUsed_MB_Value', "{{%s}}" % NODE_LABEL, "decmbytes"),
    ("Executor active tasks", 'sum by (executor_id) (metrics_executor_activeTasks)', "executor {{executor_id}}", "short"),
    ("Executor input bytes/s", 'sum by (executor_id) (rate(metrics_executor_totalInputBytes_bytes_total[{w}]))',
     "executor {{executor_id}}", "Bps"),
]


def _per_daemon(title: str, counter: str, unit: str) -> tuple[str, str, str, str]:
    """A panel spec of ``counter``'s rate per Ceph daemon."""
    return title, f"sum by (ceph_daemon) (rate({counter}[{{w}}]))", "{{ceph_daemon}}", unit


CEPH_PANELS = [
    ("OSDs up", 'sum(ceph_osd_up)', "up", "short"),
    _per_daemon("OSD read ops/s", "ceph_osd_op_r", "ops"),
    _per_daemon("OSD write ops/s", "ceph_osd_op_w", "ops"),
    _per_daemon("OSD read bytes/s", "ceph_osd_op_r_out_bytes", "Bps"),
    _per_daemon("OSD write bytes/s", "ceph_osd_op_w_in_bytes", "Bps"),
    _per_daemon("OSD class calls/s", "ceph_osd_op_rw", "ops"),
]
RGW_PANELS = [
    _per_daemon("RGW requests/s", "ceph_rgw_req", "reqps"),
    _per_daemon("RGW failed requests/s", "ceph_rgw_failed_req", "reqps"),
    _per_daemon("RGW PUTs/s", "ceph_rgw_put", "reqps"),
    _per_daemon("RGW GETs/s", "ceph_rgw_get", "reqps"),
    _per_daemon("RGW bytes put/s", "ceph_rgw_put_b", "Bps"),
    _per_daemon("RGW bytes got/s", "ceph_rgw_get_b", "Bps"),
]
"""The RADOS Gateway's perf counters as the mgr's prometheus module exports them (Ceph 16 counts
requests, failed ones, GETs and PUTs and their bytes; operations by type: rados_deploy's
``CephCluster.op_counters``): a dashboard of their own, empty where no gateway runs."""


def _panels(specs, *, window: str = "", width: int = 12, height: int = 8) -> list[TimeSeries]:
    return [TimeSeries(title=title, dataSource=DATASOURCE, unit=unit,
                       targets=[Target(expr=expr.replace("{w}", window), legendFormat=legend, refId="A")],
                       gridPos=GridPos(h=height, w=width, x=(i % 2) * width, y=(i // 2) * height))
            for i, (title, expr, legend, unit) in enumerate(specs)]


def node_panel_specs() -> list[tuple[str, str, str, str]]:
    """(title, PromQL, legend, unit) of the per-node panels: CPU, memory, network, disk."""
    return [(m.title, m.record + f'{{{NODE_LABEL}=~"$node"}}', "{{%s}}" % NODE_LABEL, m.grafana_unit)
            for m in METRICS.values()]


def build_dashboards(reservation_name: str, scrape_interval: float) -> dict[str, Dashboard]:
    """Dashboard file stem → grafanalib Dashboard: nodes, Spark, Ceph, its RADOS Gateways.

    Spark and Ceph rates span four scrapes of those (slow, see ``targets.SLOW_INTERVAL``) jobs.
    """
    window = f"{int(4 * max(scrape_interval, SLOW_INTERVAL))}s"
    node_var = Templating(list=[{
        "name": "node", "type": "query", "datasource": DATASOURCE, "multi": True, "includeAll": True,
        "query": f"label_values({METRICS['cpu'].record}, {NODE_LABEL})", "refresh": 2,
        "current": {"text": "All", "value": "$__all"}}])
    common = dict(time=Time("now-15m", "now"), refresh="5s", tags=["sae", reservation_name])

    def dash(stem: str, title: str, panels, **extra) -> Dashboard:
        return Dashboard(title=f"sae {title} ({reservation_name})", uid=f"{stem}-{reservation_name}"[:40],
                         panels=panels, **common, **extra).auto_panel_ids()
    return {"sae-nodes": dash("sae-nodes", "nodes", _panels(node_panel_specs()), templating=node_var),
            "sae-spark": dash("sae-spark", "Spark", _panels(SPARK_PANELS, window=window)),
            "sae-ceph": dash("sae-ceph", "Ceph", _panels(CEPH_PANELS, window=window)),
            "sae-rgw": dash("sae-rgw", "RADOS Gateway", _panels(RGW_PANELS, window=window))}


def panel_queries(dashboard_json: dict) -> list[tuple[str, str]]:
    """(panel title, PromQL) for every panel target of a dashboard's JSON."""
    return [(p["title"], t["expr"]) for p in dashboard_json.get("panels", []) for t in p.get("targets", [])]


def write_dashboards(monitoring, out_dir) -> list[Path]:
    """Write dashboard JSON files plus Grafana provisioning (datasource + dashboard provider)
    under ``out_dir``; returns the paths written. Idempotent (same input, same files)."""
    out = Path(out_dir)
    try:
        (out / "dashboards").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"dashboard: cannot make {out / 'dashboards'} ({e.strerror}); give a directory you "
                         f"can write") from None
    paths = []
    for stem, dash in build_dashboards(monitoring.reservation.name, monitoring.options.interval_seconds).items():
        p = out / "dashboards" / f"{stem}.json"
        p.write_text(json.dumps(dash.to_json_data(), cls=DashboardEncoder, indent=2, sort_keys=True))
        paths.append(p)
    prov = out / "provisioning"
    (prov / "datasources").mkdir(parents=True, exist_ok=True)
    (prov / "dashboards").mkdir(parents=True, exist_ok=True)
    datasource = {"apiVersion": 1, "datasources": [{
        "name": DATASOURCE, "type": "prometheus", "access": "proxy", "url": monitoring.url, "isDefault": True,
        "jsonData": {"timeInterval": monitoring.options.scrape_interval}}]}
    provider = {"apiVersion": 1, "providers": [{
        "name": "sae", "folder": "sae", "type": "file", "allowUiUpdates": True,
        "options": {"path": str((out / "dashboards").resolve())}}]}
    for path, doc in ((prov / "datasources" / "sae.yaml", datasource), (prov / "dashboards" / "sae.yaml", provider)):
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    return paths


def grafana_source_reachable(monitoring, timeout: float = 5.0) -> bool:
    """True if the prometheus node reaches Grafana's package source (apt.grafana.com)."""
    from metareserve import node_agent
    node = monitoring.prometheus_node
    r = monitoring.cluster.call(node_agent, "http_get", GRAFANA_SOURCE, timeout, nodes=[node],
                                stage="grafana probe")[node.name]
    return r["status"] == 200


def import_instructions(monitoring, out_dir) -> str:
    """One paragraph telling the user how to load the written dashboards into a Grafana."""
    out = Path(out_dir)
    return (f"Import {out / 'dashboards'}/*.json in Grafana (Dashboards > New > Import; data source "
            f"'Prometheus' at {monitoring.url}), or copy {out / 'provisioning'} to /etc/grafana/provisioning "
            f"and restart Grafana. Without Grafana, Prometheus' own UI is at {monitoring.url}/graph.")
