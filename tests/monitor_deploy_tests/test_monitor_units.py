"""Options, generated Prometheus config and rules (checked by promtool, installed by the session's
monitoring: cluster tier), AUC, CLI errors; the rest pure."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from metareserve import Layout, Node, Reservation
from metareserve.errors import UsageError
from monitor_deploy import METRICS, MonitorOptions
from monitor_deploy.cli import main
from monitor_deploy.export import area_under_curves
from monitor_deploy.options import parse_time, step_seconds
from monitor_deploy.targets import render_config, render_rules, scrape_jobs


def reservation(provider="ssh"):
    nodes = [Node(name=f"node{i}", host=f"h{i}", address=f"10.0.0.{i}") for i in (1, 2, 3)]
    return Reservation(name="demo", provider=provider, nodes=nodes)


def test_options_validate():
    assert MonitorOptions().rate_window == "8s"
    assert MonitorOptions(scrape_interval="5s").rate_window == "20s"
    for bad in (dict(scrape_interval="2"), dict(retention="two days"), dict(prometheus_port=70000),
                dict(extra_jobs=[{"static_configs": []}])):
        with pytest.raises(UsageError):
            MonitorOptions(**bad)


def test_times_and_steps():
    assert parse_time(1700000000) == parse_time("1700000000") == 1.7e9
    assert parse_time("2023-11-14T22:13:20Z") == 1.7e9
    assert step_seconds(None, 2.0) == 2.0 and step_seconds("5s", 2) == 5 and step_seconds("0.5", 2) == 0.5
    with pytest.raises(UsageError, match="neither epoch seconds nor an ISO time"):
        parse_time("tomorrow")


def test_scrape_jobs_follow_layout():
    res = reservation()
    layout = Layout.default(res)
    opts = MonitorOptions(driver_address="10.0.0.99")
    jobs = {j.name: j for j in scrape_jobs(res, layout, opts)}
    assert [t.address for t in jobs["node"].targets] == ["10.0.0.1:9100", "10.0.0.2:9100", "10.0.0.3:9100"]
    assert [t.address for t in jobs["spark-worker"].targets] == ["10.0.0.2:8081", "10.0.0.3:8081"]
    assert jobs["spark-executors"].targets[0].address == "10.0.0.99:4040"
    assert jobs["ceph-mgr"].honor_labels and jobs["spark-master"].path == "/metrics/master/prometheus/"
    assert {name for name, job in jobs.items() if not job.slow} == {"node"}, "every JVM servlet and the mgr are slow"
    only_nodes = {j.name for j in scrape_jobs(res, Layout({"prometheus": ["node1"]}), opts)}
    assert only_nodes == {"node"}


@pytest.mark.parametrize("provider", ["ssh", "local"])
def test_generated_config_passes_promtool(tmp_path, provider, monitoring):
    """Prometheus's own checker accepts the generated config and rules; promtool comes with the
    Prometheus package the session's monitoring installed (so this runs on a new machine too,
    where collection would find none)."""
    assert shutil.which("promtool"), "the prometheus package brought no promtool"
    res = reservation(provider)
    extra = {"job_name": "extra", "static_configs": [{"targets": ["10.0.0.9:1234"]}]}
    (tmp_path / "rules.yml").write_text(render_rules(res, MonitorOptions()))
    (tmp_path / "prometheus.yml").write_text(render_config(
        res, Layout.default(res), MonitorOptions(extra_jobs=[extra]), rules_file=str(tmp_path / "rules.yml")))
    r = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    config = yaml.safe_load((tmp_path / "prometheus.yml").read_text())
    assert config["scrape_configs"][-1] == extra
    assert config["scrape_configs"][0]["static_configs"][1]["labels"] == {"sae_node": "node2"}
    rules = yaml.safe_load((tmp_path / "rules.yml").read_text())["groups"][0]["rules"]
    assert [r["record"] for r in rules] == [m.record for m in METRICS.values()]
    assert ("sae_vhost_cpu_seconds_total" in rules[0]["expr"]) == (provider == "local")


def test_pidfiles_name_every_agent_it_starts():
    """What measuring monitoring's own cost reads: node_exporter on every node, Prometheus on its
    node; no cgroup exporter off the local cluster."""
    from monitor_deploy import Monitoring
    res = reservation()
    mon = Monitoring(res, Layout.default(res))
    files = mon.pidfiles()
    assert [f.rsplit("/", 1)[1] for f in files] == ["node_exporter.pid", "prometheus.pid",
                                                    "node_exporter.pid", "node_exporter.pid"]
    assert [f for f in files if f.startswith(mon.node_dir("node1"))] == files[:2]


def test_node_exporter_runs_the_collectors_sae_reads():
    """node_exporter's argv enables ``node_collectors`` alone (node_exporter's defaults for None);
    a collector name that is not one word is refused when the options are made."""
    from monitor_deploy import Monitoring
    from monitor_deploy.options import NODE_COLLECTORS
    res = reservation()
    argv = Monitoring(res, Layout.default(res))._daemons(res.nodes[1])["node_exporter"]
    assert argv[3:] == ["--collector.disable-defaults", *(f"--collector.{c}" for c in NODE_COLLECTORS)]
    argv = Monitoring(res, Layout.default(res), MonitorOptions(node_collectors=None))._daemons(res.nodes[1])
    assert not any(a.startswith("--collector.") and "textfile" not in a for a in argv["node_exporter"])
    for bad in ([], ["cpu", "a b"], "cpu", ["--web.listen-address=0.0.0.0:1"]):
        with pytest.raises(UsageError, match="node_collectors"):
            MonitorOptions(node_collectors=bad)


def test_auc_is_simpson_per_node_plus_total():
    t = np.linspace(0, 10, 11)
    data = pd.concat([pd.DataFrame({"timestamp": t, "node": n, "metric": "cpu", "value": v, "unit": "%"})
                      for n, v in (("node1", t ** 2), ("node2", np.full(11, 50.0)))])
    auc = area_under_curves(data).set_index("node")["auc"]
    assert auc["node1"] == pytest.approx(1000 / 3)  # Simpson is exact for a parabola
    assert auc["node2"] == pytest.approx(500) and auc["total"] == pytest.approx(1000 / 3 + 500)


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    runner = CliRunner()
    r = runner.invoke(main, ["status", "--reservation", str(tmp_path / "missing.yaml")])
    assert r.exit_code == 2 and "missing.yaml" in r.output and "not found" in r.output
    bad = tmp_path / "opts.yaml"
    bad.write_text("scrape_intervall: 1s\n")
    res_file = tmp_path / "res.yaml"
    reservation().save(res_file)
    r = runner.invoke(main, ["export", "-r", str(res_file), "--config", str(bad), "--from", "1", "--to", "2",
                             "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown monitor option(s) scrape_intervall" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_dashboards_rates_cover_slow_jobs():
    import json
    from grafanalib._gen import DashboardEncoder
    from monitor_deploy.dashboards import build_dashboards, panel_queries
    dashes = {k: json.loads(json.dumps(d.to_json_data(), cls=DashboardEncoder))
              for k, d in build_dashboards("demo", 1.0).items()}
    assert [len(panel_queries(d)) for d in dashes.values()] == [len(METRICS), 6, 6, 6]
    rates = [e for d in ("sae-spark", "sae-ceph", "sae-rgw") for _, e in panel_queries(dashes[d]) if "rate(" in e]
    assert rates and all("[20s]" in e for e in rates)  # 4 x the 5-s interval of Spark/Ceph jobs
    assert all(p["datasource"] == "Prometheus" for d in dashes.values() for p in d["panels"])
