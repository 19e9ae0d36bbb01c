"""The cluster section's capacity fields: parsed into typed values when a point is resolved,
one line naming the field on bad input, written back canonically into the plan (pure)."""
from __future__ import annotations

import pytest

from metareserve import CpuSet, LinkRate, Rate, Size, UsageError
from sae.planning.capacities import resolve
from sae.planning.spec import ClusterSpec, Experiment, PointSpec, validate


def point(**cluster) -> PointSpec:
    (_, spec), = validate(Experiment(name="t", cluster=ClusterSpec(**cluster)))
    return spec


def test_a_point_holds_its_capacities_typed_and_its_params_canonical():
    spec = point(cores={"node1": "1,0"}, link_rate="1.25GBIT/core", host_memory="1G")
    c = spec.cluster
    assert c.cores == {"node1": CpuSet((0, 1))} and c.link_rate == LinkRate(Rate(1_250_000_000), per_core=True)
    assert c.host_memory == Size(1 << 30)
    assert spec.params()["cluster"] == {"nodes": 3, "layout": None, "cores": {"node1": "0-1"},
                                        "link_rate": "1.25gbit/core", "host_memory": "1GiB", "storage_load": 0.0,
                                        "storage_scans": 0}
    assert PointSpec.from_params(spec.params()).cluster == c


def test_spellings_of_one_capacity_are_one_point():
    assert point(link_rate="10Gbit/s").params() == point(link_rate="10gbit").params()


@pytest.mark.parametrize("cluster, field", [
    ({"link_rate": "fast"}, "cluster.link_rate: 'fast' is not a rate"),
    ({"link_rate": "unlimited/core"}, "cluster.link_rate: 'unlimited/core'"),
    ({"host_memory": "lots"}, "cluster.host_memory: 'lots' is not a size"),
    ({"cores": {"node1": "x"}}, "cluster.cores node1: 'x' is not a set of cores"),
    ({"cores": "half"}, "cluster.cores 'half' must be 'sides', 'shared'")])
def test_bad_capacities_are_refused_at_load_naming_the_field(cluster, field):
    with pytest.raises(UsageError) as e:
        point(**cluster)
    assert f"experiment 't' point 0: {field}" in str(e.value) and "\n" not in str(e.value)


def test_resolve_gives_each_host_its_rate_per_core():
    spec = point(cores={"node1": "0", "node2": "0"}, link_rate="100mbit/core", host_memory="256MiB")
    caps = resolve(spec.cluster, {"node1": "storage", "node2": "compute"}, ["node1", "node2"])
    assert caps.of("node1").link_rate == Rate(10 ** 8) and caps.of("node2").memory == Size(256 << 20)
    assert resolve(ClusterSpec(cores="shared", link_rate="unlimited"), {}, ["node1"]).to_dict() == {}
