"""Two runs on one cluster: the second is refused in one line naming the first (run directory,
pid, machine); ``sae status`` shows the hold; after the first is killed (-9) the lease is free."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from metareserve.cli import main as metareserve_cli
from fixtures.sae import retired

ROOT = Path(__file__).resolve().parents[2]
SAE = str(Path(sys.executable).with_name("sae"))


@pytest.fixture
def cluster_file(own_local_cluster):
    with own_local_cluster("ls", before_release=retired) as cluster:
        yield cluster


def _wait_for(what, fn, timeout=300):
    deadline = time.monotonic() + timeout
    while not (value := fn()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)
    return value


def _installed(run: Path) -> bool:
    steps = yaml.safe_load((run / "stages.yaml").read_text()) if (run / "stages.yaml").exists() else []
    return any(s["stage"] == "install" for s in steps or [])


def test_second_run_is_refused_naming_the_first(cluster_file, figure):
    root, res = cluster_file
    first = subprocess.Popen([SAE, "run", "experiments/selectivity.py", "-r", str(root / "reservation.yaml"),
                              "--out", str(root / "a")], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        lease_file = _wait_for("the first run's lease", lambda: next((root / "a").glob("selectivity/*/lease.yaml"), None))
        run_a = lease_file.parent.resolve()
        second = subprocess.run([SAE, "run", "experiments/selectivity.py", "-r", str(root / "reservation.yaml"),
                                 "--out", str(root / "b")], cwd=ROOT, capture_output=True, text=True, timeout=300)
        errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
        assert second.returncode == 1 and len(errors) == 1, second.stderr[-2000:]
        assert f"is in use by {run_a} (pid {first.pid} on " in errors[0]
        figure(f"a second run on a leased cluster: {errors[0]}")
        status = subprocess.run([SAE, "status", str(run_a)], capture_output=True, text=True).stdout
        assert f"holds the lease of {res.name!r} (pid {first.pid}" in status
        shown = CliRunner().invoke(metareserve_cli, ["show", "-r", str(root / "reservation.yaml")]).output
        assert f"leased by {run_a} (pid {first.pid}" in shown
        _wait_for("the first run's install step", lambda: _installed(run_a))   # never kill apt midway
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    shown = CliRunner().invoke(metareserve_cli, ["show", "-r", str(root / "reservation.yaml")]).output
    assert "lease: free" in shown
