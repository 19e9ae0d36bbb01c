"""One SSH connection to one node, via execnet: ssh options live in a generated ssh_config file."""
from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time

from ..errors import ConnectError, RemoteError
from ..model import Node, Reservation
from . import dispatch

log = logging.getLogger("metareserve.remote")

_CONNECT_HINTS = [   # (in ssh's stderr, the hint, whether another attempt within seconds meets it again)
    ("could not resolve hostname", "check the host name in the reservation or ~/.ssh/config", True),
    ("connection refused", "is sshd running on the node? ('metareserve check' tells)", True),
    ("no route to host", "the node is down or unreachable from here", True),
    ("connection timed out", "the node is down or a firewall drops SSH", False),   # a loaded host answers late
    ("operation timed out", "the node is down or a firewall drops SSH", False),
    ("permission denied", "the SSH key is not accepted: check user and identity in the reservation", True),
    ("host key verification failed", "the node's host key changed: remove the old one with ssh-keygen -R", True),
    ("command not found", "install python3 on the node", True),
    ("no such file or directory", "install python3 on the node", True),
]


def ssh_config_text(reservation: Reservation, node: Node) -> str:
    """The ssh_config for reaching ``node``: one option per line (every value was validated when
    the reservation was loaded, so none can become another option), then the reservation's
    ``ssh_config`` (or ``~/.ssh/config``), whose settings apply where these set nothing."""
    lines = [f"User {node.user}", "BatchMode yes", "ConnectTimeout 10",
             "ServerAliveInterval 15", "ServerAliveCountMax 4"]
    if node.port != 22:
        lines.insert(0, f"Port {node.port}")
    if node.identity:
        lines += [f"IdentityFile {node.identity}", "IdentitiesOnly yes"]
    if reservation.ssh_config:
        lines.append(f"Include {reservation.ssh_config}")
    elif os.path.exists(os.path.expanduser("~/.ssh/config")):
        lines.append("Include ~/.ssh/config")
    return "\n".join(lines) + "\n"


_CONFIG_DIR: list[str] = []
_CONFIG_LOCK = threading.Lock()


def ssh_config_file(reservation: Reservation, node: Node) -> str:
    """A private file (mode 0600 in a 0700 directory of this process) holding
    :func:`ssh_config_text`; the same content gives the same file."""
    text = ssh_config_text(reservation, node)
    with _CONFIG_LOCK:
        if not _CONFIG_DIR:
            _CONFIG_DIR.append(tempfile.mkdtemp(prefix="metareserve-ssh-"))
            atexit.register(shutil.rmtree, _CONFIG_DIR[0], True)
    path = os.path.join(_CONFIG_DIR[0], hashlib.sha256(text.encode()).hexdigest()[:16])
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=_CONFIG_DIR[0])      # mode 0600, a name of its own per writer
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


def ssh_argv(reservation: Reservation, node: Node) -> list[str]:
    """ssh options (without the ``ssh`` word and the target) for reaching ``node``: ``-F`` and the
    node's own config file; no value from the reservation is on the command line."""
    return ["-F", ssh_config_file(reservation, node)]


def probe(reservation: Reservation, node: Node) -> tuple[int, str]:
    """``ssh node python3 -V``: (its exit code, its stderr)."""
    argv = ["ssh", *ssh_argv(reservation, node), node.host, node.python, "-V"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        return 255, "connection timed out"


def lasting(probed: tuple[int, str]) -> bool:
    """Whether a :func:`probe` failed for a cause another attempt within seconds meets again (one
    :data:`_CONNECT_HINTS` marks so: nothing listening, no such host, no route, the key refused,
    no python), not a late answer or a dropped or reset connection."""
    rc, err = probed
    low = err.lower()
    return rc != 0 and (rc == 127 or any(key in low for key, _, lasts in _CONNECT_HINTS if lasts))


def classify_connect_failure(reservation: Reservation, node: Node, stage: str,
                             during: str | None = None, probed: tuple[int, str] | None = None) -> ConnectError:
    """Why a connection failed (or was lost ``during`` a call), from a :func:`probe` (``probed``,
    else made here)."""
    rc, err = probed or probe(reservation, node)
    if rc == 0 and during:
        return ConnectError(node.name, stage, f"connection lost during {during}",
                            hint="the node-side process died (killed? out of memory?) or SSH dropped")
    if rc == 0:
        return ConnectError(node.name, stage, f"cannot start {node.python} over SSH on {node.host}",
                            stderr_tail=err, hint="check the node's python3")
    low = err.lower()
    hint = next((h for key, h, _ in _CONNECT_HINTS if key in low), "check 'metareserve check'")
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
        import execnet  # imported lazily: costly for CLIs that never connect
        # execnet puts ssh_config after -F as one argv item; host and python were validated at
        # load (single tokens, no '-' first), so the spec cannot carry another option or key.
        interpreter = ("sudo " if self.node.user != "root" else "") + self.node.python
        spec = (f"ssh_config={ssh_config_file(self.reservation, self.node)}"
                f"//ssh={self.node.host}//python={interpreter}")
        delay = 0.5
        for attempt in range(1, self.retries + 1):
            try:
                return execnet.makegateway(spec)
            except Exception as e:  # execnet raises HostNotFound/EOFError/OSError on connect
                log.debug("[%s %s] connect attempt %d failed: %s", self.node.name, stage, attempt, e)
                probed = probe(self.reservation, self.node)   # execnet keeps ssh's reason to itself
                if attempt == self.retries or lasting(probed):
                    raise classify_connect_failure(self.reservation, self.node, stage, probed=probed) from None
                time.sleep(delay)
                delay *= 2

    def channel(self, module, stage: str):
        """The open channel for ``module``, connecting and shipping the source if needed."""
        with self._lock:
            if self._conn is not None and not self._conn.hasreceiver():
                self.close()   # the node's end went away between calls (sshd or the process restarted)
            if self._conn is None:
                self._conn = self._connect(stage)
            key = module.__name__
            if key not in self._channels:
                self._channels[key] = self._conn.remote_exec(dispatch.program(module))
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
