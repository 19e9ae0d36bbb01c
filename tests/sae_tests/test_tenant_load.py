"""Second tenants on the storage side (``cluster.storage_load``, ``cluster.storage_scans``):
validated at load, planned as a change of the hosts' shape (their own application), stress-ng's
command line per share and cores, the scan tenant's calls read from its log, and what a tenant
got per repetition interpolated from samples (pure)."""
from __future__ import annotations

import math

import pytest

from metareserve import UsageError
from sae.planning.planner import plan
from sae.planning.readers import AUTO, NAMES, STANDARD, names
from sae.planning.spec import ClusterSpec, Experiment, Sweep, validate
from sae.app.backend_scan import TENANT_TAG
from sae.running.tenant_load import Samples, calls_answered, stress_argv


@pytest.mark.parametrize("share, cores, workers, load", [
    (0.5, 1, 1, 50), (1, 1, 1, 100), (2, 1, 2, 100), (1.5, 1, 2, 75), (0.25, 4, 1, 100), (0.3, 4, 2, 60),
    (4, 2, 8, 100), (0.001, 1, 1, 1)])
def test_stress_ng_keeps_the_declared_share_of_the_cores_busy(share, cores, workers, load):
    argv = stress_argv(share, cores)
    assert argv[:5] == ["stress-ng", "--cpu", str(workers), "--cpu-load", str(load)]
    assert workers * load / 100 == pytest.approx(share * cores, abs=0.02) or load == 1


def test_the_tenants_cpu_in_a_window_is_interpolated_between_samples():
    s = Samples()
    for t, cpu in ((10.0, 0.0), (11.0, 0.5), (12.0, 1.5), (13.0, 2.5)):
        s.add(t, cpu)
    assert s.between(10.5, 12.5) == pytest.approx(2.0 - 0.25)
    assert s.between(11.0, 13.0) == pytest.approx(2.0)
    assert s.between(9.0, 12.0) is None and s.between(12.0, 14.0) is None   # outside the samples: unknown


def point_specs(**cluster):
    return [spec for _, spec in validate(Experiment(name="t", cluster=ClusterSpec(**cluster)))]


@pytest.mark.parametrize("value", [-0.5, 4.5, "half", True, None, math.nan, math.inf])
def test_a_bad_storage_load_is_refused_at_load_naming_the_field(value):
    with pytest.raises(UsageError) as e:
        point_specs(storage_load=value)
    assert "experiment 't' point 0: cluster.storage_load" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("value", [-1, 65, 2.5, "4", True, None, math.nan])
def test_a_bad_storage_scans_is_refused_at_load_naming_the_field(value):
    with pytest.raises(UsageError) as e:
        point_specs(storage_scans=value)
    assert "experiment 't' point 0: cluster.storage_scans" in str(e.value) and "\n" not in str(e.value)


def test_the_scan_tenants_calls_are_its_logs_last_pass():
    assert calls_answered("") is None and calls_answered("Traceback (most recent call last):\n") is None
    log = "".join(f'{TENANT_TAG}{{"pass": {n}, "end": {100 + n}, "calls": {8 * (n + 1)}, "failures": []}}\n'
                  for n in range(3))
    assert calls_answered(log) == 24
    assert calls_answered(log + TENANT_TAG + '{"pass": 3, "en') == 24   # the last line half written


def test_each_tenant_state_is_its_own_shape_step_and_application():
    p = plan(Experiment(name="t", sweep=Sweep(zipped={"storage_load": [0, 2, 0], "storage_scans": [0, 0, 4]},
                                              cartesian={"reader": ["offload"]})))
    shapes = [s for s in p.steps if s.stage == "shape"]
    assert len(shapes) == 3 and "storage_scans=4" in shapes[2].reason and "storage_load" not in shapes[2].reason
    assert [(pt.spec.cluster.storage_load, pt.spec.cluster.storage_scans) for pt in p.points] == [(0, 0), (2, 0), (0, 4)]


def test_each_load_level_is_its_own_shape_step_and_application():
    p = plan(Experiment(name="t", sweep=Sweep(cartesian={"storage_load": [0, 2], "reader": names()})))
    shapes = [s for s in p.steps if s.stage == "shape"]
    assert len(shapes) == 2 and "storage_load=2" in shapes[1].reason and "storage_load" not in shapes[0].reason
    assert len({pt.shape_key for pt in p.points}) == 2
    assert [pt.spec.cluster.storage_load for pt in p.points] == [0, 0, 0, 2, 2, 2]
    assert p.points[0].spec.params()["cluster"]["storage_load"] == 0


def test_auto_is_a_reader_experiments_name_and_the_standard_three_are_the_default():
    assert "auto" in NAMES and AUTO.connector and not AUTO.baseline and AUTO.reads.mode.name == "auto" and AUTO.reads.mode.pushback
    assert names() == [r.name for r in STANDARD] == ["offload", "no-offload", "vanilla"]
    assert names(AUTO) == ["auto"]
