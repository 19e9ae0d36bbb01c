"""Pure: the order a warm application runs its queries in: the readers of a comparison take
turns, warm-ups first, every pending repetition exactly once (also on a resume)."""
import dataclasses

import numpy as np

import sae
from sae.planning.planner import plan
from sae.planning.spec import READ_OPTIONS, Experiment, Sweep, Workload
from sae.running.execute import comparison_key, interleave, reader_of
from sae.results.run.directory import write_results
from test_ledger_results import READERS, _fill, _run


def _points():
    e = Experiment(name="t", sweep=Sweep(cartesian={"selectivity": [100, 1], "reader": READERS}),
                   repetitions=3, warmup=1)
    return plan(e, profile="tiny").points


def test_readers_of_a_comparison_take_turns_warmups_first():
    points = _points()
    configs = [{"point": p.id, "reps": [0, 1, 2], "prewarm": 1 if i < 3 else 0} for i, p in enumerate(points)]
    order = interleave(configs, [comparison_key(p) for p in points], warmup=1)
    name = {p.id: (p.spec.workload.selectivity, p.spec.workload.reader) for p in points}
    got = [(*name[pid], kind, rep) for pid, kind, rep in order]
    a, b, c = READERS   # each round starts one reader further on (warm-ups and measured rounds apart)
    first = [(100.0, r, "prewarm", 0) for r in READERS] + [(100.0, r, "rep", 0) for r in READERS]
    assert got[:12] == first + [(100.0, r, "rep", 1) for r in (a, b, c)] + [(100.0, r, "rep", 2) for r in (b, c, a)]
    assert got[12:] == [(1.0, r, "rep", 0) for r in (a, b, c)] + [(1.0, r, "rep", 1) for r in (a, b, c)] + \
        [(1.0, r, "rep", 2) for r in (b, c, a)]


def test_each_reader_leads_as_many_rounds_and_runs_right_after_every_other():
    points = _points()[:3]
    configs = [{"point": p.id, "reps": list(range(7))} for p in points]
    order = interleave(configs, [comparison_key(p) for p in points], warmup=1)
    measured = [pid for pid, _, rep in order if rep >= 1]
    leaders = [measured[i] for i in range(0, 18, 3)]
    assert sorted(leaders) == sorted([p.id for p in points] * 2)
    after = {(x, y) for x, y in zip(measured, measured[1:]) if x != y}
    assert len(after) == 6   # every reader also runs right after every other


def test_resume_runs_each_pending_repetition_once():
    points = _points()[:3]
    pending = [[2], [0, 1, 2], [1]]   # a resumed run: warm-ups done for two readers
    configs = [{"point": p.id, "reps": reps, "prewarm": 1 if reps[0] >= 1 else 0} for p, reps in zip(points, pending)]
    order = interleave(configs, [comparison_key(p) for p in points], warmup=1)
    reps = [(pid, rep) for pid, kind, rep in order if kind == "rep"]
    assert sorted(reps) == sorted((p.id, r) for p, rs in zip(points, pending) for r in rs)
    a, b, c = (p.id for p in points)
    assert order == [[a, "prewarm", 0], [c, "prewarm", 0], [b, "rep", 0],
                     [a, "rep", 2], [b, "rep", 1], [c, "rep", 1], [b, "rep", 2]]


def test_points_differing_beyond_the_reader_are_not_mixed():
    points = _points()
    keys = [comparison_key(p) for p in points]
    assert len(set(keys)) == 2 and keys[:3] == [keys[0]] * 3


def test_auto_s_forced_choices_are_readers_of_one_comparison():
    """Auto with its choice forced (Workload.pushback) is a reader variant: its points take turns
    with the other readers', and each variant is the first of its reader in an application."""
    e = Experiment(name="t", sweep=Sweep(cartesian={"selectivity": [1], "pushback": ["never", "always", "cost"]}),
                   workload=Workload(reader="auto"), repetitions=3, warmup=1)
    points = plan(e, profile="tiny").points
    assert len({comparison_key(p) for p in points}) == 1
    assert len({reader_of(p) for p in points}) == 3
    order = interleave([{"point": p.id, "reps": [0, 1, 2]} for p in points], [comparison_key(p) for p in points], 1)
    assert [pid for pid, _, rep in order if rep == 1] == [p.id for p in points]


def test_results_record_the_executed_order(tmp_path):
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [1], "reader": READERS}))
    _fill(p, run, ledger, np.random.default_rng(0))
    for e in ledger.entries.values():   # executed interleaved: rep 0 of each reader, then rep 1, ...
        k = READERS.index(p.point(e["point"]).spec.workload.reader)
        e["start"], e["end"] = 1e9 + 10 * (3 * e["repetition"] + k), 1e9 + 10 * (3 * e["repetition"] + k) + 1
    ledger.save()
    write_results(run)
    df = sae.load_results(run.root)
    assert sorted(df["seq"]) == list(range(9))
    by_seq = df.sort_values("seq")
    assert list(by_seq["reader"]) == READERS * 3 and list(by_seq["repetition"]) == [0] * 3 + [1] * 3 + [2] * 3


def test_application_follows_the_schedule_or_each_point_in_turn():
    from sae.app.run_points import schedule
    points = [{"point": "a", "reps": [0, 1], "prewarm": 1}, {"point": "b", "reps": [0]}]
    assert schedule({"points": points}) == [("a", "prewarm", 0), ("a", "rep", 0), ("a", "rep", 1), ("b", "rep", 0)]
    given = [["b", "rep", 0], ["a", "rep", 0]]
    assert schedule({"points": points, "schedule": given}) == [("b", "rep", 0), ("a", "rep", 0)]


def test_the_readers_options_make_variants_of_one_comparison():
    """Points that differ only in how they are read (the reader and its options: a task layout,
    a batch size, a reply codec) take turns, so a run that warms up or slows down weighs on
    every variant alike; a point that differs in what is read stays apart."""
    e = Experiment(name="t", sweep=Sweep(cartesian={"selectivity": [1, 100], "reader": ["offload", "auto"],
                                                    "objects_per_partition": [None, 2]}),
                   repetitions=3, warmup=1)
    points = plan(e, profile="tiny").points
    by_key = {}
    for p in points:
        by_key.setdefault(comparison_key(p), set()).add(p.spec.workload.selectivity)
    assert sorted(by_key.values()) == [{1.0}, {100.0}]
    one = [p for p in points if p.spec.workload.selectivity == 1]
    order = interleave([{"point": p.id, "reps": [0, 1, 2]} for p in one], [comparison_key(p) for p in one], 1)
    assert [pid for pid, _, rep in order if rep == 1] == [p.id for p in one]


def test_read_options_are_what_the_connector_options_are_made_of():
    """READ_OPTIONS, which makes variants of one comparison, is exactly the workload fields the
    connector's options depend on: changing any other field leaves them alone."""
    base = Workload(reader="auto")
    changed = {"compression": "lz4", "batch_size": 4096, "objects_per_partition": 3, "whole_objects": False,
               "operators": False, "pushback": "never"}
    assert set(changed) == set(READ_OPTIONS)
    for field, value in changed.items():
        assert dataclasses.replace(base, **{field: value}).connector_options() != base.connector_options(), field
    others = {"column": "fare_amount", "selectivity": 5.0, "columns": ("total_amount",), "reader": "vanilla"}
    for field, value in others.items():
        assert dataclasses.replace(base, **{field: value}).connector_options() == base.connector_options(), field
