"""Typed units (rates, per-core link rates, sizes, cpusets, core quotas): parsed once from what
users write, printed back in a canonical form that parses to the same value (pure)."""
from __future__ import annotations

import pytest
import yaml

from metareserve import Capacities, Cores, CpuSet, LinkRate, Node, Rate, Reservation, Size, UsageError, load_reservation


@pytest.mark.parametrize("text, canonical", [
    ("100mbit", "100mbit"), ("1.25gbit", "1.25gbit"), ("10Gbit/s", "10gbit"), ("100", "100mbit"),
    ("12.5mbps", "100mbit"), ("1mibit", "1.048576mbit"), ("64kbit", "64kbit"), ("1250000000bit", "1.25gbit")])
def test_rates_print_in_a_canonical_form_that_reads_back(text, canonical):
    rate = Rate.parse(text, what="rate")
    assert str(rate) == canonical and Rate.parse(canonical, what="rate") == rate
    assert Rate.parse(rate, what="rate") is rate      # a parsed rate is not read as Mbit/s again


def test_odd_rates_print_exactly():
    rate = Rate(1_234_567_891)
    assert str(rate) == "1.234567891gbit" and Rate.parse(str(rate), what="rate") == rate


@pytest.mark.parametrize("text, rate, per_core, on_two_cores", [
    ("1.25gbit/core", 1_250_000_000, True, 2_500_000_000), (" 2GBIT/core ", 2 * 10 ** 9, True, 4 * 10 ** 9),
    ("100mbit", 10 ** 8, False, 10 ** 8), ("unlimited", None, False, None)])
def test_link_rates_per_core_or_per_host(text, rate, per_core, on_two_cores):
    link = LinkRate.parse(text, what="cluster.link_rate")
    assert (link.rate, link.per_core) == (rate, per_core) and link.of_host(2) == on_two_cores
    assert LinkRate.parse(str(link), what="cluster.link_rate") == link
    assert LinkRate.parse(link, what="cluster.link_rate") is link


@pytest.mark.parametrize("text", ["unlimited/core", "fast/core", "1gbit/host", "12 parsecs", "1kbit/core"])
def test_bad_link_rates_name_the_field_in_one_line(text):
    with pytest.raises(UsageError) as e:
        LinkRate.parse(text, what="cluster.link_rate")
    assert str(e.value).startswith("cluster.link_rate: ") and "\n" not in str(e.value)


@pytest.mark.parametrize("text, canonical", [
    ("4GiB", "4GiB"), ("4G", "4GiB"), ("1.5GiB", "1536MiB"), ("2GB", "2GB"), ("1000001", "1000001B"),
    (65536, "64KiB"), ("1.5 GB", "1500MB")])
def test_sizes_print_in_a_canonical_form_that_reads_back(text, canonical):
    size = Size.parse(text, what="host_memory")
    assert str(size) == canonical and Size.parse(canonical, what="host_memory") == size


@pytest.mark.parametrize("bad", ["lots", "0.3B", True, "-1G"])
def test_bad_sizes_name_the_field(bad):
    with pytest.raises(UsageError, match="^cluster.host_memory: "):
        Size.parse(bad, what="cluster.host_memory")


def test_cpusets_and_quotas():
    cpus = CpuSet.parse("3,0-1", what="cores")
    assert str(cpus) == "0-1,3" and len(cpus) == 3 and CpuSet.parse(str(cpus), what="cores") == cpus
    with pytest.raises(UsageError, match="^cores node1: '0-1,3' names core\\(s\\) 3"):
        cpus.within([0, 1, 2], what="cores node1")
    assert str(Cores.parse("0.50", what="quota", online=[0, 1])) == "0.5"
    for bad in ("0", "3", "x", True):
        with pytest.raises(UsageError, match="^quota: "):
            Cores.parse(bad, what="quota", online=[0, 1])


def test_a_reservation_file_records_canonical_forms_and_reads_them_back(tmp_path):
    caps = Capacities.parse(["node1"], cpus="0", memory="256MiB", link_rate="1250mbit")
    res = Reservation(name="r", provider="local", nodes=[Node(name="node1", host="10.0.0.1")],
                      provider_state={"capacities": caps.to_dict()})
    res.save(tmp_path / "r.yaml")
    recorded = yaml.safe_load((tmp_path / "r.yaml").read_text())["provider_state"]["capacities"]
    assert recorded == {"node1": {"cpus": "0", "memory": "256MiB", "link_rate": "1.25gbit"}}
    assert load_reservation(tmp_path / "r.yaml").capacities == caps
