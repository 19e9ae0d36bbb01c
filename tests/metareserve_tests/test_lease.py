"""The reservation lease: one holder at a time, named to whoever else asks, taken over when its
holder process is gone (kill -9), visible in ``metareserve show``."""
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from metareserve import LeaseHeld, lease
from metareserve.cli import main


def test_second_holder_is_refused_naming_the_first(cluster):
    with lease.leased(cluster, "results/run-a") as first:
        with pytest.raises(LeaseHeld) as e:
            lease.acquire(cluster, "results/run-b")
        assert e.value.holder == first
        text = str(e.value)
        assert "results/run-a" in text and f"pid {first.pid}" in text and first.host in text
        assert "\n" not in text and e.value.exit_code == 1
    second = lease.acquire(cluster, "results/run-b")
    assert lease.holder(cluster) == second
    assert lease.give(cluster, second) and lease.holder(cluster) is None


def test_waiting_holder_gets_the_lease_when_it_is_given_back(cluster, local_cluster):
    first = lease.acquire(cluster, "results/run-a")
    script = textwrap.dedent(f"""
        import time
        from metareserve import Cluster, load_reservation, lease
        with Cluster(load_reservation({str(local_cluster.path)!r})) as c:
            start = time.time()
            me = lease.acquire(c, "results/run-b", wait=60, poll=0.2)
            print(round(time.time() - start, 1), me.holder)
            lease.give(c, me)
    """)
    waiter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    time.sleep(2)
    assert waiter.poll() is None
    lease.give(cluster, first)
    out, _ = waiter.communicate(timeout=60)
    waited, holder = out.split()
    assert holder == "results/run-b" and float(waited) >= 1.5


def test_lease_of_a_killed_holder_is_taken_over(cluster, local_cluster):
    script = textwrap.dedent(f"""
        import time
        from metareserve import Cluster, load_reservation, lease
        with Cluster(load_reservation({str(local_cluster.path)!r})) as c:
            lease.acquire(c, "results/killed")
            print("held", flush=True)
            time.sleep(300)
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    assert lease.holder(cluster).holder == "results/killed"
    holder.kill()
    holder.wait()
    assert lease.holder(cluster) is None
    me = lease.acquire(cluster, "results/after")
    assert lease.holder(cluster) == me
    lease.give(cluster, me)


def test_show_prints_the_holder_and_break_lease_removes_it(cluster, local_cluster):
    me = lease.acquire(cluster, "results/shown")
    out = CliRunner().invoke(main, ["show", "-r", str(local_cluster.path)]).output
    assert f"leased by results/shown (pid {me.pid}" in out
    broke = CliRunner().invoke(main, ["break-lease", "-r", str(local_cluster.path)])
    assert broke.exit_code == 0 and "removed the lease of results/shown" in broke.output
    assert "lease: free" in CliRunner().invoke(main, ["show", "-r", str(local_cluster.path)]).output
    again = CliRunner().invoke(main, ["break-lease", "-r", str(local_cluster.path)])
    assert again.exit_code == 0 and "has no lease" in again.output
