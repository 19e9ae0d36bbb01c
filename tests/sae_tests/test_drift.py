"""Pure: the drift check (``Experiment.drift``): the reference point run again at the end of the
run, numbered after its own repetitions, kept out of every other statistic, compared with its
start by the report; each repetition once on a resume (no nodes)."""
import numpy as np
import pytest

import sae
from metareserve.errors import UsageError
from sae.planning.planner import Plan, plan
from sae.planning.spec import Experiment, Sweep
from sae.results.run.ledger import RunLedger
from sae.results.analysis.summary import drift, point_table, statements, summary
from sae.results.run.directory import RunDir, versions, write_results
from sae.running.execute import comparison_key, interleave
from test_ledger_results import READERS, _fill


def _experiment(**kw):
    base = dict(name="drifting", sweep=Sweep(cartesian={"selectivity": [100, 1], "reader": READERS}),
                repetitions=3, warmup=1, drift=True)
    return Experiment(**{**base, **kw})


def _run(tmp_path, e):
    p = plan(e, profile="tiny")
    run = RunDir.new(tmp_path, e.name, "tiny")
    run.write_yaml(run.plan, p.to_dict())
    return p, run, RunLedger.create(run.ledger, p, versions())


def test_the_reference_point_runs_again_last_with_at_least_three_measured_repetitions():
    p = plan(_experiment())
    first, check = p.points[0], p.points[-1]
    assert check.drift_of == first.id and check.id == f"{first.id}-drift" and check.spec == first.spec
    assert check.repetitions == 3 and [pt.drift_of for pt in p.points[:-1]] == [None] * 6
    assert p.steps[-2].stage == "run" and p.steps[-2].point == check.id and "drift check" in p.steps[-2].reason
    assert "6 points x 3 repetitions (1 warm-up) + the drift check" in p.text()
    assert [pt.drift_of for pt in Plan.from_dict(p.to_dict()).points] == [pt.drift_of for pt in p.points]
    # as many measured repetitions as the reference's own where it has more than three
    big = plan(_experiment(sweep=Sweep(cartesian={"selectivity": [100, 1]}, repetitions={"selectivity": {100: 6}})))
    assert big.points[-1].repetitions == 5
    assert len(plan(_experiment(drift=False)).points) == 6
    from sae.planning import settings
    assert len(plan(settings.apply(_experiment(), ["drift=false"])).points) == 6
    with pytest.raises(UsageError, match="drift must be true or false"):
        plan(_experiment(drift="yes"))


def test_the_reference_is_on_the_last_stack():
    """A stack is never built twice: the reference is the first point of the last one."""
    e = _experiment(sweep=Sweep(cartesian={"nodes": [3, 4], "selectivity": [100]}))
    p = plan(e)
    assert p.points[-1].drift_of == p.points[1].id and p.points[1].spec.cluster.nodes == 4
    assert [s.stage for s in p.steps].count("install") == 2   # the check installs nothing


def test_ledger_numbers_the_check_after_its_reference_and_resume_runs_each_once(tmp_path):
    p, run, ledger = _run(tmp_path, _experiment())
    first, check = p.points[0], p.points[-1]
    entries = ledger.of_point(check.id).values()
    assert sorted(e["repetition"] for e in entries) == [3, 4, 5]
    assert all(e["drift"] and not e["warmup"] for e in entries)
    assert len(ledger.entries) == 6 * 3 + 3
    ledger.mark(first.id, [0, 1, 2], "done", timings={r: {"start": r, "end": r + 1} for r in range(3)})
    ledger.mark(check.id, [3], "done", timings={3: {"start": 9, "end": 10}})
    again = RunLedger.load(run.ledger)
    assert again.pending(first.id) == [] and again.pending(check.id) == [4, 5]
    # the application runs the check last, after a pre-warm query (its warm-ups are its reference's)
    configs = [{"point": pt.id, "reps": again.pending(pt.id), "prewarm": 1 if pt.drift_of else 0}
               for pt in p.points if again.pending(pt.id)]
    points = [pt for pt in p.points if again.pending(pt.id)]
    order = interleave(configs, [comparison_key(pt) for pt in points], warmup=1)
    assert order[-3:] == [[check.id, "prewarm", 0], [check.id, "rep", 4], [check.id, "rep", 5]]
    reps = [(pid, rep) for pid, kind, rep in order if kind == "rep"]
    assert len(reps) == len(set(reps)) == sum(len(c["reps"]) for c in configs)


def test_results_mark_the_check_and_every_other_statistic_leaves_it_out(tmp_path):
    p, run, ledger = _run(tmp_path, _experiment())
    _fill(p, run, ledger, np.random.default_rng(2))
    write_results(run)
    df = sae.load_results(run.root)
    first = p.points[0]
    checked = df[df["drift"]]
    assert len(checked) == 3 and set(checked["point"]) == {f"{first.id}-drift"}
    assert set(checked["repetition"]) == {3, 4, 5} and (checked["selectivity"] == first.spec.workload.selectivity).all()
    assert not df.duplicated(["point", "repetition"]).any() and df["drift"].sum() == 3
    table = point_table(df).set_index("point")
    assert table.loc[first.id, "n"] == 2 and len(table) == 6   # its measured repetitions only
    s = summary(df)
    assert set(s["n_offload"]) == {2}
    text, moved = drift(df)
    assert text.startswith("the reference point (") and "3 vs 2 repetitions" in text
    assert statements(df, s).drift == text and any(line.endswith(text) for line in statements(df, s).lines())
    names = sorted(x.name for x in sae.make_report(run.root))
    assert "index.html" in names and "Drift" in (run.report / "index.html").read_text()
