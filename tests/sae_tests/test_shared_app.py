"""Pure: the warm application's serve loop waits for its next job file and ends at the stop
file or when idle; which runs' reports read Spark's event log (they copy a shared application's
after their job) (the catalogue's shared application itself runs in tests/sae_tests/test_catalogue.py)."""
import json
import threading
import time
from pathlib import Path

from metareserve.remote.prelude import write_file
from sae.app import EVENT_TAG, run_points
from sae.planning.loader import load_experiment
from sae.planning.planner import plan
from sae.results.drawing.report import reads_event_log

ROOT = Path(__file__).resolve().parents[2]


def test_the_serve_loop_takes_its_next_job_and_ends_at_stop_or_when_idle(tmp_path):
    serve = {"dir": str(tmp_path), "idle": 30}
    job = {"run_id": "r", "out": str(tmp_path / "out.jsonl"), "points": []}
    # written as the controller writes it: whole, by a rename
    threading.Timer(0.3, write_file, (str(tmp_path / "job-1.json"), json.dumps(job))).start()
    assert run_points.next_job(serve, 1, poll=0.05) == job
    (tmp_path / "stop").write_text("")
    t0 = time.time()
    assert run_points.next_job(serve, 2, poll=0.05) is None and time.time() - t0 < 5
    (tmp_path / "stop").unlink()
    t0 = time.time()
    assert run_points.next_job(dict(serve, idle=0.3), 2, poll=0.05) is None and time.time() - t0 >= 0.3


def test_only_the_batchsize_report_reads_the_event_log():
    def planned(name):
        return plan(load_experiment(ROOT / "experiments" / f"{name}.py"), profile="tiny")
    assert reads_event_log(planned("batchsize"))
    assert not any(reads_event_log(planned(n)) for n in ("selectivity", "alleviation", "objectsize", "queries"))


def test_the_application_and_the_controller_spell_the_event_prefix_alike():
    assert run_points.TAG == EVENT_TAG


def test_each_repetition_records_its_jobs_place_in_the_application(tmp_path, monkeypatch):
    """run_job's rep events carry ``app_job`` (results.parquet's column): 0 for an application's
    first job, n for its n-th later one."""
    monkeypatch.setattr(run_points, "query", lambda spark, point, memory: {"total_s": 1.0, "start": 0.0, "end": 1.0})
    monkeypatch.setattr(run_points, "register", lambda spark, tables, registered: None)
    monkeypatch.setattr(run_points, "event_log", lambda spark: None)
    for job in (0, 2):
        out = tmp_path / f"job{job}.jsonl"
        cfg = {"run_id": "r", "out": str(out), "points": [{"point": "p", "reps": [0, 1]}]}
        run_points.run_job(None, cfg, set(), job)
        reps = [e for e in map(json.loads, out.read_text().splitlines()) if e["event"] == "rep"]
        assert [e["app_job"] for e in reps] == [job, job]


def test_a_run_that_takes_the_warm_application_over_learns_which_readers_ran_in_it():
    """warmed(): what earlier jobs ran (their readers) when the live application would take the
    run's job (same app_key and spark-submit options, still running), else nothing."""
    from sae.running.shared_app import SharedApplication, _Live, _text
    shared = SharedApplication(Path("/nonexistent"))
    assert shared.warmed("k", {}) == set()
    submit = {"conf": {"spark.driver.memory": "1g"}}
    shared.live = _Live("k", _text(submit), spark=None, control=None, dir="/x", warm={("offload", "cost")})
    assert shared.warmed("k", dict(submit)) == {("offload", "cost")}
    assert shared.warmed("other", submit) == set()
    assert shared.warmed("k", {"conf": {"spark.driver.memory": "2g"}}) == set()
    shared.live.ended.set()
    assert shared.warmed("k", submit) == set()


def test_a_link_rate_tenant_or_autoscaler_change_keeps_the_application_and_cores_or_spark_do_not():
    """app_key: what the warm application is kept for. Points that differ by the link's rate, the
    storage side's second tenants or the pool autoscaler share it; other cores, another Spark or
    another build of the class's Arrow do not."""
    from sae import Experiment, Sweep, Workload

    def keys(**axes):
        p = plan(Experiment(name="t", workload=Workload(compression="none"),
                            sweep=Sweep(zipped=axes, cartesian={"reader": ["offload"]})))
        return [pt.app_key for pt in sorted(p.points, key=lambda pt: pt.index)]
    for same in ({"link_rate": ["200mbit", "1gbit"]}, {"storage_load": [0, 1], "storage_scans": [0, 2]},
                 {"pg_autoscale": [False, True]}):
        assert len(set(keys(**same))) == 1, same
    for other in ({"cores": ["sides", "shared"]}, {"spark.version": ["4.3.0", "3.5.3"]},
                  {"class_arrow": ["26.0.1", "25.0.1"]}):
        assert len(set(keys(**other))) == 2, other
