"""Pure layer: the run stage's recorder (application lines → ledger, exactly once, whether a line
arrives streamed, replayed from the raw file, or both) and the console's lines (no nodes)."""
import io
import json
import logging
import types

from rich.console import Console

import metareserve.log as mlog
from sae.running.console import RunConsole
from sae.running.execute import TAG, Recorder
from sae.results.run.ledger import RunLedger
from sae.planning.planner import plan
from sae.results.run.directory import RunDir, versions
from sae.planning.spec import Experiment, Sweep
from sae.running.context import Session, Stack, StageInput


def _session(tmp_path):
    e = Experiment(name="rec", sweep=Sweep(cartesian={"selectivity": [10, 50, 100]}), repetitions=3, warmup=1)
    p = plan(e, profile="tiny")
    run = RunDir.new(tmp_path, e.name, "tiny")
    ledger = RunLedger.create(run.ledger, p, versions())
    ledger.begin_session("run")
    session = Session(experiment=e, plan=p, run=run, ledger=ledger, options=None,
                      console=RunConsole(p, ledger, p.order))
    return session, p


def _rep(point, rep, t):
    return {"event": "rep", "point": point, "repetition": rep, "discarded": False, "start": t, "end": t + 1,
            "init_s": 0.1, "compute_s": 0.9, "total_s": 1.0, "rows": 5, "checksum": 7}


def test_recorder_records_each_repetition_once_and_fails_the_interrupted_point(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="sae")
    session, p = _session(tmp_path)
    a, b, c = p.order
    stack = Stack(ceph=None, spark=types.SimpleNamespace(driver_node="node1"))   # the driver's name is all it reads
    events = [{"event": "app", "pid": 1, "jvm_pid": 2}, {"event": "point", "point": a},
              *[_rep(a, r, 10 + r) for r in range(3)], {"event": "point-end", "point": a, "error": None},
              {"event": "point", "point": b}, _rep(b, 0, 20)]      # the application dies here
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(e) + "\n" for e in events))
    handed = []
    with Recorder(StageInput(session, stack=stack), [p.point(x) for x in p.order], "s1-1-test") as rec:
        for e in events:
            rec.line(TAG + json.dumps(e))
        rec.line("26/11/22 INFO SparkContext: Running Spark version 4.0")   # Spark's own: DEBUG only
        rec.replay(raw)                   # every event a second time: recorded once
        rec.finish("[node1 spark-submit] killed")
    rec.hand_back(handed.append)
    led = session.ledger
    assert [e["state"] for e in led.of_point(a).values()] == ["done"] * 3
    assert [e["state"] for e in led.of_point(b).values()] == ["done", "failed", "failed"]
    assert [e["state"] for e in led.of_point(c).values()] == ["todo"] * 3      # never reached
    assert {e["attempts"] for e in led.of_point(a).values()} == {1}
    assert led.of_point(a)[next(iter(led.of_point(a)))]["result"]["rows"] == 5
    assert [(o.point.id, o.error is None) for o in handed] == [(a, True), (b, False)]
    assert "killed" in handed[1].error and rec.reached == {a, b}
    assert "SparkContext" not in caplog.text
    lines = [r.getMessage() for r in caplog.records if "repetition" in r.getMessage()]
    assert len(lines) == 4 and "(warm-up)" in lines[0] and "ETA" in lines[-1]   # plain lines, off a terminal


def test_points_are_handed_back_in_the_plans_order_whatever_order_they_ended_in(tmp_path):
    """The readers' rounds rotate (interleave), so a comparison's points end in any order; the run
    steps (ledger's ``executed``, the console's step lines) still follow the plan."""
    session, p = _session(tmp_path)
    a, b, c = p.order
    stack = Stack(ceph=None, spark=types.SimpleNamespace(driver_node="node1"))
    events = [{"event": "point", "point": x} for x in (a, b, c)] + \
        [_rep(x, r, 10 * r + i) for r in range(3) for i, x in enumerate((c, a, b))] + \
        [{"event": "point-end", "point": x, "error": None} for x in (c, a, b)]
    handed = []
    with Recorder(StageInput(session, stack=stack), [p.point(x) for x in p.order], "s1-1-test") as rec:
        for e in events:
            rec.line(TAG + json.dumps(e))
        rec.finish("ended")
    rec.hand_back(handed.append)
    assert [o.point.id for o in handed] == [a, b, c] and all(o.error is None for o in handed)


def test_details_demote_deployer_lines_and_the_bar_shares_the_console(tmp_path, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG, logger="sae")
    out = io.StringIO()
    monkeypatch.setattr(mlog, "terminal", lambda: True)
    monkeypatch.setattr(mlog, "_console", Console(file=out, force_terminal=True, width=100))
    session, p = _session(tmp_path)
    with session.console.session():
        mlog.node_log("node2", "ceph-osd start", "osd.1 started")
        with mlog.progress("fan-out", 3) as advance:      # nested: a task of the same display
            advance()
        session.console.repetition_done(p.point(p.order[0]), 0, 1.5)
        session.console.bar.refresh()
    levels = {r.getMessage(): r.levelno for r in caplog.records}
    assert levels["[node2 ceph-osd start] osd.1 started"] == logging.DEBUG
    assert "repetitions" in out.getvalue() and "ETA" in out.getvalue()
