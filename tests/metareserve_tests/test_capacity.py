"""Declared capacities: rates, cores and memory as users write them, checked before anything is
created (pure: nothing here makes a host)."""
from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from metareserve import (Calibration, Capacities, CoresMeasure, CpuSet, HostCapacity, LinkMeasure, Rate, Size,
                         UsageError)
from metareserve.capacity import check_delay, cpuset_text, format_rate, online_cpus
from metareserve.cli import main

MACHINE = len(online_cpus())


@pytest.mark.parametrize("text, bits", [
    ("100mbit", 100_000_000), ("1.25gbit", 1_250_000_000), ("10Gbit/s", 10_000_000_000),
    ("500kbit", 500_000), ("100", 100_000_000), ("12.5mbps", 100_000_000), ("1mibit", 1 << 20),
    (" 2 GBIT ", 2_000_000_000), ("unlimited", None), ("none", None)])
def test_rates_in_tc_and_mininet_units(text, bits):
    assert Rate.parse(text, what="rate") == bits


@pytest.mark.parametrize("text", ["12 parsecs", "fast", "", "1e9bit", "-5mbit", "١٠mbit", "10mbit\n5",
                                  "1kbit", "200gbit", "nan", "inf"])
def test_bad_rates_are_one_line_errors(text):
    with pytest.raises(UsageError) as e:
        Rate.parse(text, what="--link-rate")
    assert "--link-rate" in str(e.value) and "\n" not in str(e.value)


def test_rates_print_back():
    assert format_rate(1_250_000_000) == "1.25Gbit/s" and format_rate(96_080_000) == "96.08Mbit/s"
    assert format_rate(None) == "unlimited"


def test_cpusets_are_canonical_and_within_the_machine():
    assert str(CpuSet.parse("0", what="c").within([0, 1], what="c")) == "0"
    assert str(CpuSet.parse("1,0", what="c").within([0, 1], what="c")) == "0-1"
    assert cpuset_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    for bad in ("2", "0-3", "1-0", "x", "0,,1", "٠"):
        with pytest.raises(UsageError):
            CpuSet.parse(bad, what="c").within([0, 1], what="c")


def test_node_specs_override_and_unknown_hosts_are_refused():
    caps = Capacities.parse(["node1", "node2", "node3"], cpus=["0", "node1=1"], link_rate="node2,node3=1gbit",
                            memory=["node3=1GiB"])
    assert caps.of("node1") == HostCapacity(cpus=CpuSet((1,)))
    assert caps.of("node2") == HostCapacity(cpus=CpuSet((0,)), link_rate=Rate(10 ** 9))
    assert caps.of("node3").memory == 1 << 30
    assert caps.cores(["node2", "node3"], [0, 1]) == 1 and caps.cores(["node1", "node2"], [0, 1]) == 2
    assert caps.link_rate("node1", "node2") == 10 ** 9 and caps.link_rate("node1", "node1") is None
    with pytest.raises(UsageError, match="no host node9"):
        Capacities.parse(["node1"], cpus=["node9=0"])


def test_quota_caps_the_cores_of_a_host_and_of_a_group():
    caps = Capacities.parse(["a", "b"], cpus="0", cpu_quota="0.5")
    assert caps.of("a").cores(MACHINE) == 0.5 and caps.cores(["a", "b"], [0, 1]) == 1


def test_capacities_survive_the_reservation_record():
    caps = Capacities.parse(["node1", "node2"], cpus=["node1=0"], cpu_quota=["node2=0.5"], memory="512MiB",
                            link_rate="1.25gbit")
    assert Capacities.from_dict(caps.to_dict()) == caps
    assert caps.to_dict()["node1"] == {"cpus": "0", "memory": "512MiB", "link_rate": "1.25gbit"}
    with pytest.raises(UsageError, match="cpus"):
        Capacities.from_dict({"node1": {"cpus": "99"}})
    with pytest.raises(UsageError, match="expected keys"):
        Capacities.from_dict({"node1": {"cores": 1}})


def test_records_written_before_typed_values_still_load():
    """Reservation files hold plain numbers and ``NNNbit`` rates from before the typed values."""
    old = {"node1": {"cpus": "0", "memory": 536870912, "link_rate": "1250000000bit"},
           "node2": {"cpu_quota": 0.5}}
    caps = Capacities.from_dict(old, "reservation 'r'")
    assert caps.of("node1") == HostCapacity(cpus=CpuSet((0,)), memory=Size(512 << 20), link_rate=Rate(1_250_000_000))
    assert caps.of("node2").cpu_quota == 0.5
    assert Capacities.from_dict(caps.to_dict()) == caps


def test_delay_is_refused_in_one_line_where_there_is_no_netem():
    with pytest.raises(UsageError) as e:
        check_delay("10ms")
    assert "\n" not in str(e.value) and "delay" in str(e.value)


def test_calibration_warns_only_beyond_fifteen_percent():
    cal = Calibration(cores=(CoresMeasure("node1", ("node1",), 1.0, 0.99), CoresMeasure("node2", ("node2",), 1.0, 0.6),
                             CoresMeasure("ssh1", ("ssh1",), None, 7.9)),
                      links=(LinkMeasure("node1", "node2", 10 ** 9, 0.96e9), LinkMeasure("node1", "node3", 10 ** 9, 0.5e9),
                             LinkMeasure("node1", "node4", None, 30e9)))
    warnings = cal.warnings()
    assert len(warnings) == 2
    assert warnings[0].startswith("[node2 calibrate] measured 0.60 usable cores, declared 1 (40% below)")
    assert warnings[1].startswith("[node1->node3 calibrate] measured 500Mbit/s, declared 1Gbit/s (50% below)")
    assert Calibration.from_dict(cal.to_dict()) == cal


@pytest.mark.parametrize("args, fragment", [
    (["--link-rate", "12 parsecs"], "12 parsecs"),
    (["--cpus", str(MACHINE)], "this machine has"),
    (["--cpus", f"0-{MACHINE + 4}"], "this machine has"),
    (["--cpu-limit", str(MACHINE + 1)], "at most"),
    (["--cpu-limit", "-1"], "cores"),
    (["--memory", "1TiB"], "machine"),
    (["--memory", "1MiB"], "minimum"),
    (["--cpus", "node7=0"], "no host node7"),
    (["--delay", "10ms"], "delay"),
    (["--provider", "ssh", "--host", "h1", "--link-rate", "1gbit"], "local provider only"),
])
def test_bad_capacities_fail_before_anything_is_created(tmp_path, args, fragment, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAE_LOCAL_STATE", str(tmp_path / "state"))
    r = CliRunner().invoke(main, ["reserve", "--name", f"bad{os.getpid() % 1000}", "--out", "r.yaml", *args])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert "\n" not in line and fragment in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []
