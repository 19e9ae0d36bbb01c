"""Monitoring options and the time/duration parsing shared by API and CLI."""
from __future__ import annotations

import dataclasses
import datetime as dt
import re

from metareserve import validate
from metareserve.layout import METRICS_PORTS
from metareserve.errors import UsageError

_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d|w|y)", re.ASCII)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str, *, what: str = "duration") -> float:
    """Seconds in a Prometheus duration such as ``2s``, ``5m`` or ``2d``; UsageError otherwise."""
    m = _DURATION.fullmatch(str(text).strip())
    if not m:
        raise UsageError(f"{what} {text!r} is not a Prometheus duration (e.g. 2s, 30s, 5m, 2d)")
    seconds = int(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    if not 0 < seconds <= MAX_DURATION:
        raise UsageError(f"{what} {text!r} must be above zero and at most ten years (e.g. 2s, 30s, 5m, 2d)")
    return seconds


MAX_TIME = 32503680000.0        # 3000-01-01: later (or non-finite) times are typos, not windows
MAX_DURATION = 10 * 31536000    # ten years: the longest retention or scrape interval taken


def parse_time(value, *, what: str = "time") -> float:
    """Epoch seconds from epoch seconds (int/float/str), an ISO 8601 string or a datetime,
    between 0 and :data:`MAX_TIME`.

    Naive ISO times and datetimes are taken as local time.
    """
    if isinstance(value, dt.datetime):
        seconds = value.timestamp()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = str(value).strip()
        if not text.isascii():   # float() and fromisoformat() read other scripts' digits too
            raise UsageError(f"{what} {value!r} is not a time: write it with the digits 0-9 "
                             f"(e.g. 1700000000 or 2026-11-21T22:00:00)")
        try:
            seconds = float(text)
        except ValueError:
            try:
                seconds = dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise UsageError(f"{what} {value!r} is neither epoch seconds nor an ISO time "
                                 f"(e.g. 1700000000 or 2026-11-21T22:00:00)") from None
    if not 0 <= seconds <= MAX_TIME:   # also NaN and the infinities
        raise UsageError(f"{what} {value!r} is not a time between 1970 and 3000 (epoch seconds or an ISO time)")
    return seconds


PORT_FIELDS = ("prometheus_port", "node_exporter_port", "spark_master_ui_port", "spark_worker_ui_port",
               "driver_ui_port", "ceph_mgr_port")
NODE_COLLECTORS = ("cpu", "meminfo", "netdev", "diskstats", "textfile")
"""The node_exporter collectors sae reads (CPU, memory, network and disk counters, and the textfile
of run markers and the local cluster's per-host CPU): node_exporter 1.5 on the 2-core development
machine served 355 series with these, 797 with its defaults. At 17 hosts on one 2-core machine Prometheus, on the first storage host's eighth of a
core, used about half of it (0.066 of a core, with every default collector)."""
_COLLECTOR = re.compile(r"[a-z][a-z0-9_]{0,39}", re.ASCII)
VHOST_INTERVAL = (0.05, 60.0)
"""The seconds the local-cluster CPU exporter may write at (NaN and the infinities are outside)."""


@dataclasses.dataclass
class MonitorOptions:
    """How monitoring runs: scrape interval, retention, ports, node_exporter's collectors, extra
    scrape jobs.

    ``extra_jobs`` are Prometheus scrape configs given as data (dicts in Prometheus' own
    ``scrape_configs`` format), e.g. ``{"job_name": "x", "static_configs": [{"targets": [...]}]}``.
    ``driver_address`` overrides where the Spark driver UI is scraped (default: the layout's
    driver node). ``vhost_interval`` is how often (seconds) the local-cluster CPU exporter writes
    the CPU counter (0.1 s: a scraped one is at most that old, so a window closes, and a pause
    that waits for it ends, that much sooner; the exporter costs ~1-2 % of a core).
    ``node_collectors`` are the node_exporter collectors enabled (:data:`NODE_COLLECTORS`, what
    sae reads; None: node_exporter's own defaults).
    """

    scrape_interval: str = "2s"
    retention: str = "2d"
    prometheus_port: int = 9090
    node_exporter_port: int = 9100
    spark_master_ui_port: int = METRICS_PORTS["spark-master"]
    spark_worker_ui_port: int = METRICS_PORTS["spark-worker"]
    driver_ui_port: int = METRICS_PORTS["driver"]
    ceph_mgr_port: int = METRICS_PORTS["ceph-mgr"]
    driver_address: str | None = None
    extra_jobs: list = dataclasses.field(default_factory=list)
    vhost_interval: float = 0.1
    node_collectors: list | None = dataclasses.field(default_factory=lambda: list(NODE_COLLECTORS))

    def __post_init__(self):
        duration_seconds(self.scrape_interval, what="scrape_interval")
        duration_seconds(self.retention, what="retention")
        taken: dict[int, str] = {}
        for field in PORT_FIELDS:
            port = validate.port(getattr(self, field), field)
            if port in taken:
                raise UsageError(f"{field} {port} is {taken[port]} too: give each service its own port")
            taken[port] = field
        if self.driver_address is not None:
            validate.address(self.driver_address, "driver_address")
        if not isinstance(self.extra_jobs, list):
            raise UsageError(f"extra_jobs {self.extra_jobs!r} must be a list of Prometheus scrape configs")
        for job in self.extra_jobs:
            if not isinstance(job, dict) or not isinstance(job.get("job_name"), str):
                raise UsageError(f"extra_jobs: {job!r} must be a Prometheus scrape config with a 'job_name'")
            validate.name(job["job_name"], "extra_jobs job_name")
        v = self.vhost_interval
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not VHOST_INTERVAL[0] <= v <= VHOST_INTERVAL[1]:
            raise UsageError(f"vhost_interval {v!r} must be seconds from {VHOST_INTERVAL[0]} to {VHOST_INTERVAL[1]}")
        c = self.node_collectors
        if c is not None and (not isinstance(c, (list, tuple)) or not c
                              or not all(isinstance(n, str) and _COLLECTOR.fullmatch(n) for n in c)):
            raise UsageError(f"node_collectors {c!r} must be a list of node_exporter collector names "
                             f"(e.g. {list(NODE_COLLECTORS)}), or null for node_exporter's defaults")

    @property
    def interval_seconds(self) -> float:
        """The scrape (and rule evaluation) interval in seconds."""
        return duration_seconds(self.scrape_interval)

    @property
    def rate_window(self) -> str:
        """The range used in ``rate()``: four scrape intervals, so every window holds samples."""
        return f"{max(1, round(4 * self.interval_seconds))}s"


def step_seconds(step, default: float) -> float:
    """A query step in seconds from a number, a duration string (``5s``) or None (``default``)."""
    if step is None:
        return default
    if isinstance(step, (int, float)) and not isinstance(step, bool):
        if step <= 0:
            raise UsageError(f"step {step!r} must be positive")
        return float(step)
    try:
        return step_seconds(float(step), default)
    except ValueError:
        return duration_seconds(str(step), what="step")
