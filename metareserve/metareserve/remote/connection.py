"""One SSH connection to one node, via remoto/execnet. remoto's quirks are wrapped here only."""
from __future__ import annotations

import json
import logging
import subprocess
import threading
import time

from ..errors import ConnectError, RemoteError
from ..model import Node, Reservation
from . import dispatch

log = logging.getLogger("metareserve.remote")

_CONNECT_HINTS = [
    ("could not resolve hostname", "check the host name in the reservation or ~/.ssh/config"),
    ("connection refused", "is sshd running on the node? ('metareserve check' tells)"),
    ("no route to host", "the node is down or unreachable from here"),
    ("connection timed out", "the node is down or a firewall drops SSH"),
    ("operation timed out", "the node is down or a firewall drops SSH"),
    ("permission denied", "the SSH key is not accepted: check user and identity in the reservation"),
    ("host key verification failed", "the node's host key changed: remove the old one with ssh-keygen -R"),
    ("command not found", "install python3 on the node"),
    ("no such file or directory", "install python3 on the node"),
]


def ssh_argv(reservation: Reservation, node: Node) -> list[str]:
    """ssh options (without the ``ssh`` word and the target) for reaching ``node``."""
    argv = []
    if reservation.ssh_config:
        argv += ["-F", reservation.ssh_config]
    if node.port != 22:
        argv += ["-p", str(node.port)]
    if node.identity:
        argv += ["-i", node.identity, "-o", "IdentitiesOnly=yes"]
    argv += ["-l", node.user, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
             "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]
    return argv


def classify_connect_failure(reservation: Reservation, node: Node, stage: str,
                             during: str | None = None) -> ConnectError:
    """Probe ``ssh node python3 -V`` to say why a connection failed (or was lost ``during`` a call)."""
    argv = ["ssh", *ssh_argv(reservation, node), node.host, node.python, "-V"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        err, rc = r.stderr, r.returncode
    except subprocess.TimeoutExpired:
        err, rc = "connection timed out", 255
    if rc == 0 and during:
        return ConnectError(node.name, stage, f"connection lost during {during}",
                            hint="the node-side process died (killed? out of memory?) or SSH dropped")
    if rc == 0:
        return ConnectError(node.name, stage, f"cannot start {node.python} over SSH on {node.host}",
                            stderr_tail=err, hint="check the node's python3")
    low = err.lower()
    hint = next((h for key, h in _CONNECT_HINTS if key in low), "check 'metareserve check'")
    what = f"cannot reach {node.user}@{node.host}:{node.port} over SSH"
    if rc == 127 or "not found" in low:
        what = f"{node.python} is missing on {node.host}"
    return ConnectError(node.name, stage, what, exit_code=rc, stderr_tail=err, hint=hint)


class NodeConnection:
    """A reusable execnet gateway to one node, with one channel per shipped module."""

    def __init__(self, reservation: Reservation, node: Node, *, retries: int = 3):
        self.reservation, self.node, self.retries = reservation, node, retries
        self._conn = None
        self._channels: dict[str, object] = {}
        self._lock = threading.RLock()

    def _connect(self, stage: str):
        import remoto  # imported lazily: remoto pulls execnet, costly for CLIs that never connect
        opts = " ".join(ssh_argv(self.reservation, self.node))
        sudo = self.node.user != "root"
        delay = 0.5
        for attempt in range(1, self.retries + 1):
            try:
                conn = remoto.Connection(self.node.host, logger=logging.getLogger(f"remoto.{self.node.name}"),
                                         sudo=sudo, interpreter=self.node.python, ssh_options=opts,
                                         use_ssh=True)
                # remoto 1.2.1 leaves execnet's str-coercion defaults half set; JSON avoids it anyway.
                return conn
            except Exception as e:  # execnet raises HostNotFound/EOFError/OSError on connect
                log.debug("[%s %s] connect attempt %d failed: %s", self.node.name, stage, attempt, e)
                if attempt == self.retries:
                    raise classify_connect_failure(self.reservation, self.node, stage) from None
                time.sleep(delay)
                delay *= 2

    def channel(self, module, stage: str):
        """The open channel for ``module``, connecting and shipping the source if needed."""
        with self._lock:
            if self._conn is None:
                self._conn = self._connect(stage)
            key = module.__name__
            if key not in self._channels:
                self._channels[key] = self._conn.gateway.remote_exec(dispatch.program(module))
            return self._channels[key]

    def call(self, module, fn: str, args=(), kwargs=None, *, stage: str, timeout: float | None,
             on_log=None):
        """Call ``module.fn(*args, **kwargs)`` on the node; RemoteError on failure."""
        with self._lock:
            ch = self.channel(module, stage)
            try:
                ch.send(dispatch.request(fn, args, kwargs or {}))
                deadline = None if timeout is None else time.monotonic() + timeout
                while True:
                    left = None if deadline is None else max(0.1, deadline - time.monotonic())
                    msg = json.loads(ch.receive(timeout=left))
                    if "log" in msg:
                        (on_log or (lambda line: None))(msg["log"])
                        continue
                    if "error" in msg:
                        raise RemoteError(self.node.name, stage, f"{module.__name__.rsplit('.', 1)[-1]}.{fn} failed",
                                          stderr_tail=msg.get("traceback", ""))
                    return msg["result"]
            except RemoteError:
                raise
            except Exception as e:
                self.close()
                if type(e).__name__ == "TimeoutError":
                    raise RemoteError(self.node.name, stage, f"{fn} timed out after {timeout}s",
                                      hint="the node is overloaded or the operation hangs") from None
                raise classify_connect_failure(self.reservation, self.node, stage, during=fn) from None

    def close(self):
        """Close channels and the gateway (next call reconnects)."""
        with self._lock:
            self._channels.clear()
            if self._conn is not None:
                try:
                    self._conn.exit()
                except Exception:
                    pass
                self._conn = None
