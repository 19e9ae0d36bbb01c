"""Runs on Ceph nodes (stdlib only): state directories, mkfs of mons and OSDs, probes, the class.

Shipped by ``Cluster.call``; every function returns JSON-serialisable values and raises with a
one-line message naming what failed. Daemons themselves are started and stopped with
metareserve's ``node_agent``.
"""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess

from metareserve.remote.prelude import file_digest, pid_alive, read_pid, stop_pids, write_file  # shipped ahead (dispatch)

STOCK_CLASS_DIR = "/usr/lib/x86_64-linux-gnu/rados-classes"
SYSTEM_PYTHON = "/usr/bin/python3"


def _run(argv, what, input=None, env=None, timeout=300):
    full = dict(os.environ)
    full.update(env or {})
    r = subprocess.run(argv, input=input, capture_output=True, text=True, env=full, timeout=timeout)
    if r.returncode != 0:
        lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
        raise RuntimeError("%s failed (exit %d): %s" % (what, r.returncode, lines[-1] if lines else ""))
    return r.stdout


def _port_busy(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as Ceph binds: TIME_WAIT is no conflict
    try:
        s.bind((addr, int(port)))
        return False
    except OSError:
        return True
    finally:
        s.close()


def facts(state, daemons, binaries=(), ports=()):
    """What this node has: bootstrap marker (fsid), pids of ``daemons`` and of any gateway that has
    a pid file (a gateway started under other options is stopped too), OSD ids on disk, missing binaries,
    busy ports (``[[addr, port]]`` that cannot be bound), whether the state dir exists."""
    marker = None
    try:
        with open(os.path.join(state, "bootstrapped")) as f:
            marker = f.read().strip() or None
    except OSError:
        pass
    out = {}
    gateways = [os.path.basename(f)[len("ceph-"):-len(".pid")]   # any gateway, whatever the options now
                for f in glob.glob(os.path.join(state, "run", "ceph-rgw.*.pid"))]
    for name in list(daemons) + sorted(set(gateways) - set(daemons)):
        pid = read_pid(os.path.join(state, "run", "ceph-%s.pid" % name))
        out[name] = {"pid": pid, "alive": bool(pid) and pid_alive(pid)}
    osd_ids = []
    for d in glob.glob(os.path.join(state, "data", "osd.*")):
        try:
            with open(os.path.join(d, "whoami")) as f:
                osd_ids.append(int(f.read().strip()))
        except (OSError, ValueError):
            pass
    return {"fsid": marker, "exists": os.path.isdir(state), "daemons": out, "osd_ids": sorted(osd_ids),
            "conf_format": conf_format(os.path.join(state, "ceph.conf")),
            "missing": [b for b in binaries if not shutil.which(b)],
            "busy_ports": [[a, p] for a, p in ports if _port_busy(a, p)]}


def conf_format(path):
    """The format a generated ceph.conf declares in its first line (1 before formats were
    declared), None without a conf."""
    try:
        with open(path) as f:
            first = f.readline()
    except OSError:
        return None
    m = re.search(r"\(format (\d+)\)", first)
    return int(m.group(1)) if m else 1


def stop_all(state, timeout=10.0, kill=False):
    """SIGTERM (SIGKILL with ``kill``) every daemon with a pid file in the state's run dir, SIGKILL
    whatever is alive after ``timeout``. Returns how many were running."""
    pids = [p for p in (read_pid(f) for f in glob.glob(os.path.join(state, "run", "*.pid"))) if p and pid_alive(p)]
    stop_pids(pids, timeout, signal.SIGKILL if kill else signal.SIGTERM)
    return len(pids)


def wipe(state, keep=()):
    """Stop whatever runs from ``state`` and remove it, except its entries named in ``keep``
    (e.g. the logs a failed bootstrap's error points to); returns whether anything was there."""
    if not os.path.exists(state):
        return False
    stop_all(state, kill=True)
    if not keep:
        shutil.rmtree(state, ignore_errors=True)
        return True
    for name in os.listdir(state):
        if name not in keep:
            path = os.path.join(state, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
    return True


def prepare(state, files, daemon_dirs=()):
    """Create the state layout, link the stock classes, write ``files`` ({relpath: [text, mode]}).

    Returns the relative paths that changed.
    """
    for sub in ("run", "log", "data", "crash", "classes"):
        os.makedirs(os.path.join(state, sub), exist_ok=True)
    for d in daemon_dirs:
        os.makedirs(os.path.join(state, "data", d), exist_ok=True)
    classes = os.path.join(state, "classes")
    for src in glob.glob(os.path.join(STOCK_CLASS_DIR, "libcls_*.so*")):
        dst = os.path.join(classes, os.path.basename(src))
        if not os.path.lexists(dst):
            os.symlink(src, dst)
    changed = []
    for rel, (text, mode) in sorted(files.items()):
        path = os.path.join(state, rel)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if write_file(path, text, mode):
            changed.append(rel)
    return changed


def mon_mkfs(state, conf, mon_id, fsid, mons):
    """``monmaptool --create`` + ``ceph-mon --mkfs`` unless done; ``mons`` is ``[[id, addrvec]]``."""
    data = os.path.join(state, "data", "mon." + mon_id)
    if os.path.exists(os.path.join(data, "kv_backend")):
        return False
    monmap = os.path.join(state, "monmap")
    argv = ["monmaptool", "--create", "--clobber", "--fsid", fsid]
    for ident, addrs in mons:
        argv += ["--addv", ident, addrs]
    _run(argv + [monmap], "monmaptool")
    keyring = os.path.join(state, "mon.keyring")
    argv = ["ceph-mon", "-c", conf, "--mkfs", "-i", mon_id, "--monmap", monmap]
    if os.path.exists(keyring):
        argv += ["--keyring", keyring]
    _run(argv, "ceph-mon --mkfs -i " + mon_id)
    return True


def osd_mkfs(state, conf, osd_id, uuid, secret=None, device=None):
    """mkfs the store of OSD ``osd_id`` (already registered with ``osd new``) and write its keyring."""
    data = os.path.join(state, "data", "osd.%d" % osd_id)
    if device and not os.path.exists(device):
        raise RuntimeError("bluestore device %s does not exist on this node" % device)
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data, mode=0o700)
    argv = ["ceph-osd", "-c", conf, "-i", str(osd_id), "--mkfs", "--osd-uuid", uuid]
    if secret:   # the key reaches the OSD through its keyring file, never its command line
        write_file(os.path.join(data, "keyring"), "[osd.%d]\n\tkey = %s\n" % (osd_id, secret), 0o600)
    _run(argv, "ceph-osd --mkfs -i %d" % osd_id, timeout=600)


def probe(script, fn, kwargs, timeout=600):
    """Run ``fn(**kwargs)`` of the probe script with the distribution's python (it has ``rados``);
    the arguments go on its stdin, never its command line (they carry keys: an OSD's cephx secret)."""
    out = _run([SYSTEM_PYTHON, "-c", script, fn], "probe " + fn, input=json.dumps(kwargs), timeout=timeout)
    return json.loads(out.strip().splitlines()[-1])


def log_tail(path, lines=3):
    """The last ``lines`` non-empty lines of a log file (empty list if missing)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [l for l in text.splitlines() if l.strip()][-lines:]


def _usable_cpus():
    return max(1, len(os.sched_getaffinity(0)))


def _each_in_parallel(commands):
    """Run ``commands`` (argv lists), as many at once as this process may use CPUs; returns the
    first failed one's CompletedProcess, or None."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(_usable_cpus()) as pool:
        done = list(pool.map(lambda argv: subprocess.run(argv, capture_output=True, text=True), commands))
    return next((r for r in done if r.returncode != 0), None)


def _batch_units(src, names, sources, cpus):
    """The translation units to compile in ``src``: one per source where there are as many CPUs,
    else ``cpus`` batches balanced by source size, each a file that includes its sources (every
    unit parses Arrow's headers, ~2 s each: on a 1-core host one batch builds in ~12 s where six
    units took ~21 s)."""
    if cpus >= len(names):
        return [os.path.join(src, n) for n in names]
    batches = [[] for _ in range(cpus)]
    for name in sorted(names, key=lambda n: -len(sources[n])):   # largest first, onto the lightest batch
        min(batches, key=lambda b: sum(len(sources[n]) for n in b)).append(name)
    units = []
    for i, batch in enumerate(batches):
        path = os.path.join(src, "batch-%d.cpp" % i)   # not *.cc: never taken for a source
        with open(path, "w") as f:
            f.write("".join('#include "%s"\n' % n for n in sorted(batch)))
        units.append(path)
    return units


def build_class(root, sources, python, libs, flags, cpus=None):
    """Compile ``sources`` ({name: text}) into ``root/<flags["output"]>`` once (flock per build dir;
    shared disks build once) against the pyarrow of ``python``, in as many units at once as
    ``cpus`` (default: the CPUs this process may use; fewer units parse Arrow's headers fewer
    times: less CPU, more wall time); copies ``libs`` beside it. Returns whether it built."""
    import fcntl
    os.makedirs(os.path.dirname(root), exist_ok=True)
    with open(root + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(root, ".complete")):
            return False
        shutil.rmtree(root, ignore_errors=True)
        src = os.path.join(root, "src")
        os.makedirs(src)
        for name, text in sources.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
        inc, libdir = json.loads(_run([python, "-c", "import json, pyarrow; "
                                       "print(json.dumps([pyarrow.get_include(), pyarrow.get_library_dirs()[0]]))"],
                                      "pyarrow lookup").strip())
        out = os.path.join(root, flags["output"])
        units = _batch_units(src, sorted(n for n in sources if n.endswith(".cc")), sources, cpus or _usable_cpus())
        objects = [os.path.splitext(u)[0] + ".o" for u in units]
        compile_argv = [["g++"] + flags["cxxflags"] + ["-c", "-o", o, u, "-I" + src, "-I" + inc]
                        for u, o in zip(units, objects)]
        link_argv = (["g++", "-shared", "-o", out] + objects
                     + ["-L" + libdir] + ["-l:" + l for l in libs] + flags["ldflags"])
        for stage in (compile_argv, [link_argv]):
            failed = _each_in_parallel(stage)
            if failed:
                shutil.rmtree(root, ignore_errors=True)   # a failed build leaves nothing (the lock file stays)
                errors = [l for l in failed.stderr.splitlines() if "error" in l] or failed.stderr.splitlines()[-1:]
                raise RuntimeError("g++ failed: %s" % (errors[0].replace(src + "/", "") if errors
                                                       else failed.returncode))
        for lib in libs:
            shutil.copy2(os.path.join(libdir, lib), os.path.join(root, lib))
        open(os.path.join(root, ".complete"), "w").close()
        return True


def install_class(root, classdir, files, osd_pids):
    """Place ``files`` from the build dir ``root`` into ``classdir`` (new inodes; never written in
    place), and name the running OSDs (``{id: pid}``) that mapped an older copy of any of them."""
    changed = []
    for name in files:
        src, dst = os.path.join(root, name), os.path.join(classdir, name)
        try:
            if os.path.samefile(src, dst) or file_digest(src) == file_digest(dst):
                continue
        except OSError:
            pass
        tmp = dst + ".new"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copy2(src, tmp)
        os.replace(tmp, dst)
        changed.append(name)
    current = {}
    for name in files:
        st = os.stat(os.path.join(classdir, name))
        current[os.path.join(classdir, name)] = str(st.st_ino)
    stale = []
    for osd, pid in osd_pids.items():
        try:
            with open("/proc/%d/maps" % int(pid)) as f:
                for line in f:
                    parts = line.split(None, 5)
                    path = parts[5].strip() if len(parts) == 6 else ""
                    path = path[:-len(" (deleted)")] if path.endswith(" (deleted)") else path
                    if path in current and parts[4] != current[path]:
                        stale.append(osd)
                        break
        except OSError:
            pass
    return {"changed": changed, "stale": stale}


def link_conf(path, target, valid):
    """Make ``path`` a symlink to ``target`` unless it already names one of the ``valid`` confs
    and is readable (nodes sharing a disk share the link). True if it changed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        current = os.readlink(path)
    except OSError:
        current = None
    if current in valid and os.access(path, os.R_OK):
        return False
    tmp = path + ".tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, path)
    return True


FUSE_NO_CACHE = ("--client_oc=false", "--fuse_disable_pagecache=true")
"""ceph-fuse's flags for a mount without a client data cache (what :func:`fuse_client` reads back)."""


def fuse_mount(conf, mountpoint, user, cache=False):
    """Mount CephFS at ``mountpoint`` with ceph-fuse as cephx ``client.<user>`` (its keyring is
    the one the conf names); without ``cache`` no client data cache (every read reaches the OSDs).
    A live mount as the same user and cache mode is kept (returns ""); one as another user or
    mode is replaced ("remounted"); one whose ceph-fuse died, e.g. with the cluster it mounted, is
    unmounted first ("mounted", as for a new mount)."""
    done = "mounted"
    if _mounted(mountpoint):
        try:
            os.stat(mountpoint)
        except OSError:   # its ceph-fuse is gone ("Transport endpoint is not connected")
            _run(["umount", "-l", mountpoint], "umount -l %s" % mountpoint)
        else:
            if fuse_client(mountpoint) == (user, cache):
                return ""
            fuse_unmount(mountpoint)
            done = "remounted"
    made = not os.path.exists(mountpoint)
    os.makedirs(mountpoint, exist_ok=True)
    argv = ["ceph-fuse", "-c", conf, "--id", user]
    argv += [] if cache else list(FUSE_NO_CACHE)
    try:
        _run(argv + [mountpoint], "ceph-fuse %s" % mountpoint)
        if not os.path.ismount(mountpoint):
            raise RuntimeError("ceph-fuse exited but nothing is mounted at %s" % mountpoint)
    except (RuntimeError, subprocess.TimeoutExpired):
        if made:   # a failed mount leaves no mount point behind
            try:
                os.rmdir(mountpoint)
            except OSError:
                pass
        raise
    return done


def fuse_client(mountpoint):
    """``(cephx id, cache)`` of the ceph-fuse serving ``mountpoint`` in this mount namespace (its
    command line, as :func:`fuse_mount` started it), or None."""
    mine, target = os.readlink("/proc/self/ns/mnt"), os.path.abspath(mountpoint)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
            if (not argv or os.path.basename(argv[0]) != "ceph-fuse" or os.path.abspath(argv[-1]) != target
                    or os.readlink("/proc/%s/ns/mnt" % pid) != mine):
                continue
        except OSError:
            continue
        user = argv[argv.index("--id") + 1] if "--id" in argv[:-1] else "admin"
        return user, FUSE_NO_CACHE[0] not in argv
    return None


def _mounted(mountpoint):
    """Whether this mount namespace has something mounted at ``mountpoint``, from its mountinfo:
    a FUSE mount whose daemon died counts, though ``os.path.ismount`` cannot stat it."""
    target = os.path.abspath(mountpoint).replace("\\", "\\134").replace(" ", "\\040")
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def fuse_unmount(mountpoint):
    """Unmount ``mountpoint`` if mounted (lazily if busy); True if it was mounted. The directory
    stays: on hosts sharing a disk, removing it would detach other hosts' mounts of it."""
    if not _mounted(mountpoint):
        return False
    r = subprocess.run(["umount", mountpoint], capture_output=True, text=True)
    if r.returncode != 0:
        _run(["umount", "-l", mountpoint], "umount -l %s" % mountpoint)
    return True


def _admin_command(path, command, timeout=10.0):
    """One admin-socket command (what ``ceph daemon`` sends): JSON + NUL, answered by a
    big-endian u32 length and JSON."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(json.dumps(command).encode() + b"\0")
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                raise RuntimeError("admin socket %s closed before answering" % path)
            head += chunk
        n, body = int.from_bytes(head, "big"), b""
        while len(body) < n:
            chunk = s.recv(min(1 << 20, n - len(body)))
            if not chunk:
                raise RuntimeError("admin socket %s closed mid-answer" % path)
            body += chunk
        return json.loads(body) if body.strip() else None   # some commands (an eviction) answer nothing
    finally:
        s.close()


def mds_sessions(state, daemons):
    """Per MDS daemon (``mds.node1``): its client sessions (``session ls`` through the admin
    socket), each {"id", "inst", "metadata"} with the client's string metadata (hostname, pid,
    entity_id, mount_point for ceph-fuse); None from a daemon that answers no list (a standby)."""
    out = {}
    for daemon in daemons:
        try:
            listed = _admin_command("%s/run/ceph-%s.asok" % (state, daemon), {"prefix": "session ls"})
        except (OSError, ValueError, RuntimeError):
            listed = None
        out[daemon] = None if not isinstance(listed, list) else [
            {"id": s["id"], "inst": s.get("inst", ""),
             "metadata": {k: v for k, v in s.get("client_metadata", {}).items() if isinstance(v, str)}}
            for s in listed]
    return out


def gone(pids):
    """Those of ``pids`` that no process of this host runs (a zombie counts as gone)."""
    return [p for p in pids if not pid_alive(p)]


def evict_sessions(state, daemon, ids):
    """Evict the client sessions ``ids`` from MDS ``daemon`` through its admin socket."""
    for i in ids:
        _admin_command("%s/run/ceph-%s.asok" % (state, daemon), {"prefix": "client evict", "filters": ["id=%d" % int(i)]})
    return len(ids)


def perf_counters(fields, state, daemons):
    """Per daemon (``osd.0``): [pid, values of ``fields``] from its ``perf dump``; a field is
    a path of keys (``["osd", "op_r"]``), None where the daemon has no such counter."""
    out = {}
    for daemon in daemons:
        asok = "%s/run/ceph-%s.asok" % (state, daemon)
        try:
            dump = _admin_command(asok, {"prefix": "perf dump"})
        except (OSError, ValueError, RuntimeError) as e:
            raise RuntimeError("perf dump of %s through %s failed: %s; is it running?" % (daemon, asok, e))
        values = []
        for path in fields:
            v = dump
            for key in path:
                v = v.get(key) if isinstance(v, dict) else None
            values.append(v)
        out[daemon] = [read_pid("%s/run/ceph-%s.pid" % (state, daemon)), values]
    return out


def wait_http(url, pidfile, timeout):
    """Wait until ``url`` answers HTTP (any status) while the process of ``pidfile`` runs; the
    seconds waited, or None once that process is gone."""
    import time
    import urllib.error
    import urllib.request
    start = time.time()
    while time.time() - start < timeout:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return round(time.time() - start, 2)
        except urllib.error.HTTPError:
            return round(time.time() - start, 2)
        except (urllib.error.URLError, OSError):
            pid = read_pid(pidfile)
            if not pid or not pid_alive(pid):
                return None
            time.sleep(0.2)
    raise RuntimeError("%s did not answer within %ds" % (url, timeout))


def read_private(path):
    """The text of a file only its owner may read (a secret), None if missing; refuses a file
    that others may read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if st.st_mode & 0o077:
        raise RuntimeError("%s is readable by others (mode %o); remove it and start again" % (path, st.st_mode & 0o777))
    with open(path) as f:
        return f.read()


def _perf_sections(state, daemon, sections):
    """[pid, {section: its counters}] of ``daemon``'s ``perf dump``."""
    asok = "%s/run/ceph-%s.asok" % (state, daemon)
    try:
        dump = _admin_command(asok, {"prefix": "perf dump"})
    except (OSError, ValueError, RuntimeError) as e:
        raise RuntimeError("perf dump of %s through %s failed: %s; is it running?" % (daemon, asok, e))
    return [read_pid("%s/run/ceph-%s.pid" % (state, daemon)), {s: dump.get(s, {}) for s in sections}]


def _entries(data):
    """The complete JSON entries at the start of ``data`` (bytes of a gateway's ops log: objects
    one after another, a batch ending with a newline) and how many bytes they took; an entry
    being written is left for the next read."""
    text = data.decode("utf-8", "surrogateescape")
    decoder, at, done, out = json.JSONDecoder(), 0, 0, []
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text):
            done = at
            break
        try:
            entry, at = decoder.raw_decode(text, at)
        except ValueError:
            break
        out.append(entry)
        done = at
    return out, len(text[:done].encode("utf-8", "surrogateescape"))


def _op_type(entry):
    """An ops log entry's type: the gateway's operation name, but a HEAD of an object (which the
    gateway names ``get_obj`` too) is ``head_obj`` and a multipart part's PUT ``put_part``."""
    op = entry.get("operation", "unknown")
    method, _, rest = entry.get("uri", "").partition(" ")
    if op == "get_obj" and method == "HEAD":
        return "head_obj"
    if op == "put_obj" and re.search(r"[?&]uploadId=", rest.split(" ")[0]):
        return "put_part"
    return op


def ops_log_counts(path, endpoint, fence_prefix, timeout=30.0):
    """Requests in the gateway's ops log by type: {type: [requests, failed (HTTP >= 400),
    bytes received, bytes sent]}. First a fence: an anonymous request for a bucket of its own
    name, then read the log until the fence's entry is there; the gateway logs in order, so every
    request it logged before the fence is counted. Fences are not counted. The counts so far and
    the offset read to are kept beside the log (``<log>.counts``), so a read takes only what the
    gateway logged since the last one."""
    import fcntl
    import time
    import urllib.error
    import urllib.request
    import uuid
    fence = fence_prefix + uuid.uuid4().hex
    try:
        urllib.request.urlopen("%s/%s" % (endpoint, fence), timeout=10).close()
    except urllib.error.HTTPError:
        pass   # 404: no such bucket, and logged as such
    deadline = time.time() + timeout
    with open(path + ".counts", "a+") as saved:   # also the lock of this log's readers
        fcntl.flock(saved, fcntl.LOCK_EX)
        saved.seek(0)
        text = saved.read()
        state = json.loads(text) if text.strip() else {}
        while True:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            inode = st.st_ino if st else None
            if inode != state.get("inode") or (st and st.st_size < state.get("offset", 0)):
                state = {"inode": inode, "offset": 0, "counts": {}}   # a new log
            seen = False
            if st and st.st_size > state["offset"]:
                with open(path, "rb") as f:
                    f.seek(state["offset"])
                    entries, used = _entries(f.read())
                state["offset"] += used
                for e in entries:
                    bucket = str(e.get("bucket", ""))
                    if bucket.startswith(fence_prefix):
                        seen = seen or bucket == fence
                        continue
                    c = state["counts"].setdefault(_op_type(e), [0, 0, 0, 0])
                    c[0] += 1
                    c[1] += int(int(e.get("http_status") or 200) >= 400)
                    c[2] += int(e.get("bytes_received", 0))
                    c[3] += int(e.get("bytes_sent", 0))
            if seen:
                break
            if time.time() > deadline:
                raise RuntimeError("the gateway logged no entry of fence %s in %s within %ds" % (fence, path, timeout))
            time.sleep(0.02)
        saved.seek(0)
        saved.truncate()
        saved.write(json.dumps(state))
    return state["counts"]


def op_counters(state, perf, gateways):
    """One node's part of an op count: ``perf`` {daemon: [sections]} → {daemon: [pid,
    {section: counters}]}; ``gateways`` [[ops log, endpoint, fence prefix]] → their
    :func:`ops_log_counts`."""
    return {"perf": {d: _perf_sections(state, d, sections) for d, sections in perf.items()},
            "rgw": [ops_log_counts(*g) for g in gateways]}


def tls_pair(directory, address, cert_name, key_name):
    """A self-signed certificate for ``address`` (an IP subjectAltName) and its key, born 0600, in
    ``directory``, made by openssl unless both are there; returns the certificate (PEM)."""
    cert, key = os.path.join(directory, cert_name), os.path.join(directory, key_name)
    if not (os.path.exists(cert) and os.path.exists(key)):
        os.makedirs(directory, exist_ok=True)
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                            "-keyout", key + ".tmp", "-out", cert + ".tmp", "-subj", "/CN=" + address,
                            "-addext", "subjectAltName=IP:" + address], capture_output=True, text=True, umask=0o077)
        if r.returncode != 0:
            raise RuntimeError("openssl could not make the gateway's certificate: %s" % r.stderr.strip()[-300:])
        os.chmod(cert + ".tmp", 0o644)
        os.replace(key + ".tmp", key)
        os.replace(cert + ".tmp", cert)
    with open(cert) as f:
        return f.read()
