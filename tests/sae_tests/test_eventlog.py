"""Pure: Spark's own task metrics read out of a run's event logs (sae.results.run.eventlog): an
application's own (closed, zstd) and a catalogue's shared application's (copied while it ran:
plain text, other runs' tasks in it, possibly ending mid-line), rolling (Spark 4) or single files
(Spark 3.5); each repetition sums the tasks that finished inside it."""
import json

import pandas as pd
import pyarrow as pa

from sae.results.run.eventlog import input_batches, task_cpu_seconds

METRIC = "number of input batches"


def task_end(finish_s: float, batches: int, cpu_ms: int = 0) -> str:
    return json.dumps({"Event": "SparkListenerTaskEnd", "Task Info": {
        "Finish Time": int(finish_s * 1000), "Accumulables": [{"Name": METRIC, "Update": str(batches)},
                                                              {"Name": "other", "Update": "7"}]},
        "Task Metrics": {"Executor Deserialize CPU Time": 1_000_000, "Executor CPU Time": cpu_ms * 1_000_000,
                         "Executor Run Time": 999}})


def test_each_repetition_sums_its_tasks_from_own_and_shared_logs(tmp_path):
    own = tmp_path / "logs" / "s1-1-p" / "20261128-1" / "events" / "eventlog_v2_app-1-0000"
    own.mkdir(parents=True)
    with pa.output_stream(str(own / "events_1_app-1-0000.zstd"), compression="zstd") as f:
        f.write("\n".join([task_end(10.5, 3), task_end(11.0, 4)]).encode() + b"\n")
    shared = tmp_path / "logs" / "shared" / "app-2-0000" / "events" / "eventlog_v2_app-2-0000"
    shared.mkdir(parents=True)
    (shared / "events_1_app-2-0000").write_text("\n".join([
        task_end(5.0, 100),                # an earlier run's job in the shared application
        task_end(20.2, 5), task_end(20.9, 6),
        json.dumps({"Event": "SparkListenerJobEnd"}),
        task_end(30.5, 9)[:40],            # the live log ended mid-line when it was copied
    ]))
    df = pd.DataFrame({"start": [10.0, 20.0, 40.0], "end": [11.5, 21.0, 41.0]})
    assert input_batches(tmp_path, df).tolist() == [7.0, 11.0, 0.0]


def test_single_file_logs_are_read_closed_or_in_progress(tmp_path):
    """Spark 3.5 writes one file per application (no rolling by default): an own application's
    closed log, plain or zstd, and a shared application's copied while it ran (``.inprogress``)."""
    own = tmp_path / "logs" / "s1-1-p" / "20261128-1" / "events"
    own.mkdir(parents=True)
    (own / "app-1-0000").write_text(task_end(10.5, 3) + "\n")
    with pa.output_stream(str(own / "app-3-0000.zstd"), compression="zstd") as f:
        f.write(task_end(11.0, 4).encode() + b"\n")
    (own / "app-4-0000.lz4").write_bytes(b"\x04\x22\x4d\x18 not read")   # a codec pyarrow cannot frame
    shared = tmp_path / "logs" / "shared" / "app-2-0000" / "events"
    shared.mkdir(parents=True)
    (shared / "app-2-0000.inprogress").write_text(task_end(20.2, 5) + "\n" + task_end(20.9, 6)[:30])
    df = pd.DataFrame({"start": [10.0, 20.0], "end": [11.5, 21.0]})
    assert input_batches(tmp_path, df).tolist() == [7.0, 5.0]


def test_no_event_log_gives_no_value(tmp_path):
    df = pd.DataFrame({"start": [1.0], "end": [2.0]})
    assert input_batches(tmp_path, df).isna().all()


def test_task_cpu_is_the_task_threads_cpu_time_summed_per_repetition(tmp_path):
    """Each task's executor CPU time and its deserialization's (nanoseconds in the log), summed
    over the tasks that finished inside the repetition; a repetition not yet ended has none."""
    own = tmp_path / "logs" / "s1-1-p" / "20261205-1" / "events" / "eventlog_v2_app-1-0000"
    own.mkdir(parents=True)
    with pa.output_stream(str(own / "events_1_app-1-0000.zstd"), compression="zstd") as f:
        f.write("\n".join([task_end(10.5, 3, cpu_ms=249), task_end(11.0, 4, cpu_ms=499),
                           task_end(20.5, 1, cpu_ms=99), task_end(15.0, 1, cpu_ms=5000)]).encode() + b"\n")
    df = pd.DataFrame({"start": [10.0, 20.0, 30.0], "end": [11.5, 21.0, None]})
    cpu = task_cpu_seconds(tmp_path, df)
    assert cpu.iloc[:2].round(6).tolist() == [0.75, 0.1] and pd.isna(cpu.iloc[2])
    assert task_cpu_seconds(tmp_path / "none", df).isna().all()
