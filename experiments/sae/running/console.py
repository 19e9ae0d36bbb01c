"""What a person reads while ``sae run``/``resume`` go: one line per stage step and per point,
and, on a terminal, a rich bar over points and repetitions with an ETA (plain lines with the ETA
otherwise). Deployers' per-node lines and Spark's output are details: logged at DEBUG (``-v``)
and kept in the run directory (``stages.yaml``, ``logs/``)."""
from __future__ import annotations

import contextlib
import statistics
import threading
import time

from metareserve.log import details, live, say


class Quiet:
    """The console of stages run outside the runner: says nothing."""

    def point_started(self, point) -> None:
        """The application reached ``point``."""

    def repetition_done(self, point, repetition: int, seconds: float) -> None:
        """A measured repetition of ``point`` is recorded."""


class RunConsole(Quiet):
    """Progress of one runner session over its pending points and repetitions."""

    def __init__(self, plan, ledger, pending: list[str]):
        self.plan, self.ledger = plan, ledger
        self.number = {pid: n for n, pid in enumerate(plan.order, 1)}
        self.reps_total = sum(len(ledger.pending(pid)) for pid in pending)
        self.points_total, self.points_done, self.reps_done = len(pending), 0, 0
        self.times: dict[str, list[float]] = {}
        self.first_rep: float | None = None
        self.bar = None
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def session(self):
        """The live display (terminal) and detail-level deployer lines, for the whole session."""
        with live() as bar, details():
            self.bar = bar
            if bar is not None:
                self.step_task = bar.add_task("starting", total=None)
                self.point_task = bar.add_task("points", total=self.points_total)
                self.rep_task = bar.add_task("repetitions", total=self.reps_total)
            try:
                yield self
            finally:
                self.bar = None

    def _describe(self, text: str) -> None:
        if self.bar is not None:
            self.bar.update(self.step_task, description=text)

    def step_started(self, index: int, stage: str, where: str) -> None:
        self._describe(f"step {index + 1}/{len(self.plan.steps)} {stage} ({where})")

    def step_done(self, index: int, stage: str, where: str, seconds: float, outcome: str,
                  report=None, error: str | None = None) -> None:
        changed = sorted(n for n, o in (report.nodes.items() if report else []) if o.changed)
        what = (f"failed: {error}" if error else outcome if outcome != "done" else
                f"changed {', '.join(changed)}" if changed else "no changes")
        say(None, f"sae {stage}", f"step {index + 1}/{len(self.plan.steps)} ({where}) {seconds:.1f}s: {what}")

    def point_started(self, point) -> None:
        self._describe(f"point {self.number[point.id]}/{len(self.plan.order)} {self._axes(point)}")

    def repetition_done(self, point, repetition: int, seconds: float) -> None:
        with self.lock:
            now = time.time()
            self.first_rep = self.first_rep or now - seconds
            self.reps_done += 1
            if repetition >= self.plan.warmup:
                self.times.setdefault(point.id, []).append(seconds)
            if self.bar is not None:
                self.bar.advance(self.rep_task)
                return
            left = self.reps_total - self.reps_done
            eta = (now - self.first_rep) / self.reps_done * left
            warm = " (warm-up)" if repetition < self.plan.warmup else ""
            say(None, "sae run", f"point {self.number[point.id]}/{len(self.plan.order)} repetition "
                                 f"{repetition}{warm}: {seconds:.2f}s ({self.reps_done}/{self.reps_total}, "
                                 f"ETA {int(eta) // 60}m{int(eta) % 60:02d}s)")

    def point_done(self, index: int, outcome) -> None:
        """One line per point: axes, repetitions, median query time, or the error."""
        with self.lock:
            self.points_done += 1
            if self.bar is not None:
                self.bar.advance(self.point_task)
        times = self.times.get(outcome.point.id, [])
        what = (f"failed: {outcome.error}" if outcome.error else
                f"{len(times)} measured repetition{'s' * (len(times) != 1)}, median "
                f"{statistics.median(times):.2f}s" if times else
                "done")
        say(None, "sae run", f"step {index + 1}/{len(self.plan.steps)} point {self.number[outcome.point.id]}/"
                             f"{len(self.plan.order)} {self._axes(outcome.point)} "
                             f"{outcome.end - outcome.start:.1f}s: {what}")

    @staticmethod
    def _axes(point) -> str:
        return " ".join(f"{k}={v}" for k, v in point.axes.items()) or point.id
