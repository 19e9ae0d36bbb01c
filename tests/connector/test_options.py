"""The connector's tuning options come from one schema (sae/connector/options.json), so what
``sae plan`` refuses is what the data source refuses when Spark opens it: the real planner and the
real Options.java (compiled with the rendered OptionSpec.java and Mode.java, no cluster) are given
each option's edge values, and for every reader."""
import pytest

from metareserve.errors import UsageError
from sae.connector import options as connector_options
from sae.planning import readers
from sae.planning.spec import Experiment, Workload, validate


def _edges(option: connector_options.Option) -> list:
    """Values of ``option`` at and beyond its bounds (never its default: a workload spells that None)."""
    if option.kind == "int":
        values = [option.minimum - 1, option.minimum, option.maximum, option.maximum + 1]
    elif option.kind == "choice":
        values = [*option.choices, "sometimes"]
    else:
        values = [True, False]
    return [v for v in values if v != option.default]


def _planned(workload: Workload) -> str | None:
    try:
        validate(Experiment(name="options", workload=workload))
        return None
    except UsageError as e:
        return str(e)


def test_the_plan_refuses_exactly_what_the_data_source_refuses(java_options):
    cases = [(reader, name, value) for reader in readers.READERS.values() if reader.connector
             for name in connector_options.WORKLOAD for value in _edges(connector_options.OPTIONS[name])]
    workloads = [Workload(reader=reader.name, **{name: value}) for reader, name, value in cases]
    base = {"path": "/data/taxi", "ceph_conf": "/etc/ceph/ceph.conf", "scan_library": "/opt/sae/libsae_scan.so"}
    java = java_options([{**base, **w.connector_options(), "mode": readers.get(w.reader).reads.mode.name}
                          for w in workloads])
    for (reader, name, value), w, refused in zip(cases, workloads, java):
        planned = _planned(w)
        assert (planned is None) == (refused is None), (reader.name, name, value, planned, refused)
        if refused:
            assert f"option {name}=" in refused and f"workload.{name}" in planned, (planned, refused)


def test_a_batch_larger_than_the_protocol_takes_is_refused_at_plan_time():
    limit = connector_options.OPTIONS["batch_size"].maximum
    assert limit == connector_options.SPEC.max_batch_rows
    assert _planned(Workload(batch_size=limit)) is None
    assert f"workload.batch_size must be an integer >= 1 and <= {limit}, not {limit + 1}" in \
        _planned(Workload(batch_size=limit + 1))


def test_a_bad_options_file_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "options.json"
    for text, what in (('{"options": {"x": {"default": 1, "doc": "", "min": 1, "max": "no_such"}}}', "no_such"),
                       ('{"options": {"x": {"default": "a", "doc": "", "choices": ["b"]}}}', "not one of its choices"),
                       ('{"options": {"x": {"default": true, "doc": "", "needs": "flying"}}}', "needs one of")):
        bad.write_text(text)
        with pytest.raises(UsageError, match=what) as e:
            connector_options.load(bad)
        assert str(e.value).startswith(f"{bad}: not a valid options spec") and "\n" not in str(e.value)
