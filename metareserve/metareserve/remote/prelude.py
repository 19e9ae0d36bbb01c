"""Node-side helpers every node program gets (stdlib only): pid files, stopping processes, atomic
file writes, file digests.

:func:`metareserve.remote.dispatch.program` ships this source ahead of every node module, so a
node module imports what it uses from here (``from metareserve.remote.prelude import ...``, a
line dropped when shipping) instead of defining its own copy. The controller imports it too.
"""
import hashlib
import os
import signal
import time

KILL_WAIT = 5.0
"""Seconds to wait for SIGKILLed processes to go."""


def pid_alive(pid):
    """True if ``pid`` runs and is not a zombie (orphans are reaped slowly on some machines)."""
    try:
        with open("/proc/%d/stat" % int(pid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError, ValueError, TypeError):
        return False


def read_pid(pidfile):
    """The pid in ``pidfile``; None if it is missing or holds none."""
    try:
        with open(pidfile) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_pids(pids, timeout=10.0, sig=signal.SIGTERM):
    """Send ``sig`` to each live pid, SIGKILL those alive after ``timeout`` seconds and wait up to
    :data:`KILL_WAIT` for them to go; returns the pids that needed SIGKILL."""
    pids = [p for p in pids if pid_alive(p)]
    signal_and_wait(pids, sig, timeout)
    killed = [p for p in pids if pid_alive(p)]
    signal_and_wait(killed, signal.SIGKILL, KILL_WAIT)
    return killed


def signal_and_wait(pids, sig, seconds):
    """Send ``sig`` to ``pids`` and wait up to ``seconds`` until none is alive."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.1)


def write_file(path, text, mode=0o644):
    """Write ``text`` to ``path`` atomically through a temporary file born with ``mode`` (a secret
    is never readable by others); returns False, writing nothing, if the content is already so."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as f:
        f.write(text)
    os.chmod(tmp, mode)          # O_CREAT's mode is filtered by the umask
    os.replace(tmp, path)
    return True


def file_digest(path, algorithm="sha256"):
    """The hex digest of the file at ``path`` (read in 1 MiB blocks); OSError if it cannot be read."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
