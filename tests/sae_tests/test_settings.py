"""Settings (``--set path=value``, ``sae.run(..., set=...)``) and planning a catalogue: an
experiment changed without editing its file, validated like the file (pure: runs nothing)."""
import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

import sae
from metareserve.errors import UsageError
from sae.cli import main
from sae.planning import settings
from sae.planning.spec import Experiment, Sweep, Workload
from sae.running import runner
from sae.running.catalogue import plan_catalogue
from sae.running.context import RunOptions

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def exp(**kw):
    return Experiment(**{"name": "t", "sweep": Sweep(cartesian={"reader": ["offload", "vanilla"]}), **kw})


def test_values_are_yaml_and_win_over_the_file():
    parsed = settings.parse(["workload.selectivity=5", "repetitions=4", "workload.columns=[VendorID]",
                             "sweep.cartesian.reader=[offload]", "workload.compression=none"])
    assert parsed == {"workload.selectivity": 5, "repetitions": 4, "workload.columns": ["VendorID"],
                      "sweep.cartesian.reader": ["offload"], "workload.compression": "none"}
    e = settings.apply(exp(), parsed)
    assert (e.workload.selectivity, e.repetitions, e.workload.columns, e.sweep.cartesian) == \
        (5, 4, ("VendorID",), {"reader": ["offload"]})
    assert settings.parse(settings.texts(parsed)) == parsed   # recorded in spec.yaml, read back on resume


@pytest.mark.parametrize("item, message", [
    ("workload.selectivity=500", "--set workload.selectivity=500: experiment 't' point 0 reader=offload: "
                                 "selectivity 500 is outside (0, 100]"),
    ("workload.colour=1", "--set workload.colour: unknown field 'colour' of workload"),
    ("colour=1", "--set colour: unknown path (paths: repetitions"),
    ("workload.reader=offload", "--set workload.reader: the sweep varies 'reader', which would replace this "
                                "value; set the axis instead, e.g. --set sweep.cartesian.reader=[offload]"),
    ("sweep.cartesian.colour=[1]", "--set sweep.cartesian.colour: sweep: unknown axis 'colour'"),
    ("sweep.cartesian.workload.reader=[offload]", "already varies that field as 'reader'"),
    ("sweep.cartesian.selectivity=5", "give the axis a non-empty list"),
    ("repetitions=1", "--set repetitions=1: experiment 't': warmup must be"),
    ("pause=0.5", "--set pause=0.5: experiment 't' point 0 reader=offload: pause 0.5 s is shorter"),
    ("sweep.repetitions.reader=5", "--set sweep.repetitions.reader: give {value: repetitions}"),
    ("sweep.repetitions.colour={1: 3}", "--set sweep.repetitions.colour={1: 3}: experiment 't': sweep repetitions: "
                                        "'colour' is not an axis of the sweep (axes: reader)"),
    ("sweep.repetitions.reader={cache: 3}", "sweep repetitions: reader='cache' is not a value of the axis"),
    ("selectivity", "give path.to.field=value"),
    ("workload.selectivity=[1", "is not YAML"),
])
def test_bad_settings_are_refused_in_one_line_naming_the_setting(item, message):
    with pytest.raises(UsageError) as e:
        settings.apply(exp(), settings.parse([item]))
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_an_axis_s_counts_are_set_after_the_repetitions_in_any_order():
    """``repetitions`` drops the sweep's counts; ``sweep.repetitions.AXIS`` set beside it keeps its own."""
    counted = exp(sweep=Sweep(cartesian={"reader": ["offload", "vanilla"]}, repetitions={"reader": {"vanilla": 6}}))
    for items in (["repetitions=2", "sweep.repetitions.reader={offload: 4}"],
                  ["sweep.repetitions.reader={offload: 4}", "repetitions=2"]):
        e = settings.apply(counted, items)
        assert (e.repetitions, e.sweep.repetitions) == (2, {"reader": {"offload": 4}}), items
        assert [e.sweep.repetitions_of(p, e.repetitions) for p in e.sweep.points()] == [4, 2]
    assert settings.apply(counted, ["sweep.repetitions.reader={}"]).sweep.repetitions == {}
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS / "alleviation.py"), "--set", "repetitions=3",
                                  "--set", "sweep.repetitions.reader={offload: 5}"])
    assert r.exit_code == 0 and "x 3-5 repetitions" in r.output, r.output


def test_cli_plan_set_and_refusal():
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS / "alleviation.py"), "--set", "repetitions=5",
                                  "--set", "workload.selectivity=10"])
    assert r.exit_code == 0 and "3 points x 5 repetitions" in r.output, r.output
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS / "alleviation.py"), "--set", "workload.selectivity=0"])
    assert r.exit_code == 2 and "--set workload.selectivity=0:" in r.output and "outside (0, 100]" in r.output


def test_prepare_takes_an_experiment_object():
    loaded = sae.load_experiment(EXPERIMENTS / "alleviation.py")
    changed = dataclasses.replace(loaded, workload=Workload(selectivity=10))
    experiment, p = runner.prepare(changed, profile=None, options=RunOptions(), settings={"repetitions": 4})
    assert experiment.workload.selectivity == 10 and p.repetitions == 4 and p.profile == "tiny"
    with pytest.raises(UsageError, match=r"^Experiment object: --set workload.selectivity=0:"):
        runner.prepare(changed, profile=None, options=RunOptions(), settings={"workload.selectivity": 0})


def test_plan_dir_plans_every_experiment_of_the_catalogue_in_run_order():
    plans = plan_catalogue(EXPERIMENTS)
    assert [f.stem for f, _ in plans] == sorted(f.stem for f in EXPERIMENTS.glob("*.py"))
    assert {p.profile for _, p in plans} == {"tiny"}
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS)])
    assert r.exit_code == 0 and f"catalogue {EXPERIMENTS}: {len(plans)} experiments" in r.output, r.output
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS), "--set", "pause=0.5"])
    assert r.exit_code == 2 and "alleviation.py: --set pause=0.5" in r.output, r.output


def test_a_scoped_setting_changes_its_experiment_only_and_wins():
    assert settings.of_experiment(["repetitions=2", "t:repetitions=3", "u:drift=false"], "t") == {"repetitions": 3}
    assert settings.apply(exp(), ["repetitions=2", "u:repetitions=3"]).repetitions == 2
    plans = dict((f.stem, p) for f, p in plan_catalogue(EXPERIMENTS, set=[
        "repetitions=1", "warmup=0", "bandwidth:sweep.cartesian.link_rate=[200mbit, unlimited]",
        "selectivity:repetitions=2"]))
    assert {p.spec.params()["cluster"]["link_rate"] for p in plans["bandwidth"].points} == {"200mbit", "unlimited"}
    assert plans["selectivity"].repetitions == 2 and plans["alleviation"].repetitions == 1


@pytest.mark.parametrize("item, message", [
    ("nope:repetitions=2", r"'nope' is not an experiment of this run \(experiments: alleviation, "),
    ("alleviation:=2", r"give the path after the experiment's name"),
])
def test_a_scope_naming_no_experiment_of_the_run_is_refused(item, message):
    with pytest.raises(UsageError, match=message):
        plan_catalogue(EXPERIMENTS, set=[item])
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS / "alleviation.py"), "--set", item])
    assert r.exit_code == 2 and "alleviation.py: --set " in r.output and len(r.output.strip().splitlines()) == 1
