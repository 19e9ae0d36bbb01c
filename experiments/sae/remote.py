"""Runs on the driver node (stdlib only): stop Spark applications a killed runner left behind."""
import glob
import json
import os
import signal
import time


def _alive(pid):
    try:
        with open("/proc/%d/stat" % int(pid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError, ValueError):
        return False


def kill_orphans(pattern, timeout=30.0):
    """SIGTERM (then SIGKILL) the application JVMs recorded in the raw files matching
    ``pattern`` (their first line names ``jvm_pid``); returns the pids that were alive."""
    killed = []
    for path in glob.glob(pattern):
        try:
            with open(path) as f:
                first = json.loads(f.readline() or "{}")
        except (OSError, ValueError):
            continue
        for key in ("jvm_pid", "pid"):
            pid = first.get(key)
            if pid and _alive(pid):
                os.kill(int(pid), signal.SIGTERM)
                killed.append(pid)
    deadline = time.time() + timeout
    while time.time() < deadline and any(_alive(p) for p in killed):
        time.sleep(0.2)
    for pid in killed:
        if _alive(pid):
            os.kill(int(pid), signal.SIGKILL)
    return killed



def stop_processes(marker, timeout=30.0):
    """SIGTERM (then SIGKILL) every process whose command line contains ``marker`` (an
    application's unique output path: spark-submit's driver JVM and the Python app both name it);
    returns their pids."""
    me = os.getpid()
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        pid = int(d.rsplit("/", 1)[1])
        if marker in cmd and pid != me and _alive(pid):
            pids.append(pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.time() + timeout
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    return pids
