"""The host-count axis without a cluster: a side with more hosts than cores gives each host an
equal quota of them (``cores="split"``), the plan sizes memory per host count, the scale figure
draws each side's spending and the OSDs' balance per host count, and the placement recorded
before and after a point's application (what the PG autoscaler moved) reaches the results and the
autoscaler's figure."""
import json
from pathlib import Path

import pandas as pd
import pytest

import sae
from metareserve.capacity import online_cpus
from sae.planning import capacities, machine
from sae.planning.spec import ClusterSpec
from sae.results.drawing.axis_figures import plot_autoscaler
from sae.results.drawing.host_figures import plot_scale
from sae.results.run.directory import placement_columns, plain_hosts

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(len(online_cpus()) != 2, reason="the shares below are a 2-core machine's")
def test_split_gives_each_host_its_share_of_its_sides_cores_as_a_quota():
    names = [f"node{i}" for i in range(1, 18)]
    sides = capacities.sides_of(machine.layout(17, None).host_roles(), names)
    caps = capacities.resolve(ClusterSpec(nodes=17, cores="split"), sides, names)
    storage, compute = caps.of("node1"), caps.of("node17")
    assert (str(storage.cpus), storage.cpu_quota) == ("1", 1 / 8)    # 8 OSD hosts on one core
    assert (str(compute.cpus), compute.cpu_quota) == ("0", 1 / 9)    # the driver's host and 8 workers
    assert storage.link_rate == 1.25e9 / 8                            # 1.25 Gbit/s per core of its share
    three = capacities.resolve(ClusterSpec(nodes=3, cores="split"),
                               capacities.sides_of(machine.layout(3, None).host_roles(), names[:3]), names[:3])
    assert three.of("node1").cpu_quota is None and three.of("node2").cpu_quota == 0.5


def test_plain_hosts_run_only_an_executor_or_an_osd():
    """What the idle window's per-host rate is taken over (results' ``*_idle_cpu_rate``)."""
    three, seventeen = plain_hosts(machine.layout(3, None)), plain_hosts(machine.layout(17, None))
    assert three == {"compute": {"node3"}, "storage": set()}   # node2: the driver; node1: the monitors
    assert seventeen == {"compute": {f"node{i}" for i in range(10, 18)}, "storage": {f"node{i}" for i in range(2, 9)}}
    assert plain_hosts(None) == {"compute": set(), "storage": set()}


def test_the_scale_experiment_plans_a_stack_per_size_and_the_memory_of_the_largest():
    plan = sae.plan(sae.load_experiment(ROOT / "experiments" / "scale.py").with_profile("tiny"), profile="tiny")
    sizes = {p.spec.cluster.nodes: p.stack_key for p in plan.points}
    assert sorted(sizes) == [3, 5, 9, 17] and len(set(sizes.values())) == 4
    assert machine.needs(plan.points).memory == max(machine.point_memory(p.spec) for p in plan.points)
    assert machine.point_memory(next(p for p in plan.points if p.spec.cluster.nodes == 17).spec) < 20 << 30


def test_the_scale_figure_draws_per_host_count_and_only_with_two(tmp_path):
    rows = []
    for hosts, osds in ((3, 1), (5, 2), (9, 4)):
        for reader, sel, rx in (("offload", 1, 1e6), ("no-offload", 1, 1e8), ("offload", 100, 1e8)):
            for rep in range(3):
                rows.append({"hosts": hosts, "osds": osds, "reader": reader, "selectivity": sel, "warmup": rep == 0,
                             "compute_rx_bytes": rx, "compute_cpu_s": 1.0 + hosts / 10, "storage_cpu_s": 0.5 * osds,
                             "placement_imbalance": 1 + 1 / osds, "total_s": 2.0,
                             "objects_per_osd": json.dumps({f"osd.{i}": 3 for i in range(osds)})})
    df = pd.DataFrame(rows)
    path = plot_scale(df, tmp_path)
    assert path == tmp_path / "scale.png" and path.stat().st_size > 10_000
    assert plot_scale(df[df["hosts"] == 3], tmp_path / "none") is None


def test_placement_before_and_after_a_points_application_gives_what_moved(tmp_path):
    """The run's placement record of a point, before and after its application: the columns of
    each, and the bytes the OSDs gained in between (an OSD emptied by a PG merge gains nothing)."""
    before = {"osd.0": {"objects": 4, "bytes": 400, "pgs": 8}, "osd.1": {"objects": 4, "bytes": 400, "pgs": 8}}
    after = {"osd.0": {"objects": 8, "bytes": 800, "pgs": 4}, "osd.1": {"objects": 0, "bytes": 0, "pgs": 0}}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"before": before}))
    alone = placement_columns(path, 3)
    assert alone == {"hosts": 3, "osds": 2, "objects_per_osd": '{"osd.0": 4, "osd.1": 4}',
                     "bytes_per_osd": '{"osd.0": 400, "osd.1": 400}', "placement_imbalance": 1.0}
    path.write_text(json.dumps({"before": before, "after": after}))
    both = placement_columns(path, 3)
    assert both == {**alone, "objects_per_osd_after": '{"osd.0": 8, "osd.1": 0}',
                    "bytes_per_osd_after": '{"osd.0": 800, "osd.1": 0}', "placement_imbalance_after": 2.0,
                    "bytes_moved": 400}
    assert placement_columns(tmp_path / "none.json", 3) == {"hosts": 3}


def test_the_autoscaler_figure_shows_each_settings_objects_per_osd_before_and_after(tmp_path):
    rows = []
    for on, after in ((False, {"osd.0": 4, "osd.1": 4}), (True, {"osd.0": 8, "osd.1": 0})):
        for rep in range(4):
            rows.append({"pg_autoscale": on, "warmup": rep == 0, "total_s": 2.0 + rep, "start": rep + 10 * on,
                         "osd_pgs": 16 if not on else 8, "objects_per_osd": json.dumps({"osd.0": 4, "osd.1": 4}),
                         "objects_per_osd_after": json.dumps(after), "bytes_moved": 400.0 if on else 0.0})
    path = plot_autoscaler(pd.DataFrame(rows), tmp_path)
    assert path == tmp_path / "autoscaler.png" and path.stat().st_size > 10_000
    plain = pd.DataFrame(rows).drop(columns=["objects_per_osd", "objects_per_osd_after", "bytes_moved"])
    (tmp_path / "plain").mkdir()
    assert plot_autoscaler(plain, tmp_path / "plain") is not None   # runs that recorded no placement
