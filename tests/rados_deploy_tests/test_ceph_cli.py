"""The rados-deploy CLI: exit codes and one-line errors, and the installed entry point."""
import os
import subprocess
import sys

from click.testing import CliRunner

from rados_deploy.cli import main

RADOS_DEPLOY = os.path.join(os.path.dirname(sys.executable), "rados-deploy")


def test_missing_reservation_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(main, ["status", "-r", str(tmp_path / "nope.yaml")])
    assert r.exit_code == 2
    line = r.output.strip()
    assert line.startswith(f"error: {tmp_path / 'nope.yaml'}: reservation file") and "\n" not in line


def test_bad_store_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(main, ["start", "-r", str(tmp_path / "x.yaml"), "--store", "filestore"])
    assert r.exit_code == 2 and "'filestore' is not one of" in r.output


def test_layout_without_osds_is_a_usage_error(local_cluster):
    r = CliRunner().invoke(main, ["start", "-r", str(local_cluster.path), "--role", "ceph-mon=node1"])
    assert r.exit_code == 2
    assert r.output.strip() == "error: layout has no ceph-osd node; add one under 'roles: ceph-osd:'"


def test_entry_point_status_and_idempotent_start(ceph_cluster, local_cluster, tmp_path):
    layout = ceph_cluster.layout.save(tmp_path / "layout.yaml")
    args = ["-r", str(local_cluster.path), "--layout", str(layout)]
    st = subprocess.run([RADOS_DEPLOY, "status", *args], capture_output=True, text=True)
    assert st.returncode == 0, st.stderr
    assert "osd.2" in st.stdout and "health HEALTH_OK" in st.stdout
    client = ceph_cluster.topology.clients[0]
    assert f"{client}: CEPH_CONF={ceph_cluster.client_conf(client)}" in st.stdout.splitlines()
    again = subprocess.run([RADOS_DEPLOY, "start", *args], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "ceph start: no changes on 3 nodes" in again.stdout
