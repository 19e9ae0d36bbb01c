"""Prometheus, node_exporter, metric windows, dashboards."""
