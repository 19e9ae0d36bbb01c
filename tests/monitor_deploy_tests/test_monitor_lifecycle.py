"""Full lifecycle on an own 2-host local cluster: start, reload, stop and uninstall leave nothing."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from metareserve import Layout, node_agent
from metareserve.errors import OperationalError
from monitor_deploy import Monitoring, MonitorOptions
from monitor_deploy.cli import main


@pytest.fixture(scope="module")
def res(own_local_cluster):
    with own_local_cluster("ml", nodes=2) as (_, reservation):
        yield reservation


def pids(mon):
    """Every pid file monitoring keeps, node and controller side."""
    files = [Path(mon.node_dir(n)) / f"{d}.pid" for n in mon.reservation.nodes for d in mon._daemons(n)]
    return files + [mon._vhost_dir / "vhost.pid"]


def test_lifecycle(res):
    cli = ["--reservation", str(res.path), "--scrape-interval", "1s"]
    with Monitoring(res, Layout.default(res), MonitorOptions(scrape_interval="1s")) as mon:
        mon.install()
        assert mon.start().changed
        again = mon.start()
        assert not again.changed and all("running" in o.message for o in again.nodes.values())
        running = [node_agent.read_pid(str(p)) for p in pids(mon)]
        assert all(node_agent.pid_alive(p) for p in running)
        assert len(mon.query("up")) >= 2

        r = subprocess.run([str(Path(sys.executable).with_name("monitor-deploy")), "status", *cli],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "node1: node_exporter running" in r.stdout and "prometheus running" in r.stdout

    with Monitoring(res, options=MonitorOptions(scrape_interval="2s")) as mon:
        reload = mon.start()
        assert reload.nodes["node1"].changed and "reloaded" in reload.nodes["node1"].message
        assert not reload.nodes["node2"].changed

        stopped = mon.stop()
        assert all(o.changed for o in stopped.nodes.values())
        assert not any(node_agent.pid_alive(p) for p in running)
        assert not any(node_agent.port_open(n.cluster_address, port) for n in res.nodes
                       for port in (9090, 9100))
        assert not mon.stop().changed

        with pytest.raises(OperationalError, match="not reachable") as e:
            mon.export(0, 60, res.path.parent / "never")
        assert "\n" not in str(e.value) and not (res.path.parent / "never").exists()
        result = CliRunner().invoke(main, ["status", *cli])
        assert result.exit_code == 1 and "not fully running" in result.output

        assert all(o.changed for o in mon.uninstall().nodes.values())
        assert not any(Path(mon.node_dir(n)).exists() for n in res.nodes)
        assert not mon._vhost_dir.exists()
        assert not mon.uninstall().changed
