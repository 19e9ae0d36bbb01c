"""The run ledger: the state of every sweep point × repetition and of every stage step, as a
versioned JSON file rewritten atomically after every change (never pickle).

Entries are keyed by a hash of the point's resolved parameters, the component versions and the
repetition index; states are todo, running, done, failed. ``resume`` skips done entries, retries
failed ones and treats ``running`` ones (a killed runner) as failed; nothing is ever duplicated.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from metareserve.errors import UsageError

from ...planning.planner import Plan, digest

FORMAT_VERSION = 1
STATES = ("todo", "running", "done", "failed")


def entry_key(params: dict, versions: dict, repetition: int) -> str:
    """Ledger key of one repetition of one point."""
    return digest({"params": params, "versions": versions, "repetition": repetition}, 16)


def _damage(data: dict) -> str | None:
    """What makes ``data`` not a ledger this sae wrote (None: nothing)."""
    for field, kind in (("entries", dict), ("runs", list), ("steps", list), ("executed", list)):
        if not isinstance(data.get(field), kind):
            return f"{field} is not a {kind.__name__}"
    for key, e in data["entries"].items():
        if not isinstance(e, dict):
            return f"entry {key} is not a mapping"
        for field, ok in (("point", lambda v: isinstance(v, str)), ("state", lambda v: v in STATES),
                          ("repetition", _count), ("attempts", _count)):
            if not ok(e.get(field)):
                return f"entry {key}: {field} {e.get(field)!r}"
    if not all(isinstance(s, dict) for s in data["steps"] + data["runs"]):
        return "a step or run is not a mapping"
    return None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class RunLedger:
    """Ledger of one run directory (``ledger.json``)."""

    def __init__(self, path, data: dict):
        self.path = Path(path)
        self.data = data

    @classmethod
    def create(cls, path, plan: Plan, versions: dict) -> "RunLedger":
        """A fresh ledger with every point × repetition in state todo."""
        entries = {}
        for p in plan.points:
            after = plan.point(p.drift_of).repetitions if p.drift_of else 0   # the drift check's follow its own
            for rep in range(after, after + (p.repetitions or plan.repetitions)):
                entries[entry_key(p.spec.params(), versions, rep)] = {
                    "point": p.id, "repetition": rep, "warmup": not p.drift_of and rep < plan.warmup,
                    "state": "todo", "attempts": 0, "start": None, "end": None, "error": None,
                    **({"drift": True} if p.drift_of else {})}
        ledger = cls(path, {"version": FORMAT_VERSION, "experiment": plan.experiment,
                            "profile": plan.profile, "created": time.time(), "runs": [],
                            "steps": [], "executed": [], "entries": entries})
        ledger.save()
        return ledger

    @classmethod
    def load(cls, path) -> "RunLedger":
        """Read a ledger; UsageError naming the file if it is missing, malformed or too new."""
        p = Path(path)
        try:
            data = json.loads(p.read_text())
        except FileNotFoundError:
            raise UsageError(f"{p}: no ledger here; is this an sae run directory?") from None
        except (OSError, ValueError) as e:
            raise UsageError(f"{p}: unreadable ledger ({e}); start a new run") from None
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
            raise UsageError(f"{p}: ledger format {data.get('version') if isinstance(data, dict) else '?'} "
                             f"is not supported (this sae writes {FORMAT_VERSION})")
        damage = _damage(data)
        if damage:
            raise UsageError(f"{p}: damaged ledger ({damage}); restore ledger.json from a copy, or start a new run")
        return cls(p, data)

    def save(self) -> None:
        """Write atomically: a crash leaves either the old or the new ledger, never half."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    @property
    def entries(self) -> dict:
        return self.data["entries"]

    def of_point(self, point_id: str) -> dict:
        """Key → entry for every repetition of ``point_id``, by repetition index."""
        items = [(k, e) for k, e in self.entries.items() if e["point"] == point_id]
        return dict(sorted(items, key=lambda kv: kv[1]["repetition"]))

    def pending(self, point_id: str) -> list[int]:
        """Repetition indexes of ``point_id`` not done yet."""
        return [e["repetition"] for e in self.of_point(point_id).values() if e["state"] != "done"]

    def begin_session(self, command: str) -> None:
        """Record a run/resume invocation; entries a killed runner left running become failed."""
        for e in self.entries.values():
            if e["state"] == "running":
                e["state"], e["error"] = "failed", "interrupted (runner killed or crashed)"
        self.data["runs"].append({"command": command, "pid": os.getpid(), "start": time.time()})
        self.save()

    @property
    def sessions(self) -> int:
        """How many run/resume invocations this run has had (this one included)."""
        return len(self.data["runs"])

    @property
    def executed(self) -> list[str]:
        """Point ids whose run step completed, in order (once each on a clean run)."""
        return list(self.data["executed"])

    @property
    def steps(self) -> list[dict]:
        return list(self.data["steps"])

    def mark(self, point_id: str, repetitions, state: str, *, error: str | None = None,
             timings: dict | None = None, results: dict | None = None) -> None:
        """Set ``state`` for the given repetitions of a point (``timings``: rep → {start, end};
        ``results``: rep → the query's result values)."""
        assert state in STATES
        for e in self.of_point(point_id).values():
            if e["repetition"] not in repetitions:
                continue
            if results and e["repetition"] in results:
                e["result"] = dict(results[e["repetition"]])
            if state == "running":
                e["attempts"] += 1
                e["start"], e["end"] = time.time(), None
            t = (timings or {}).get(e["repetition"])
            if t:
                e["start"], e["end"] = t["start"], t["end"]
            e["state"], e["error"] = state, error
        self.save()

    def add_results(self, point_id: str, measures: dict[int, dict]) -> None:
        """Add a run stage's own measures to each repetition's results (rep → {name: value})."""
        for e in self.of_point(point_id).values():
            if e["repetition"] in measures and e.get("result") is not None:
                e["result"].update(measures[e["repetition"]])
        self.save()

    def record_aucs(self, point_id: str, aucs: dict[int, dict]) -> None:
        """Store each repetition's areas under the metric curves (rep → {metric_node: area})."""
        for e in self.of_point(point_id).values():
            if e["repetition"] in aucs:
                e["auc"] = aucs[e["repetition"]]
        self.save()

    def step(self, index: int, stage: str, point: str | None, *, start: float, end: float,
             outcome: str, changed: dict | None = None, error: str | None = None) -> None:
        """Record one executed stage step (written in the runner's finally block)."""
        self.data["steps"].append({"step": index, "stage": stage, "point": point, "start": start,
                                   "end": end, "seconds": round(end - start, 3), "outcome": outcome,
                                   "changed": changed or {}, "error": error})
        if stage == "run" and outcome == "done":
            self.data["executed"].append(point)
        self.save()

    def counts(self) -> dict:
        """State → number of entries."""
        out = {s: 0 for s in STATES}
        for e in self.entries.values():
            out[e["state"]] += 1
        return out

    def failures(self) -> list[dict]:
        return [e for e in self.entries.values() if e["state"] == "failed"]
