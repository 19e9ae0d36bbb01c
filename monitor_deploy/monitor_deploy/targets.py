"""Scrape jobs from a layout, and the Prometheus configuration and rules rendered from them."""
from __future__ import annotations

import dataclasses

import jinja2
import yaml

from metareserve import Layout, Reservation

from .metrics import METRICS, NODE_LABEL, source_for
from .options import MonitorOptions

SLOW_INTERVAL = 5.0
"""Seconds between scrapes of slow endpoints: Spark's servlets (master, worker, driver, executors)
answer in seconds on a busy 2-core machine, and the Ceph mgr module refreshes its cache every few
seconds. Each scrape costs the JVM serving it: on 17 hosts sharing 2 cores, the eight workers' web
UI threads spent 4 ms a second each answering 1-s scrapes, counted in their hosts' CPU."""

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("monitor_deploy", "templates"),
                          trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                          keep_trailing_newline=True)


@dataclasses.dataclass(frozen=True)
class Target:
    """One scrape target: ``address`` (host:port) on node ``node``."""

    node: str
    address: str


@dataclasses.dataclass(frozen=True)
class Job:
    """A scrape job: name, metrics path, targets; ``honor_labels`` keeps exported labels;
    ``slow`` endpoints (JVM servlets, the Ceph mgr) get at least :data:`SLOW_INTERVAL`."""

    name: str
    path: str
    targets: tuple[Target, ...]
    honor_labels: bool = False
    slow: bool = False


def scrape_jobs(reservation: Reservation, layout: Layout, options: MonitorOptions) -> list[Job]:
    """The scrape jobs for the roles present in ``layout``: nodes, Spark, Ceph mgr.

    node_exporter runs on every node; Spark and Ceph jobs exist only for roles the layout fills.
    """
    def on(role: str, port: int, address: str | None = None) -> tuple[Target, ...]:
        return tuple(Target(n.name, f"{address or n.cluster_address}:{port}")
                     for n in layout.nodes(reservation, role))

    o = options
    jobs = [Job("node", "/metrics", tuple(Target(n.name, f"{n.cluster_address}:{o.node_exporter_port}")
                                          for n in reservation.nodes))]
    master, worker = on("spark-master", o.spark_master_ui_port), on("spark-worker", o.spark_worker_ui_port)
    driver = on("driver", o.driver_ui_port, o.driver_address)
    jobs += [Job("spark-master", "/metrics/master/prometheus/", master, slow=True),
             Job("spark-applications", "/metrics/applications/prometheus/", master, slow=True),
             Job("spark-worker", "/metrics/prometheus/", worker, slow=True),
             Job("spark-driver", "/metrics/prometheus/", driver, slow=True),
             Job("spark-executors", "/metrics/executors/prometheus/", driver, slow=True),
             Job("ceph-mgr", "/metrics", on("ceph-mgr", o.ceph_mgr_port), honor_labels=True, slow=True)]
    return [j for j in jobs if j.targets]


def render_config(reservation: Reservation, layout: Layout, options: MonitorOptions, *,
                  rules_file: str) -> str:
    """prometheus.yml for this reservation and layout."""
    timeout = min(options.interval_seconds, 10.0)
    slow = max(options.interval_seconds, SLOW_INTERVAL)
    extra = yaml.safe_dump(options.extra_jobs, sort_keys=False) if options.extra_jobs else ""
    return _ENV.get_template("prometheus.yml.j2").render(
        reservation=reservation.name, options=options, jobs=scrape_jobs(reservation, layout, options),
        rules_file=rules_file, node_label=NODE_LABEL, extra_jobs=extra,
        scrape_timeout=f"{int(timeout * 1000)}ms", slow_interval=f"{int(slow * 1000)}ms")


def render_rules(reservation: Reservation, options: MonitorOptions) -> str:
    """The recording rules giving one per-node series per :data:`METRICS` entry."""
    return _ENV.get_template("rules.yml.j2").render(
        source=source_for(reservation.provider), metrics=list(METRICS.values()),
        window=options.rate_window, interval=options.scrape_interval)
