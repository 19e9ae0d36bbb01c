"""monitor_deploy: Prometheus + node_exporter on a reservation, per-node metrics that read the
same on real machines and local-cluster hosts, metric windows exported to Parquet and plots,
Grafana dashboards, and a run marker that records which experiment run is active."""
from .deploy import Monitoring
from .export import (ExportResult, continued, counter_gaps, counter_totals, counter_values, export_window,
                     export_windows)
from .frames import read_frame, write_frame
from .marker import RunMarker, RunWindow, windows_from_prometheus
from .metrics import COUNTERS, METRICS, NODE_LABEL, Counter, Metric
from .options import MonitorOptions

__version__ = "0.1.0"
__all__ = ["Monitoring", "MonitorOptions", "RunMarker", "RunWindow", "windows_from_prometheus",
           "ExportResult", "export_window", "export_windows", "continued", "counter_gaps", "counter_totals", "counter_values", "read_frame", "write_frame",
           "METRICS", "Metric", "COUNTERS", "Counter", "NODE_LABEL"]
