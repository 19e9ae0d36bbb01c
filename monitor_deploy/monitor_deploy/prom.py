"""A small Prometheus HTTP API client: direct from the controller, or through the Prometheus
node over SSH when the port is not reachable from here (remote testbeds)."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from metareserve import Cluster, Node, node_agent
from metareserve.errors import OperationalError, RemoteError, UsageError

STAGE = "prometheus query"


class PrometheusClient:
    """Query Prometheus at ``url`` (served on ``node``); ``cluster`` enables the SSH fallback."""

    def __init__(self, url: str, *, node: Node, cluster: Cluster | None = None, timeout: float = 60.0):
        self.url, self.node, self.cluster, self.timeout = url.rstrip("/"), node, cluster, timeout
        self._via_ssh = False

    def _fetch(self, url: str) -> tuple[int, str]:
        """(HTTP status, body); status 0 when nothing answered."""
        if not self._via_ssh:
            try:
                with urllib.request.urlopen(url, timeout=self.timeout) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode("utf-8", "replace")
            except (urllib.error.URLError, OSError) as e:
                if self.cluster is None:
                    return 0, str(getattr(e, "reason", e))
                self._via_ssh = True
        try:
            r = self.cluster.call(node_agent, "http_get", url, timeout=self.timeout, nodes=[self.node],
                                  stage=STAGE)[self.node.name]
        except RemoteError as e:
            return 0, str(e)
        if r["status"] == 0:
            self._via_ssh = False  # retry directly next time: it may just be down
        return r["status"], r["body"]

    def api(self, path: str, params: dict | None = None, *, what: str = "") -> object:
        """GET ``/api/v1/<path>`` and return its ``data``; one-line errors otherwise."""
        url = f"{self.url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        status, body = self._fetch(url)
        if status == 0:
            raise OperationalError(f"[{self.node.name} {STAGE}] Prometheus at {self.url} is not reachable "
                                   f"({body.strip()}); start it with 'monitor-deploy start'")
        try:
            doc = json.loads(body)
        except ValueError:
            raise OperationalError(f"[{self.node.name} {STAGE}] {self.url} answered HTTP {status} without "
                                   f"Prometheus JSON; is something else listening on that port?") from None
        if doc.get("status") != "success":
            error = doc.get("error", f"HTTP {status}")
            if doc.get("errorType") == "bad_data":
                raise UsageError(f"[{self.node.name} {STAGE}] Prometheus rejected {what or path}: {error}")
            raise OperationalError(f"[{self.node.name} {STAGE}] {what or path} failed: {error}")
        return doc["data"]

    def ready(self) -> bool:
        """True when Prometheus answers ``/-/ready``."""
        status, _ = self._fetch(f"{self.url}/-/ready")
        return status == 200

    def query(self, promql: str, time: float | None = None) -> list[dict]:
        """Instant query; Prometheus' ``result`` list (``metric`` labels and ``value`` [t, "v"])."""
        params = {"query": promql} | ({"time": time} if time is not None else {})
        return self.api("query", params, what=f"query {promql!r}")["result"]

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        """Range query; Prometheus' ``result`` list (``metric`` labels and ``values`` [[t, "v"], ...])."""
        return self.api("query_range", {"query": promql, "start": start, "end": end, "step": step},
                        what=f"query {promql!r}")["result"]

    def targets(self) -> list[dict]:
        """Active scrape targets with ``labels``, ``health``, ``lastError``, ``scrapeUrl``."""
        return self.api("targets", {"state": "active"})["activeTargets"]
