"""Watches the storage side while a Spark application runs: a Ceph daemon whose process died
(a killed OSD, MDS or mon) is found within one poll, and ``on_down`` is called once with what to
report. Without it a query on a dead OSD's objects waits for the client's op timeout (minutes)
before the point fails; with it the run stops the application and names the daemon and its host.

Polls on its own thread and connections (spark-submit streams on the shared ones): reading pid
files takes milliseconds on each storage host; the manager is not watched (no query needs it).
"""
from __future__ import annotations

import threading
from typing import Callable

from metareserve.errors import SaeError
from rados_deploy import CephCluster

POLL_S = 2.0
QUERY_DAEMONS = ("osd", "mds", "mon")


def down_message(names: list[str]) -> str:
    """What a failed point says about dead daemons (``osd.1 on node2``), and what to do."""
    return f"Ceph reports {', '.join(names)} down: run 'rados-deploy start' (or 'sae resume', which restarts it)"


class StorageWatch:
    """``with StorageWatch(ceph, on_down):`` polls every ``poll_s`` seconds until the block ends."""

    def __init__(self, ceph: CephCluster, on_down: Callable[[str], None], *, poll_s: float = POLL_S):
        self.on_down, self.poll_s = on_down, poll_s
        self.ceph = ceph.on_own_connections()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="sae-storage-watch", daemon=True)
        self.fired: str | None = None

    def __enter__(self) -> "StorageWatch":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()
        self.ceph.cluster.close()

    def _run(self) -> None:
        while not self.stopped.wait(self.poll_s):
            try:
                down = [d for d in self.ceph.daemons(stage="sae run storage watch")
                        if not d.up and d.role in QUERY_DAEMONS]
            except SaeError:
                continue   # a host that does not answer now is the application's to report
            if down:
                self.fired = down_message([f"{d.name} on {d.host}" for d in down])
                self.on_down(self.fired)
                return
