"""One warm Spark application that the runs of a catalogue (``sae run experiments/``) share.

Each run of a catalogue would otherwise start its own application (on a 2-core local cluster:
20-40 s of JVM and executor start, then a cold first query). :class:`SharedApplication` keeps
the application of ``sae.app.run_points`` up between runs (its ``serve`` mode) and hands it
each later run's configuration as a job file, as long as what the application was started for
is what the next run needs (the points' ``app_key``: the stack, Spark options, the class's
Arrow, the hosts' cores and memory; and the same spark-submit options, the connector's build
among them); otherwise it stops the application and starts another. The runner stops it before a
setup stage puts another of these in force (:meth:`stop_unless_for`): no application outlives
the daemons it was started on, and a JVM, which sizes its thread pools to the cores it sees at
start, is never kept across a change of them. A change of the link's rate, of the storage
side's second tenants or of the pool autoscaler keeps it.

The application runs on connections of its own (its runs open and close theirs). Its driver
log and event log are fetched, when it ends, into the catalogue's ``logs/``; a run whose report
reads the event log copies it after its job (sae.running.execute), which the application writes
uncompressed and has flushed by the job's end. The application's
processes name its serve directory (``<node dir>/sae/shared-<hex>``, on the driver node) on
their command lines; :func:`stop_leftovers` stops those a killed catalogue left behind (the
application itself also ends after :data:`IDLE` seconds without a job).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import secrets
import threading
from pathlib import Path
from typing import Callable

from metareserve import Cluster, node_agent
from metareserve.errors import SaeError
from metareserve.log import node_log, say
from spark_deploy import SparkCluster

from ..app import APP, EVENT_TAG as TAG

STAGE = "sae shared app"
IDLE = 1800.0
"""Seconds the application waits for its next job before it ends by itself (a killed catalogue;
the next run on the cluster stops it sooner)."""
STOP_WAIT = 60.0
"""Seconds a stopped application has to end (it finishes a job in progress first) before it is killed."""
PREFIX = "shared-"


def serve_root(spark: SparkCluster) -> str:
    """The directory on the driver node that holds the shared applications' serve directories."""
    return spark.reservation.node_dir(spark.driver_node, "sae")


def stop_applications(cluster: Cluster, driver: str, text: str, stage: str) -> list[int]:
    """Stop (SIGTERM, then SIGKILL after 30 s) every process on the driver node whose command
    line names ``text`` (spark-submit, its JVM and the Python application all name their output
    or serve directory); returns their pids."""
    pids = cluster.call(node_agent, "pids_naming", text, nodes=[driver], stage=stage)[driver]
    cluster.call(node_agent, "stop_pids", pids, 30.0, nodes=[driver], stage=stage)
    return pids


def stop_leftovers(cluster: Cluster, spark: SparkCluster, stage: str) -> None:
    """Stop shared applications a killed catalogue left on the driver node (they hold the
    workers' cores); the caller holds the reservation's lease, so none of them is in use."""
    driver = spark.driver_node
    pids = stop_applications(cluster, driver, f"{serve_root(spark)}/{PREFIX}", stage)
    if pids:
        say(driver, stage, f"stopped a shared Spark application an earlier catalogue left (processes {pids})")


def _text(submit: dict) -> str:
    """spark-submit options as one comparable text."""
    return json.dumps(submit, sort_keys=True, default=str)


@dataclasses.dataclass
class _Live:
    """The running application: what it was started for, its connections and serve directory."""

    key: str                     # the app_key of the points it was started for
    submit: str                  # the spark-submit options it was started with (JSON)
    spark: SparkCluster          # own connections: the submit streams on them
    control: Cluster             # own connections: job files, stop file, kill
    dir: str
    jobs: int = 0                # jobs handed to it (the first configuration is job 0)
    warm: set = dataclasses.field(default_factory=set)   # what its jobs ran (the runs' readers)
    thread: threading.Thread | None = None
    ended: threading.Event = dataclasses.field(default_factory=threading.Event)
    error: str | None = None

    @property
    def driver(self) -> str:
        return self.spark.driver_node


class SharedApplication:
    """The catalogue's warm application (see the module); :meth:`close` stops it."""

    def __init__(self, log_dir: Path):
        self.log_dir = Path(log_dir)
        self.live: _Live | None = None
        self._sink: Callable[[str], None] | None = None
        self._job = -1
        self._took = False
        self._done = threading.Event()

    @property
    def text(self) -> str | None:
        """What the live application's command lines name (None when none runs)."""
        return self.live.dir if self.live else None

    def run(self, key: str, spark: SparkCluster, cfg: dict, submit: dict, on_line: Callable[[str], None],
            cluster: Cluster, warms=()) -> str | None:
        """Run ``cfg`` (a configuration of ``sae.app.run_points``) for points of ``key`` (their
        ``app_key``) in the live application when it was started for such points with
        ``submit`` (``SparkCluster.submit``'s keywords), else in a new one; its output lines go to
        ``on_line``. Returns None when the job ended, else why the application ended before it
        did. ``cluster``: the run's connections (to stop leftovers); ``warms``: what the job runs
        (its readers), which :meth:`warmed` names to later runs."""
        if self.live is not None and not self._takes(key, submit):
            self.stop()
        live = self.live
        if live is not None:
            live.jobs += 1
            say(live.driver, STAGE, f"job {live.jobs} in the warm application an earlier run started ({live.dir})")
            self._expect(live.jobs, on_line)   # before the job file: its first lines may come at once
            live.control.write(f"{live.dir}/job-{live.jobs}.json", json.dumps(cfg), nodes=[live.driver],
                               stage=STAGE, mode=0o600)
            error, took = self._wait(live)
            if took:
                live.warm |= set(warms)
                return error
            self.stop()   # it ended (idle) before it took the job: a new one takes it
        stop_leftovers(cluster, spark, STAGE)
        self._expect(0, on_line)
        live = self._start(key, spark, cfg, submit)
        live.warm |= set(warms)   # read after the job ended, by the next run
        return self._wait(live)[0]

    def warmed(self, key: str, submit: dict) -> set:
        """What earlier jobs ran in the live application (:meth:`run`'s ``warms``) if a run for
        ``key`` with ``submit`` would take it over, else nothing: a run's first query of a reader
        needs no pre-warm where that reader already ran."""
        return set(self.live.warm) if self._takes(key, submit) else set()

    def _takes(self, key: str, submit: dict) -> bool:
        """Whether the live application takes a job for ``key`` with ``submit``."""
        live = self.live
        return (live is not None and live.key == key and not live.ended.is_set()
                and live.submit == _text(submit))

    def stop_unless_for(self, key: str) -> None:
        """Stop the live application unless it was started for points of ``key`` (their
        ``app_key``): called before a setup stage puts another point's Spark options or capacities
        in force, so no application outlives the daemons or the cores it was started with."""
        if self.live is not None and self.live.key != key:
            self.stop()

    def stop(self) -> None:
        """End the live application: the stop file, then after :data:`STOP_WAIT` seconds a kill;
        its serve directory removed."""
        live, self.live = self.live, None
        if live is None:
            return
        try:
            if not live.ended.is_set():
                live.control.write(f"{live.dir}/stop", "", nodes=[live.driver], stage=STAGE)
                if not live.ended.wait(STOP_WAIT):
                    stop_applications(live.control, live.driver, live.dir, STAGE)
            live.thread.join(STOP_WAIT)
            live.control.run(["rm", "-rf", live.dir], nodes=[live.driver], stage=STAGE)
        except SaeError as e:
            node_log(live.driver, STAGE, f"shared application not stopped cleanly: {e}", logging.WARNING)
        finally:
            live.control.close()
            live.spark.close()

    close = stop

    def _start(self, key: str, spark: SparkCluster, cfg: dict, submit: dict) -> _Live:
        own = spark.on_own_connections()
        live = _Live(key, _text(submit), own, Cluster(own.reservation),
                     f"{serve_root(own)}/{PREFIX}{secrets.token_hex(4)}")
        live.control.run(["mkdir", "-p", live.dir], nodes=[live.driver], stage=STAGE)
        args = [json.dumps(dict(cfg, serve={"dir": live.dir, "idle": IDLE}))]
        live.thread = threading.Thread(target=self._submit, args=(live, args, submit), daemon=True)
        self.live = live
        live.thread.start()
        return live

    def _submit(self, live: _Live, args: list, submit: dict) -> None:
        try:
            live.spark.submit(str(APP), args=args, log_dir=self.log_dir, on_line=self._line, **submit)
        except SaeError as e:
            live.error = str(e)
        except Exception as e:   # never lose the end: a waiting run would wait forever
            live.error = f"{type(e).__name__}: {e}"
        finally:
            live.ended.set()

    def _expect(self, job: int, on_line: Callable[[str], None]) -> None:
        """Route the application's lines to ``on_line`` until job ``job`` ends."""
        self._sink, self._job, self._took = on_line, job, False
        self._done.clear()

    def _wait(self, live: _Live) -> tuple[str | None, bool]:
        """Wait for the expected job to end, or the application: (error, whether it took the job)."""
        try:
            while not self._done.wait(0.5):
                if live.ended.is_set():
                    self._done.wait(0.5)   # lines still on their way
                    break
        finally:
            self._sink = None
        if self._done.is_set():
            return None, True
        return (live.error or f"[{live.driver} spark-submit] the shared application ended"), self._took

    def _line(self, text: str) -> None:
        """One line of the application's output: job ends are read here, the rest goes to the
        waiting run (between jobs: to the log at DEBUG)."""
        if text.startswith(TAG):
            try:
                event = json.loads(text[len(TAG):])
            except ValueError:
                event = {}
            if event.get("event") == "job-end" and event.get("job") == self._job:
                self._done.set()
                return
            if event.get("event") == "app":
                self._took = True
        sink = self._sink
        if sink is not None:
            sink(text)
        else:
            node_log(self.live.driver if self.live else None, "spark-submit", text, logging.DEBUG)
