"""Runs on nodes (stdlib only): shell commands with timeouts, files, facts; with the prelude's
``pid_alive``, ``read_pid``, ``stop_pids`` and ``write_file`` (:mod:`metareserve.remote.prelude`).

Shipped by :class:`metareserve.remote.Cluster`; ``sae_emit`` streams a line back to the
controller (print when called locally).
"""
import json
import os
import shutil
import subprocess
import threading
import time

from metareserve.remote.prelude import file_digest, pid_alive, read_pid, stop_pids, write_file  # shipped ahead (dispatch)

sae_emit = print  # on nodes, the dispatcher rebinds it to stream lines to the controller


def run(argv, env=None, cwd=None, timeout=None, input=None, stream=False, shell=False):
    """Run a command; returns {rc, stdout, stderr, seconds}. Streams lines if ``stream``."""
    full_env = dict(os.environ)
    full_env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    full_env.update(env or {})
    start = time.time()
    try:
        proc = subprocess.Popen(argv, shell=shell, cwd=cwd, env=full_env, text=True,
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except (FileNotFoundError, PermissionError) as e:
        return {"rc": 127, "stdout": "", "stderr": str(e), "seconds": 0.0}
    out, err = [], []

    def pump(pipe, sink, tag):
        for line in pipe:
            sink.append(line)
            if stream:
                sae_emit(tag + line.rstrip("\n"))
        pipe.close()

    threads = [threading.Thread(target=pump, args=(proc.stdout, out, ""), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err, ""), daemon=True)]
    for t in threads:
        t.start()
    if input is not None:
        proc.stdin.write(input)
        proc.stdin.close()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()
        rc = -9
        err.append("timed out after %ss\n" % timeout)
    for t in threads:
        t.join(5)
    return {"rc": rc, "stdout": "".join(out), "stderr": "".join(err),
            "seconds": round(time.time() - start, 3)}


def facts(path="/"):
    """Small facts for the health gate: hostname, python, root/sudo, free disk, tools."""
    import platform
    import socket
    uid = os.geteuid()
    sudo = uid == 0
    if not sudo and shutil.which("sudo"):
        sudo = subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0
    probe = path
    while not os.path.exists(probe):
        probe = os.path.dirname(probe) or "/"
    du = shutil.disk_usage(probe)
    return {"hostname": socket.gethostname(), "python": platform.python_version(),
            "uid": uid, "root_or_sudo": sudo, "free_bytes": du.free, "disk_path": probe,
            "rsync": bool(shutil.which("rsync")), "os": _os_release()}


def platform_facts():
    """The node's platform for a run's provenance: kernel release, CPU model, logical CPUs, OS."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Processor") and value.strip():
                    model = value.strip()
                    break
    except OSError:
        pass
    return {"kernel": os.uname().release, "cpu_model": model or platform_machine(), "cpus": os.cpu_count(),
            "os": _os_release()}


def platform_machine():
    import platform
    return platform.machine()


def _os_release():
    try:
        with open("/etc/os-release") as f:
            kv = dict(line.rstrip().split("=", 1) for line in f if "=" in line)
        return kv.get("PRETTY_NAME", "").strip('"')
    except OSError:
        return ""


def addresses():
    """IPv4 addresses of this node's interfaces (from ``ip -j addr``)."""
    r = subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True)
    if r.returncode != 0:
        return []
    return [a["local"] for i in json.loads(r.stdout) for a in i.get("addr_info", [])]


def sha256(path):
    """sha256 hex digest of a file, or None if missing."""
    try:
        return file_digest(path)
    except FileNotFoundError:
        return None


APT_LOCK = "/var/lock/sae-apt.lock"


def missing_packages(packages):
    """Debian packages from ``packages`` that are not installed."""
    missing = []
    for p in packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if r.returncode != 0 or "install ok installed" not in r.stdout:
            missing.append(p)
    return missing


def apt_install(packages, update=True, timeout=1800):
    """Install Debian packages under a machine-wide lock (nodes may share one dpkg database).

    Returns {"installed": [...], "already": [...]} or raises with apt's last error line.
    """
    import fcntl
    os.makedirs(os.path.dirname(APT_LOCK), exist_ok=True)
    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = missing_packages(packages)
        if not missing:
            return {"installed": [], "already": list(packages)}
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        if os.geteuid() != 0:
            prefix = ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
        else:
            prefix = []
        if update:
            run(prefix + ["apt-get", "update", "-q"], env=env, timeout=timeout)
        r = run(prefix + ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing,
                env=env, timeout=timeout)
        if r["rc"] != 0:
            lines = [l for l in (r["stderr"] + r["stdout"]).splitlines() if l.strip()]
            errors = [l for l in lines if l.startswith("E:")] or lines[-1:]
            raise RuntimeError("apt-get install %s failed: %s" % (" ".join(missing), " ".join(errors) or r["rc"]))
        still = missing_packages(missing)
        if still:
            raise RuntimeError("packages still missing after apt-get install: %s" % " ".join(still))
        return {"installed": missing, "already": [p for p in packages if p not in missing]}


def daemon_status(pidfile):
    """{"pid", "alive"} for a pid file."""
    pid = read_pid(pidfile)
    return {"pid": pid, "alive": bool(pid) and pid_alive(pid)}


def start_daemon(argv, pidfile, logfile, env=None, cwd=None, write_pid=True):
    """Start ``argv`` detached (own session, output to ``logfile``) unless the pid file names a
    live process. Returns {"pid", "started"}. With ``write_pid`` False the program writes its own."""
    st = daemon_status(pidfile)
    if st["alive"]:
        return {"pid": st["pid"], "started": False}
    for d in (os.path.dirname(pidfile), os.path.dirname(logfile)):
        if d:
            os.makedirs(d, exist_ok=True)
    full_env = dict(os.environ)
    full_env.update(env or {})
    with open(logfile, "ab") as log, open(os.devnull, "rb") as null:
        proc = subprocess.Popen(argv, stdin=null, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                env=full_env, start_new_session=True, close_fds=True)
    if write_pid:
        with open(pidfile, "w") as f:
            f.write(str(proc.pid))
    return {"pid": proc.pid, "started": True}


def pids_naming(text):
    """Live processes (other than this one) whose command line contains ``text``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmd and pid_alive(int(name)):
            out.append(int(name))
    return out


def stop_daemon(pidfile, timeout=10.0, sig=15):
    """SIGTERM the pid in ``pidfile``, SIGKILL after ``timeout``; returns {"pid", "stopped", "killed"}."""
    pid = read_pid(pidfile)
    stopped = bool(pid and pid_alive(pid))
    killed = bool(stopped and stop_pids([pid], timeout, sig))
    try:
        os.unlink(pidfile)
    except OSError:
        pass
    return {"pid": pid, "stopped": stopped, "killed": killed}


def port_open(host, port, timeout=0.5):
    import socket
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port(host, port, timeout=60.0):
    """Wait until ``host:port`` accepts connections; returns seconds waited or raises."""
    start = time.time()
    while time.time() - start < timeout:
        if port_open(host, port):
            return round(time.time() - start, 3)
        time.sleep(0.2)
    raise RuntimeError("nothing listens on %s:%s after %ss" % (host, port, timeout))


def http_get(url, timeout=10.0):
    """GET ``url`` from the node; {"status", "body"} (body as text)."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return {"status": r.status, "body": r.read().decode("utf-8", "replace")}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode("utf-8", "replace")}
    except (urllib.error.URLError, OSError) as e:
        return {"status": 0, "body": str(e)}


def lease_read(path):
    """The lease record (a dict) stored at ``path``, or None."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def lease_take(path, record, stale=None):
    """Store ``record`` at ``path`` unless a lease is there; a lease equal to ``stale`` (a holder
    known to be gone) is removed first. Returns the record in force afterwards."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if stale is not None and lease_read(path) == stale:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    tmp = "%s.%d.%d" % (path, os.getpid(), threading.get_ident())
    with open(tmp, "w") as f:
        json.dump(record, f)
    try:
        os.link(tmp, path)   # atomic: fails if a lease exists
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return lease_read(path)


def lease_give(path, record):
    """Remove the lease at ``path`` if it still holds ``record``; True if removed."""
    if lease_read(path) != record:
        return False
    os.unlink(path)
    return True


def secret_file(path):
    """The secret stored at ``path``, made (random, mode 600) if missing."""
    import secrets
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path) as f:
            return f.read().strip()
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    return secret_file(path)


def cpu_probe(seconds=1.0, workers=None):
    """The CPU this host may use: ``workers`` processes (default: one per CPU this process may
    run on) spin for ``seconds``; returns {cores: CPU-seconds they got per wall second, workers}."""
    import resource
    n = workers or len(os.sched_getaffinity(0))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pass
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"cores": used / wall, "workers": n}


def usable_cores():
    """The cores this host's processes may use: its CPU affinity, capped by its cgroup's CPU
    quota (cgroup v2 ``cpu.max``) where one is set."""
    cores = float(len(os.sched_getaffinity(0)))
    try:
        with open("/proc/self/cgroup") as f:
            path = next(line.split(":", 2)[2].strip() for line in f if line.startswith("0::"))
        with open("/sys/fs/cgroup%s/cpu.max" % path) as f:
            quota, period = f.read().split()
        if quota != "max":
            cores = min(cores, int(quota) / int(period))
    except (OSError, StopIteration, ValueError):
        pass
    return cores


def _group_stats(pgid):
    """{pid: (utime, stime) in clock ticks} of the live processes (zombies left out) of process
    group ``pgid``."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":   # state, ppid, pgrp, ..., utime (12th), stime (13th)
            out[int(name)] = (int(fields[11]), int(fields[12]))
    return out


def group_cpu_seconds(pgid):
    """CPU-seconds (user + system) the live processes of process group ``pgid`` have used."""
    return sum(u + s for u, s in _group_stats(pgid).values()) / os.sysconf("SC_CLK_TCK")


def stop_group(pidfile, timeout=10.0):
    """Stop the process group the pid in ``pidfile`` leads (SIGTERM, SIGKILL after ``timeout``)
    and remove the pid file; returns {"pid", "stopped"}: how many processes were stopped."""
    pid = read_pid(pidfile)
    members = list(_group_stats(pid)) if pid else []
    if members:
        stop_pids(members, timeout)
    try:
        os.unlink(pidfile)
    except OSError:
        pass
    return {"pid": pid, "stopped": len(members)}


def tcp_sink(address, port, timeout=30.0):
    """Accept one TCP connection on ``address:port`` and read it to its end; returns {bytes,
    seconds} from the first byte to the last (the receiver's view of a transfer)."""
    import socket
    with socket.socket() as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((address, port))
        srv.listen(1)
        srv.settimeout(timeout)
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(timeout)
            buf, total, first = bytearray(1 << 20), 0, None
            while True:
                k = conn.recv_into(buf)
                if not k:
                    break
                if first is None:
                    first = time.monotonic()
                total += k
            last = time.monotonic()
    return {"bytes": total, "seconds": (last - first) if first else 0.0}


def tcp_source(address, port, seconds=2.0, connect_timeout=10.0):
    """Send zeros to ``address:port`` for ``seconds`` (connecting as soon as the sink listens);
    returns the bytes sent."""
    import socket
    deadline = time.monotonic() + connect_timeout
    while True:
        try:
            conn = socket.create_connection((address, port), timeout=connect_timeout)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    data, sent = b"\0" * (1 << 20), 0
    with conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(data)
            sent += len(data)
    return sent
