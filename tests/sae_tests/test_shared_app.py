"""Pure: the warm application's serve loop waits for its next job file and ends at the stop
file or when idle; a run whose report reads Spark's event log keeps an application of its own
(the catalogue's shared application itself runs in tests/sae_tests/test_catalogue.py)."""
import json
import threading
import time
from pathlib import Path

from sae.app import EVENT_TAG, run_points
from sae.planning.loader import load_experiment
from sae.planning.planner import plan
from sae.results.report import reads_event_log

ROOT = Path(__file__).resolve().parents[2]


def test_the_serve_loop_takes_its_next_job_and_ends_at_stop_or_when_idle(tmp_path):
    serve = {"dir": str(tmp_path), "idle": 30}
    job = {"run_id": "r", "out": str(tmp_path / "out.jsonl"), "points": []}
    threading.Timer(0.3, lambda: (tmp_path / "job-1.json").write_text(json.dumps(job))).start()
    assert run_points.next_job(serve, 1, poll=0.05) == job
    (tmp_path / "stop").write_text("")
    t0 = time.time()
    assert run_points.next_job(serve, 2, poll=0.05) is None and time.time() - t0 < 5
    (tmp_path / "stop").unlink()
    t0 = time.time()
    assert run_points.next_job(dict(serve, idle=0.3), 2, poll=0.05) is None and time.time() - t0 >= 0.3


def test_only_a_report_that_reads_the_event_log_keeps_its_own_application():
    def planned(name):
        return plan(load_experiment(ROOT / "experiments" / f"{name}.py"), profile="tiny")
    assert reads_event_log(planned("batchsize"))
    assert not any(reads_event_log(planned(n)) for n in ("selectivity", "alleviation", "objectsize", "queries"))


def test_the_application_and_the_controller_spell_the_event_prefix_alike():
    assert run_points.TAG == EVENT_TAG
