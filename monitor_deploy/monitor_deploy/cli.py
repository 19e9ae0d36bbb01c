"""``monitor-deploy``: a thin click layer over :class:`monitor_deploy.Monitoring`."""
from __future__ import annotations

import dataclasses
import functools

import click
from metareserve.cli_support import (INT, Group, handle_errors, load_target, reservation_option, verbose_option,
                                     with_layout, writable_dir)
from metareserve.errors import OperationalError, UsageError
from metareserve.model import read_yaml

from .deploy import Monitoring
from .options import MonitorOptions, duration_seconds, parse_time


def load_options(path: str | None, **overrides) -> MonitorOptions:
    """MonitorOptions from a YAML file (keys = MonitorOptions fields) plus CLI overrides."""
    data = {}
    if path:
        data = read_yaml(path, "monitor options file") or {}
        known = {f.name for f in dataclasses.fields(MonitorOptions)}
        if not isinstance(data, dict) or set(data) - known:
            bad = sorted(set(data) - known) if isinstance(data, dict) else ["(not a mapping)"]
            raise UsageError(f"{path}: unknown monitor option(s) {', '.join(bad)} (known: {', '.join(sorted(known))})")
        try:
            MonitorOptions(**data)   # the file's values alone first: an error names the file
        except UsageError as e:
            raise UsageError(f"{path}: {e}") from None
    data.update({k: v for k, v in overrides.items() if v is not None})
    return MonitorOptions(**data)


def monitoring_command(fn):
    """Common options (reservation, layout, monitor options) → a ``mon`` argument; errors → exit codes."""
    @reservation_option
    @with_layout
    @click.option("--config", "config_file", metavar="FILE", help="YAML file of monitor options.")
    @click.option("--scrape-interval", help="Scrape and rule interval, e.g. 2s (default 2s).")
    @click.option("--retention", help="TSDB retention, e.g. 2d (default 2d).")
    @click.option("--prometheus-port", type=INT, help="Prometheus port (default 9090).")
    @verbose_option
    @functools.wraps(fn)
    @handle_errors
    def wrapper(reservation, layout_file, role_specs, config_file, scrape_interval, retention,
                prometheus_port, **kwargs):
        res, layout = load_target(reservation, layout_file, role_specs)
        options = load_options(config_file, scrape_interval=scrape_interval, retention=retention,
                               prometheus_port=prometheus_port)
        with Monitoring(res, layout, options) as mon:
            return fn(mon, **kwargs)
    return wrapper


@click.group(cls=Group)
def main():
    """Prometheus + node_exporter on a reservation; metric windows, plots and dashboards."""


def _stage(name: str, help_text: str):
    @main.command(name, help=help_text)
    @monitoring_command
    def command(mon):
        click.echo(getattr(mon, name)().summary())
    return command


for _name, _help in [("install", "Install Prometheus and node_exporter from distribution packages."),
                     ("start", "Start (or reload) Prometheus and node_exporters.\n\nWrites their configs first."),
                     ("stop", "Stop Prometheus, node_exporters and the local cgroup exporter."),
                     ("uninstall", "Stop everything and remove all monitoring state from the nodes.")]:
    _stage(_name, _help)


@main.command()
@monitoring_command
def status(mon):
    """Show the daemons per node and each scrape target's health.

    Exit 1 if a daemon is down."""
    report = mon.status()
    for node, outcome in report.nodes.items():
        click.echo(f"{node}: {outcome.message}")
    for t in report.details["targets"]:
        click.echo(f"  {t['job']:<19} {t['node'] or '-':<8} {t['health']:<7} {t['url']}"
                   + (f"  ({t['error']})" if t["error"] else ""))
    click.echo(f"prometheus: {mon.url}")
    if not report.details["ok"]:
        raise OperationalError("[monitor status] monitoring is not fully running; run 'monitor-deploy start'")


@main.command()
@monitoring_command
@click.option("--out", "out_dir", required=True, metavar="DIR", callback=writable_dir, help="Where to write dashboards.")
def dashboard(mon, out_dir):
    """Write Grafana dashboards (grafanalib) and provisioning files."""
    from .dashboards import grafana_source_reachable, import_instructions
    paths = mon.dashboards(out_dir)
    for p in paths:
        click.echo(str(p))
    if grafana_source_reachable(mon):
        click.echo(f"Grafana's package source is reachable from {mon.prometheus_node.name}, but monitor-deploy "
                   f"does not install Grafana yet.")
    else:
        click.echo(f"No Grafana server installed: Grafana's package source (apt.grafana.com) is not reachable "
                   f"from {mon.prometheus_node.name} and Debian has no grafana package.")
    click.echo(import_instructions(mon, out_dir))


def _time(ctx, param, value):
    """A click callback: ``value`` as epoch seconds, checked before any host is reached."""
    try:
        return parse_time(value, what=param.opts[0])
    except UsageError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def _duration(ctx, param, value):
    """A click callback: a Prometheus duration (kept as given), checked before any host is reached."""
    if value is not None:
        try:
            duration_seconds(value, what=param.opts[0])
        except UsageError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return value


@main.command()
@monitoring_command
@click.option("--from", "start", required=True, metavar="T1", callback=_time,
              help="Window start: epoch seconds or ISO time.")
@click.option("--to", "end", required=True, metavar="T2", callback=_time, help="Window end: epoch seconds or ISO time.")
@click.option("--out", "out_dir", required=True, metavar="DIR", type=click.Path(file_okay=False), callback=writable_dir,
              help="Output directory (must be new or empty).")
@click.option("--step", callback=_duration, help="Sample step, e.g. 2s (default: the scrape interval).")
@click.option("--node", "nodes", multiple=True, help="Only this node (repeatable).")
@click.option("--metric", "metrics", multiple=True, help="Only this metric key (repeatable): cpu, memory, "
              "net_rx, net_tx, disk_read, disk_write.")
@click.option("--overwrite", is_flag=True, help="Replace a non-empty output directory.")
def export(mon, start, end, out_dir, step, nodes, metrics, overwrite):
    """Export a time window's per-node metrics.

    Parquet, the area under each curve (Simpson) and stacked plots."""
    result = mon.export(start, end, out_dir, step=step, nodes=list(nodes) or None,
                        metrics=list(metrics) or None, overwrite=overwrite)
    click.echo(result.auc.to_string(index=False))
    click.echo(f"wrote {result.out_dir}: metrics.parquet, auc.parquet, auc.csv, "
               f"{', '.join(p.name for p in result.plots.values())}, window.json")


@main.command()
@monitoring_command
@click.option("--from", "start", required=True, metavar="T1", callback=_time,
              help="Search start: epoch seconds or ISO time.")
@click.option("--to", "end", required=True, metavar="T2", callback=_time, help="Search end: epoch seconds or ISO time.")
def windows(mon, start, end):
    """List the run windows the run marker published.

    Recovered from Prometheus: run id, point, repetition, start and end."""
    found = mon.marker.windows(start, end)
    for w in found:
        click.echo(f"{w.run_id}\t{w.point}\t{w.repetition}\t{w.start:.3f}\t{'' if w.end is None else f'{w.end:.3f}'}")
    if not found:
        click.echo("no runs in that window")
