"""Exclusive use of a reservation: one lease, held by one run at a time.

The lease lives on the reservation's first node (``<state_root>/lease.json``), so every
controller that uses the reservation sees it. A holder is a process on a controller; a lease
whose holder process is gone from this machine is stale and taken over. A lease held from
another machine is only given up by its holder, or broken by hand (:func:`break_lease`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from datetime import datetime, timezone

from .errors import NothingToDo, OperationalError
from .model import Reservation
from .remote import Cluster, node_agent

STAGE = "lease"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


@dataclasses.dataclass(frozen=True)
class LeaseHolder:
    """Who holds a reservation: ``holder`` (e.g. a run directory), process and machine, since when."""

    holder: str
    pid: int
    host: str
    since: float
    boot_id: str = ""

    @classmethod
    def this_process(cls, holder: str) -> "LeaseHolder":
        return cls(holder=holder, pid=os.getpid(), host=socket.gethostname(), since=round(time.time(), 3),
                   boot_id=_boot_id())

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.since, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{self.holder} (pid {self.pid} on {self.host}, since {when})"

    def is_gone(self) -> bool:
        """True if the holder ran on this machine and its process has exited (or the machine
        has rebooted since)."""
        if self.boot_id == _boot_id():
            return not node_agent.pid_alive(self.pid)
        return self.host == socket.gethostname()


class LeaseHeld(OperationalError):
    """The reservation is leased by someone else."""

    def __init__(self, reservation: str, holder: LeaseHolder):
        self.holder = holder
        super().__init__(f"[{reservation} lease] reservation {reservation!r} is in use by "
                         f"{holder.describe()}; wait for it (--wait-lease SECONDS), or if that run is "
                         f"gone for good: metareserve break-lease -r <reservation file>")


def _where(res: Reservation) -> tuple[str, str]:
    return res.nodes[0].name, f"{res.state_root}/lease.json"


def holder(cluster: Cluster) -> LeaseHolder | None:
    """The current holder of the cluster's reservation (None if free or stale)."""
    node, path = _where(cluster.reservation)
    record = cluster.call(node_agent, "lease_read", path, nodes=[node], stage=STAGE)[node]
    current = LeaseHolder(**record) if record else None
    return None if current is None or current.is_gone() else current


def acquire(cluster: Cluster, name: str, *, wait: float = 0.0, poll: float = 2.0) -> LeaseHolder:
    """Take the lease for ``name``; wait up to ``wait`` seconds for a holder to finish, then
    raise :class:`LeaseHeld` naming it."""
    node, path = _where(cluster.reservation)
    me = LeaseHolder.this_process(name)
    deadline = time.time() + wait
    while True:
        record = cluster.call(node_agent, "lease_read", path, nodes=[node], stage=STAGE)[node]
        stale = record if record and LeaseHolder(**record).is_gone() else None
        now = cluster.call(node_agent, "lease_take", path, dataclasses.asdict(me), stale,
                           nodes=[node], stage=STAGE)[node]
        if now == dataclasses.asdict(me):
            return me
        if now and time.time() >= deadline:
            raise LeaseHeld(cluster.reservation.name, LeaseHolder(**now))
        time.sleep(poll)


def give(cluster: Cluster, me: LeaseHolder) -> bool:
    """Give the lease back (only if ``me`` still holds it)."""
    node, path = _where(cluster.reservation)
    return cluster.call(node_agent, "lease_give", path, dataclasses.asdict(me), nodes=[node], stage=STAGE)[node]


@contextlib.contextmanager
def leased(cluster: Cluster, name: str, *, wait: float = 0.0):
    """Hold the lease for the duration of the block; yields the :class:`LeaseHolder`."""
    me = acquire(cluster, name, wait=wait)
    try:
        yield me
    finally:
        give(cluster, me)


def break_lease(cluster: Cluster) -> str:
    """Remove whatever lease the reservation has (its holder is gone for good); says what it removed."""
    node, path = _where(cluster.reservation)
    record = cluster.call(node_agent, "lease_read", path, nodes=[node], stage=STAGE)[node]
    if not record:
        raise NothingToDo(f"reservation {cluster.reservation.name!r} has no lease")
    cluster.call(node_agent, "lease_give", path, record, nodes=[node], stage=STAGE)
    return f"removed the lease of {LeaseHolder(**record).describe()}"
