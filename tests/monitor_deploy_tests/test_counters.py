"""Counter totals from raw samples (pure: no nodes)."""
import os

import numpy as np
import pandas as pd
import pytest

from monitor_deploy import COUNTERS, counter_totals


def _samples(rows):
    return pd.DataFrame(rows, columns=["timestamp", "node", "counter", "series", "value"])


def test_totals_interpolate_between_scrapes_and_sum_series():
    # eth0 and eth1 of node2 each count 100 bytes/s, scraped every 2 s
    rows = [(t, "node2", "net_rx_bytes", dev, 1000 + 100 * t) for dev in ("device=eth0", "device=eth1")
            for t in range(0, 11, 2)]
    rows += [(t, "node1", "cpu_seconds", "", 0.5 * t) for t in range(0, 11, 2)]
    out = counter_totals(_samples(rows), 3.0, 8.0)
    assert out["net_rx_bytes"] == {"node2": pytest.approx(2 * 500)}
    assert out["cpu_seconds"] == {"node1": pytest.approx(2.5)}


def test_a_reset_counts_from_zero():
    rows = [(0, "n", "net_tx_bytes", "", 900.0), (2, "n", "net_tx_bytes", "", 1000.0),
            (4, "n", "net_tx_bytes", "", 50.0), (6, "n", "net_tx_bytes", "", 150.0)]
    assert counter_totals(_samples(rows), 0, 6)["net_tx_bytes"]["n"] == pytest.approx(1150 - 900)


def test_selectors_name_the_nodes():
    sel = COUNTERS["net_rx_bytes"].selector("cgroup", ["node1", "node2"])
    assert sel.startswith("node_network_receive_bytes_total{") and sel.endswith(',sae_node=~"node1|node2"}')
    assert COUNTERS["cpu_seconds"].selector("cgroup", ["n"]).startswith("sae_vhost_cpu_seconds_total{")
    assert 'mode!="idle"' in COUNTERS["cpu_seconds"].selector("node", ["n"])


def _bursts(lag=0.0):
    """A counter scraped every second (values ``lag`` s old) that rises by 100 during a query on
    [10.3, 11.6] and by 1000 during its neighbours [7.0, 8.2] and [13.9, 15.0]; idle otherwise."""
    def value(t):
        return sum(amount * min(max((t - a) / (b - a), 0), 1)
                   for a, b, amount in ((7.0, 8.2, 1000), (10.3, 11.6, 100), (13.9, 15.0, 1000)))
    return _samples([(t, "n", "cpu_seconds", "", value(t - lag)) for t in np.arange(0, 20, 1.0)])


@pytest.mark.parametrize("lag", [0.0, 0.5])
def test_totals_take_the_tightest_scrapes_inside_the_quiet_gap(lag):
    got = counter_totals(_bursts(lag), 10.3, 11.6, after=8.2, before=13.9, lags={"cpu_seconds": lag})
    assert got["cpu_seconds"]["n"] == pytest.approx(100)
    # interpolating at the query's own start and end misses part of it
    assert counter_totals(_bursts(lag), 10.3, 11.6)["cpu_seconds"]["n"] < 90


def test_totals_fall_back_to_interpolation_without_a_quiet_scrape():
    # neighbours closer than a scrape: no sample lies in the gap, values are interpolated
    got = counter_totals(_bursts(), 10.3, 11.6, after=10.1, before=11.8)
    assert got == counter_totals(_bursts(), 10.3, 11.6)


@pytest.mark.parametrize("lag", [0.0, 0.5])
def test_a_host_never_quiet_is_read_over_the_activitys_own_interval(lag):
    """A steady 1 CPU-second per second (a second tenant) under a query on [10.3, 11.6]: without
    a quiet gap to read in, the increase is the interval's own (1.3 s of it), lag allowed for,
    where the scrapes around it, inside the gap between neighbours, would add part of the pauses."""
    steady = _samples([(t, "n", "cpu_seconds", "", t - lag) for t in np.arange(0, 20, 1.0)])
    own = counter_totals(steady, 10.3, 11.6, lags={"cpu_seconds": lag})
    assert own["cpu_seconds"]["n"] == pytest.approx(1.3)
    wide = counter_totals(steady, 10.3, 11.6, after=8.2, before=13.9, lags={"cpu_seconds": lag})
    assert wide["cpu_seconds"]["n"] >= 2.0   # the scrapes either side of it


def test_the_cgroup_exporter_reads_cpu_every_round_and_processes_at_most_every_half_second(tmp_path, monkeypatch):
    """A short vhost_interval keeps the CPU counter fresh; the processes' files (memory, disk),
    most of a round's cost, are read at most every PROCESS_INTERVAL, and an exited process's I/O
    stays counted."""
    from monitor_deploy import vhost
    usage, procs = tmp_path / "cpuacct.usage", tmp_path / "cgroup.procs"
    usage.write_text("1000000000\n")
    procs.write_text(f"{os.getpid()}\n")
    clock = [100.0]
    monkeypatch.setattr(vhost.time, "monotonic", lambda: clock[0])
    host = vhost.HostCollector("node1", str(usage), str(procs), 1.0)

    def values():
        return {m.name: m.samples[0].value for m in host.collect()}

    first = values()
    assert first["sae_vhost_cpu_seconds"] == 1.0 and first["sae_vhost_memory_rss_bytes"] > 0
    usage.write_text("3000000000\n")
    procs.write_text("")   # the process left the host
    clock[0] += vhost.PROCESS_INTERVAL / 2
    second = values()
    assert second["sae_vhost_cpu_seconds"] == 3.0   # read again
    assert second["sae_vhost_memory_rss_bytes"] == first["sae_vhost_memory_rss_bytes"]   # not yet
    clock[0] += vhost.PROCESS_INTERVAL / 2
    third = values()
    assert third["sae_vhost_memory_rss_bytes"] == 0
    assert third["sae_vhost_disk_read_bytes"] == first["sae_vhost_disk_read_bytes"]   # kept once gone



def test_the_monitoring_agents_cpu_is_counted_apart_and_kept_across_restarts(tmp_path, monkeypatch):
    """A host's CPU counter is its cgroup's (its monitoring agents run outside it); what the agents
    (pid files) spent is counted apart, and a restarted or exited agent keeps its seconds."""
    import subprocess
    import sys
    import time
    from metareserve.remote.prelude import read_pid
    from monitor_deploy import vhost
    usage, pidfile = tmp_path / "cpu.stat", tmp_path / "node_exporter.pid"
    burn = "import time\nwhile time.process_time() < 0.3: pass\ntime.sleep(60)"

    def agent():
        """An agent that spends 0.3 CPU-s, then idles; (process, its CPU-seconds)."""
        p = subprocess.Popen([sys.executable, "-c", burn])
        pidfile.write_text(f"{p.pid}\n")
        while (sample := vhost.process_cpu(read_pid(pidfile))) is None or sample[1] < 0.25:
            time.sleep(0.05)
        time.sleep(0.1)
        return p, vhost.process_cpu(read_pid(pidfile))[1]

    def values(cgroup_seconds):
        usage.write_text(f"usage_usec {round(cgroup_seconds * 1e6)}\n")
        clock[0] += vhost.PROCESS_INTERVAL   # the agents are read with the processes
        return {m.name: m.samples[0].value for m in host.collect()}

    clock = [100.0]
    monkeypatch.setattr(vhost.time, "monotonic", lambda: clock[0])
    host = vhost.HostCollector("node1", str(usage), str(tmp_path / "cgroup.procs"), 1.0, [str(pidfile)])
    first = values(50.0)   # no agent yet
    assert (first["sae_vhost_cpu_seconds"], first["sae_vhost_agent_cpu_seconds"]) == (50.0, 0.0)
    a, a_seconds = agent()
    b = None
    try:
        running = values(51.0)   # 1 CPU-s of the host's own work
        assert running["sae_vhost_agent_cpu_seconds"] == pytest.approx(a_seconds)
        assert running["sae_vhost_cpu_seconds"] == pytest.approx(51.0)
        a.kill()
        a.wait()
        b, b_seconds = agent()   # restarted under the same pid file
        restarted = values(51.0)
        assert restarted["sae_vhost_agent_cpu_seconds"] == pytest.approx(a_seconds + b_seconds)
        assert restarted["sae_vhost_cpu_seconds"] == pytest.approx(51.0)
    finally:
        for p in (a, b):
            if p:
                p.kill()
                p.wait()
    gone = values(52.0)
    assert gone["sae_vhost_agent_cpu_seconds"] == pytest.approx(a_seconds + b_seconds)   # kept once exited
    assert gone["sae_vhost_cpu_seconds"] == pytest.approx(52.0)


def test_a_scrape_gap_inside_a_query_is_partial_only_where_the_counter_fell_or_at_its_edges():
    """Prometheus starved for 5 s in a long query (17 hosts on 2 cores): the counter rose across
    the gap, so the query's total is whole; a fall across it (an exporter's reset) hides part of
    it, and so does a gap at the query's start or end, whose reading would be spread over it."""
    from monitor_deploy import counter_gaps
    times = [t for t in np.arange(0.0, 40.0, 1.0) if not 10 < t < 16]   # no scrape in (10, 16)

    def gaps(start, end, fall=False):
        rows = [(t, "n", counter, "", 100.0 + t - (50 if fall and t >= 16 else 0))
                for counter in COUNTERS for t in times]
        return counter_gaps(_samples(rows), start, end, ["n"], 1.0)
    assert gaps(5.5, 30.5) == []
    assert gaps(5.5, 30.5, fall=True) == [f"n {c}: 6.0 s without a scrape across which it fell" for c in COUNTERS]
    assert gaps(11.0, 30.5) == [f"n {c}: 6.0 s without a scrape" for c in COUNTERS]   # at the start
    assert gaps(5.5, 12.0) == [f"n {c}: 6.0 s without a scrape" for c in COUNTERS]    # at the end
