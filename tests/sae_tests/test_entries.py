"""Each extension point is one entry: a toy reader, query or stage added to its table alone (and
nothing else) is planned, rendered for the connector and refused where it should be. Providers:
tests/metareserve_tests/test_providers.py. Running and drawing a toy reader needs a cluster."""
from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pytest

from metareserve.errors import UsageError
from sae.connector import SubmitSpec, spec_java
from sae.connector.options import Mode
from sae.planning import queries, readers, stages
from sae.planning.planner import plan
from sae.planning.spec import DataSpec, Experiment, Sweep, Workload
from sae.results.analysis import cost_model
from sae.running.context import RunOptions, Stack, StageInput, StageResult

TOY_READER = readers.Reader("toy", "toy", "tab:gray", False, readers.ConnectorRead(Mode("toy", pushdown=True)),
                            "a toy connector reader")
TOY_FILES = readers.Reader("toyfiles", "toyfiles", "tab:olive", True, readers.SparkFiles(), "a toy file reader",
                           (("csv", "toy files are Parquet only"),))
TOY_QUERY = queries.Query("toy", "SELECT COUNT(*) AS trips FROM trips WHERE {filter}", "a toy count")


@pytest.fixture
def toy_readers(monkeypatch):
    for r in (TOY_READER, TOY_FILES):
        monkeypatch.setitem(readers.READERS, r.name, r)


def _plan(**fields):
    return plan(Experiment(name="toy", **fields))


def test_a_toy_reader_is_planned_rendered_for_the_connector_and_covered_by_the_cost_model(toy_readers):
    p = _plan(sweep=Sweep(cartesian={"reader": ["toy", "toyfiles", "vanilla"]}))
    assert [pt.spec.workload.reader for pt in p.points] == ["toy", "toyfiles", "vanilla"]
    assert "toy" in readers.NAMES and "toy" in readers.OFFLOADING and "toyfiles" in readers.BASELINES
    assert readers.ratio_pair(["toyfiles", "toy"]) == ("toy", "toyfiles")
    assert 'TOY("toy", true, false, false)' in spec_java.sources()["sae/connector/Mode.java"]
    assert cost_model._path_of(TOY_READER) == cost_model.PUSHDOWN and cost_model._path_of(TOY_FILES) == cost_model.FILES
    source = Workload(reader="toy", batch_size=4096).read_source("/d", build=SubmitSpec([], [], {}, {}), mount=None)
    assert source.options["mode"] == "toy" and source.options["batch_size"] == "4096"


def test_a_toy_reader_is_refused_where_its_entry_says(toy_readers):
    with pytest.raises(UsageError, match="workload.pushback always applies to reader auto only, not toy"):
        _plan(workload=Workload(reader="toy", pushback="always"))
    with pytest.raises(UsageError, match="workload.reader toyfiles cannot read data.format csv: toy files are "
                                         "Parquet only; use one of offload, auto, no-offload, vanilla, indexed, cache, toy"):
        _plan(workload=Workload(reader="toyfiles"), data=DataSpec(format="csv"))


def test_a_toy_query_is_planned_and_refused_where_it_cannot_run(monkeypatch):
    monkeypatch.setitem(queries.QUERIES, TOY_QUERY.name, TOY_QUERY)
    p = _plan(sweep=Sweep(cartesian={"query": list(queries.NAMES)}))
    assert [pt.spec.workload.query for pt in p.points][-1] == "toy"
    assert p.points[-1].spec.workload.question.statement("total_amount", 12.5) == \
        "SELECT COUNT(*) AS trips FROM trips WHERE total_amount < 12.5"
    monkeypatch.setitem(queries.QUERIES, "toyjoin", queries.Query("toyjoin", "SELECT COUNT(*) FROM trips t JOIN "
                                                                  "zones z ON t.PULocationID = z.LocationID", ""))
    with pytest.raises(UsageError, match="workload.query toyjoin joins the zones table"):
        _plan(workload=Workload(query="toyjoin"), data=DataSpec(format="csv"))


@pytest.fixture
def toy_stage(tmp_path, monkeypatch):
    """A stage ``warm`` after ``deploy``, once per dataset, whose function is in a module of its own."""
    (tmp_path / "toy_stage.py").write_text(textwrap.dedent('''
        from sae.running import StageResult

        def stage_warm(given):
            return StageResult()
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    stage = stages.Stage("warm", "toy_stage:stage_warm", "point", lambda p: "read the dataset once", 3, key="data_key")
    saved = dict(stages.STAGES)
    order = [*saved][:[*saved].index("deploy") + 1] + ["warm"] + [*saved][[*saved].index("deploy") + 1:]
    stages.STAGES.clear()
    stages.STAGES.update({name: saved.get(name, stage) for name in order})
    try:
        yield stage
    finally:
        stages.STAGES.clear()
        stages.STAGES.update(saved)
        sys.modules.pop("toy_stage", None)


def test_a_toy_stage_is_planned_skippable_and_replaceable(toy_stage):
    p = _plan(sweep=Sweep(cartesian={"selectivity": [1, 100], "rows": [100, 200]}))
    warm = [s for s in p.steps if s.stage == "warm"]
    assert len(warm) == 2 and all(s.reason == "read the dataset once" for s in warm)   # once per dataset
    order = [s.stage for s in p.steps]
    assert order.index("deploy") < order.index("warm") < order.index("build")
    assert toy_stage.builtin()(None) == StageResult()
    assert RunOptions(skip=("warm",)).skip == ("warm",)
    _plan(stages={"warm": lambda given: StageResult()})   # an experiment may replace it
    # it takes and gives nothing (its entry says so): the runner hands it neither hosts nor stack,
    # and refuses a stack it would give
    stack = Stack(ceph=None)
    state = StageInput(session=None, stack=stack)
    assert state.for_step(toy_stage, None) == StageInput(session=None)
    assert state.fold(toy_stage, StageResult()) == state
    with pytest.raises(TypeError, match="the warm stage's function gave stack; its entry gives nothing"):
        state.fold(toy_stage, StageResult(stack=Stack(ceph=None)))
    with pytest.raises(TypeError, match="the warm stage's function returned NoneType, not a StageResult"):
        state.fold(toy_stage, None)
    with pytest.raises(UsageError, match="--skip 'run': not a skippable stage"):
        RunOptions(skip=("run",))


def test_a_toy_figure_is_declared_and_drawn_from_its_entry_alone(monkeypatch, tmp_path):
    """A figure entry naming a function: an experiment may declare it, the report draws it (the
    function takes what it asks for) and a name without an entry is refused."""
    from sae.planning import figures
    from sae.results.drawing.report import draw_figures, figure_names, reads_event_log
    module = tmp_path / "toy_figure.py"
    module.write_text(textwrap.dedent("""
        def plot_toy(df, out):
            path = out / "toy.png"
            path.write_bytes(b"toy:%d" % len(df))
            return path

        plot_std = plot_toy
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    toy = figures.Figure("toy", "toy_figure", reads_event_log=True)
    monkeypatch.setattr(figures, "FIGURES", {**figures.FIGURES, "toy": toy})
    p = _plan(figures=("toy",))
    assert figure_names(p)[0] == "toy" and reads_event_log(p)

    class Run:   # what drawing needs of a run directory
        def load_plan(self):
            return p
    import pandas as pd
    # the standard figures need real results: one toy standard figure stands for them
    monkeypatch.setattr(figures, "FIGURES", {"toy": toy, "std": figures.Figure("std", "toy_figure", standard=True)})
    assert draw_figures(Run(), pd.DataFrame({"x": [1, 2]}), tmp_path) == [tmp_path / "toy.png"] * 2
    assert (tmp_path / "toy.png").read_bytes() == b"toy:2"
    with pytest.raises(UsageError, match="unknown figure 'nope'"):
        _plan(figures=("nope",))


def test_the_scan_library_is_built_for_a_stack_only_where_a_reader_scans_in_the_task(toy_readers, monkeypatch):
    """The stack's build makes the class's scan as a client library only where a point's reader
    may scan objects in the Spark task (its mode's ``pushback``: auto, or a toy mode saying so)."""
    from sae.running import reader
    monkeypatch.setitem(readers.READERS, "toyback", readers.Reader(
        "toyback", "toyback", "tab:cyan", False, readers.ConnectorRead(Mode("toyback", pushdown=True, pushback=True)),
        "a toy reader scanning in the task"))
    point = lambda name: SimpleNamespace(spec=SimpleNamespace(workload=SimpleNamespace(reader=name)))
    scans = {name: reader._scans_in_task(point(name)) for name in readers.READERS}
    assert {n for n, s in scans.items() if s} == {"auto", "toyback"}, scans
