"""Stage outcomes: per node "changed" or "no changes: reason", as idempotent stages report them."""
from __future__ import annotations

import dataclasses

from .log import node_log


@dataclasses.dataclass
class Outcome:
    """What one stage did on one node."""

    changed: bool
    message: str


@dataclasses.dataclass
class StageReport:
    """A stage's outcome on every node it touched, plus stage-wide details (e.g. timings)."""

    stage: str
    nodes: dict[str, Outcome] = dataclasses.field(default_factory=dict)
    details: dict = dataclasses.field(default_factory=dict)

    def add(self, node: str, changed: bool, message: str, *, log: bool = True) -> None:
        """Record (and log with the node/stage prefix) one node's outcome."""
        self.nodes[node] = Outcome(changed, message)
        if log:
            node_log(node, self.stage, message if changed else f"no changes: {message}")

    @property
    def changed(self) -> bool:
        return any(o.changed for o in self.nodes.values())

    def summary(self) -> str:
        n = sum(o.changed for o in self.nodes.values())
        if not n:
            return f"{self.stage}: no changes on {len(self.nodes)} nodes"
        return f"{self.stage}: changed {n} of {len(self.nodes)} nodes"
