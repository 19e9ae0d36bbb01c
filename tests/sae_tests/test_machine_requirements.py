"""A plan held against the machine a local cluster would run on, before anything is reserved or
installed: each requirement one line with its fix, a failing one refusing the run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from metareserve.providers import local_requirements as lr
from sae.cli import main
from sae.planning import machine
from sae.running import runner

ROOT = Path(__file__).resolve().parents[2]
SELECTIVITY = str(ROOT / "experiments" / "selectivity.py")


def _plan(*settings):
    return runner.prepare(SELECTIVITY, profile=None, options=runner.RunOptions(), settings=list(settings))[1]


def test_plan_prints_every_requirement_of_this_machine():
    r = CliRunner().invoke(main, ["plan", SELECTIVITY])
    assert r.exit_code == 0, r.output
    lines = r.output.split("this machine, for a local cluster:\n")[1].splitlines()
    names = [line.split(":")[0].split(None, 1)[1] for line in lines]
    assert names == ["root", "distribution", "network namespaces", "veth pairs", "tc token bucket", "cgroups",
                     "disk", "memory"]
    assert all(line.startswith("  ok ") for line in lines), lines


def test_the_tiny_selectivity_sweeps_needs_are_its_hosts_daemons():
    n = machine.needs(_plan().points)
    # node1: mon, mgr, mds, one memstore OSD with the data, prometheus, node_exporter;
    # node2: master, worker + executor, driver; node3: worker + executor
    data = 1_000_000 * 32
    ceph = (128 + 512 + 128 + 256 << 20) + data
    spark = (512 << 20) + 2 * ((512 << 20) + (1 << 30) + (384 << 20)) + (1 << 30) + (512 << 20)
    monitor = (512 << 20) + 3 * (32 << 20)
    assert n.memory == ceph + spark + monitor
    assert n.disk == machine.SOFTWARE_BYTES + data and n.accounting
    assert {str(c.cpus) for c in n.capacities} == {"0", "1"}


def test_a_topology_that_does_not_fit_in_memory_is_refused_in_one_line_per_requirement():
    with pytest.raises(Exception) as e:
        _plan("spark.executor_memory=64g")
    text = str(e.value)
    assert "[selectivity.py local cluster requirements] this machine cannot host it" in text
    failed = text.splitlines()[1:]
    assert len(failed) == 1 and failed[0].startswith("  FAIL memory: ") and "needed by the hosts" in failed[0]
    assert "smaller Spark heaps" in failed[0]


def test_a_limit_the_cgroups_cannot_enforce_is_refused_with_its_fix(monkeypatch):
    monkeypatch.setenv("SAE_CGROUP", "none")
    r = CliRunner().invoke(main, ["plan", SELECTIVITY])
    assert r.exit_code == 1
    assert "FAIL cgroups: no writable cgroup hierarchy; SAE_CGROUP=none" in r.output
    assert "turn monitoring off (monitor.enabled=False)" in r.output
    r = CliRunner().invoke(main, ["plan", SELECTIVITY, "--set", "monitor.enabled=False"])
    assert r.exit_code == 0 and "ok   cgroups: no writable cgroup hierarchy; SAE_CGROUP=none; CPU affinity" in r.output
    r = CliRunner().invoke(main, ["plan", SELECTIVITY, "--set", "monitor.enabled=False",
                                  "--set", "cluster.host_memory=1GiB"])
    assert r.exit_code == 1 and "declared memory not enforced" in r.output
    assert "declare no memory limit (sae: cluster.host_memory" in r.output


@pytest.mark.skipif(os.geteuid() != 0, reason="drops root itself")
def test_without_root_the_first_line_says_so():
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=/tmp",
                        f"SAE_HOME=/tmp/sae-nobody-{os.getpid()}", str(Path(sys.executable).parent / "sae"), "plan",
                        SELECTIVITY], capture_output=True, text=True, cwd="/tmp")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL root: uid 65534; run as root (sudo)" in r.stderr
    assert "FAIL cgroups" not in r.stderr       # what only root can probe is not guessed at


@pytest.mark.parametrize("release, ok", [
    ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n', True),
    ('PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n', True),
    ('PRETTY_NAME="Ubuntu 20.04.6 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="20.04"\n', False),
    ('PRETTY_NAME="Fedora Linux 41"\nID=fedora\nVERSION_ID=41\n', False),
])
def test_the_distribution_must_have_the_packages_sae_installs(tmp_path, release, ok):
    (tmp_path / "os-release").write_text(release)
    r = lr.distribution(tmp_path / "os-release")
    assert r.ok is ok and r.found.startswith(release.split('"')[1])
    assert ok or "use Debian 12+ or Ubuntu 22.04+" in r.line()
