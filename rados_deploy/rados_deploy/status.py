"""What ``CephCluster.status()`` returns: every daemon per host, and the cluster's health."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class DaemonStatus:
    """One Ceph daemon: ``role`` (mon, mgr, osd, mds), ``id``, ``host`` (node name), ``pid``, ``up``
    (its process is alive on that host)."""

    role: str
    id: str
    host: str
    pid: int | None
    up: bool

    @property
    def name(self) -> str:
        """Ceph's name for the daemon, e.g. ``osd.2``."""
        return f"{self.role}.{self.id}"


@dataclasses.dataclass
class CephStatus:
    """Every daemon of the layout plus the cluster's view (``health``: HEALTH_OK/WARN/ERR, or
    ``unreachable`` when no mon answered; ``detail``: checks, OSDs up, PG counts)."""

    daemons: list[DaemonStatus]
    health: str
    detail: dict = dataclasses.field(default_factory=dict)

    @property
    def down(self) -> list[DaemonStatus]:
        """Daemons whose process is not running."""
        return [d for d in self.daemons if not d.up]

    @property
    def ok(self) -> bool:
        """All daemons up and HEALTH_OK."""
        return not self.down and self.health == "HEALTH_OK"

    def lines(self) -> list[str]:
        """Human-readable table, one daemon per line, then the health line."""
        out = [f"{d.host:<12} {d.name:<16} {'up' if d.up else 'DOWN':<5} pid {d.pid or '-'}" for d in self.daemons]
        checks = ", ".join(self.detail.get("checks", []))
        pgs = self.detail.get("pgs_expected")
        summary = f"health {self.health}" + (f" ({checks})" if checks else "")
        if pgs is not None:
            summary += f"; {self.detail.get('pgs_clean', 0)}/{pgs} PGs active+clean"
        return out + [summary]
