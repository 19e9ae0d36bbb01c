"""The per-node metric catalog: one recorded series per quantity, the same on every platform.

Prometheus recording rules (``templates/rules.yml.j2``) compute each quantity from
node_exporter on real machines (``source="node"``) or from the cgroup exporter of the local
cluster (``source="cgroup"``, see :mod:`monitor_deploy.vhost`); queries, exports and dashboards
only use the recorded names, so they work unchanged on both.
"""
from __future__ import annotations

import dataclasses

NODE_LABEL = "sae_node"
"""Target label carrying the node's reservation name (distinct from any exported label)."""

_NET = 'device!~"lo|veth.*|docker.*|br.*|virbr.*|cni.*|flannel.*"'


@dataclasses.dataclass(frozen=True)
class Metric:
    """One per-node quantity: its recorded series name, unit, and source expressions.

    ``node_expr``/``cgroup_expr`` are PromQL templates; ``{w}`` is the rate window and
    ``{by}`` the node label.
    """

    key: str
    record: str
    title: str
    unit: str
    grafana_unit: str
    node_expr: str
    cgroup_expr: str

    def expr(self, source: str, window: str) -> str:
        """The source expression for ``source`` (``node`` or ``cgroup``) with ``window`` filled in."""
        template = self.cgroup_expr if source == "cgroup" else self.node_expr
        return template.format(w=window, by=NODE_LABEL)


METRICS = {m.key: m for m in [
    Metric("cpu", "sae:node_cpu_utilisation:percent", "CPU utilisation", "%", "percent",
           '100 * (1 - avg by ({by}) (rate(node_cpu_seconds_total{{job="node",mode="idle"}}[{w}])))',
           '100 * sum by ({by}) (rate(sae_vhost_cpu_seconds_total{{job="node"}}[{w}]))'
           ' / sum by ({by}) (sae_vhost_cpu_capacity_cores{{job="node"}})'),
    Metric("memory", "sae:node_memory_used:bytes", "Memory used", "bytes", "bytes",
           'sum by ({by}) (node_memory_MemTotal_bytes{{job="node"}} - node_memory_MemAvailable_bytes{{job="node"}})',
           'sum by ({by}) (sae_vhost_memory_rss_bytes{{job="node"}})'),
    Metric("net_rx", "sae:node_network_receive:bytes_per_second", "Network received", "B/s", "Bps",
           'sum by ({by}) (rate(node_network_receive_bytes_total{{job="node",' + _NET + '}}[{w}]))',
           'sum by ({by}) (rate(node_network_receive_bytes_total{{job="node",' + _NET + '}}[{w}]))'),
    Metric("net_tx", "sae:node_network_transmit:bytes_per_second", "Network transmitted", "B/s", "Bps",
           'sum by ({by}) (rate(node_network_transmit_bytes_total{{job="node",' + _NET + '}}[{w}]))',
           'sum by ({by}) (rate(node_network_transmit_bytes_total{{job="node",' + _NET + '}}[{w}]))'),
    Metric("disk_read", "sae:node_disk_read:bytes_per_second", "Disk read", "B/s", "Bps",
           'sum by ({by}) (rate(node_disk_read_bytes_total{{job="node"}}[{w}]))',
           'sum by ({by}) (rate(sae_vhost_disk_read_bytes_total{{job="node"}}[{w}]))'),
    Metric("disk_write", "sae:node_disk_written:bytes_per_second", "Disk written", "B/s", "Bps",
           'sum by ({by}) (rate(node_disk_written_bytes_total{{job="node"}}[{w}]))',
           'sum by ({by}) (rate(sae_vhost_disk_written_bytes_total{{job="node"}}[{w}]))'),
]}
"""Metric key → :class:`Metric`, in export order."""


def source_for(provider: str) -> str:
    """Where per-node numbers come from for a reservation provider: ``cgroup`` on the local
    cluster (its hosts share the machine's /proc), ``node`` elsewhere."""
    return "cgroup" if provider == "local" else "node"


@dataclasses.dataclass(frozen=True)
class Counter:
    """One per-node cumulative counter, exported as raw samples so that totals over any
    interval inside a window (e.g. one query) come out exact to a scrape: ``node_series`` /
    ``cgroup_series`` are series selectors (summed over their series per node)."""

    key: str
    title: str
    unit: str
    node_series: str
    cgroup_series: str

    def selector(self, source: str, nodes: list[str]) -> str:
        """The selector for ``source`` limited to ``nodes``."""
        series = self.cgroup_series if source == "cgroup" else self.node_series
        return series[:-1] + f',{NODE_LABEL}=~"{"|".join(nodes)}"}}'


COUNTERS = {c.key: c for c in [
    Counter("cpu_seconds", "CPU time", "s",
            'node_cpu_seconds_total{job="node",mode!="idle"}', 'sae_vhost_cpu_seconds_total{job="node"}'),
    Counter("net_rx_bytes", "Bytes received", "bytes",
            'node_network_receive_bytes_total{job="node",' + _NET + '}',
            'node_network_receive_bytes_total{job="node",' + _NET + '}'),
    Counter("net_tx_bytes", "Bytes transmitted", "bytes",
            'node_network_transmit_bytes_total{job="node",' + _NET + '}',
            'node_network_transmit_bytes_total{job="node",' + _NET + '}'),
]}
"""Counter key → :class:`Counter`: busy CPU-seconds and network bytes per node."""
