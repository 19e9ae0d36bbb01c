"""Runs on nodes (stdlib only): Spark software facts, master state, tarball unpacking, submit.

Shipped by metareserve's Cluster.call; ``sae_emit`` streams a line back (rebound by the dispatcher).
Every function returns a JSON-serialisable value.
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request

from metareserve.remote.prelude import file_digest  # shipped ahead (dispatch)


sae_emit = print  # on nodes, the dispatcher rebinds it to stream lines to the controller


def software(spark_home, python=None):
    """What is installed: Spark at ``spark_home``, the node venv's ``python``, the ``java`` on PATH."""
    return {"spark": os.access(os.path.join(spark_home, "bin", "spark-class"), os.X_OK),
            "python": bool(python) and os.access(python, os.X_OK), "java": shutil.which("java")}


def master_state(url, timeout=5.0):
    """The master's JSON endpoint summarised: status, alive workers ("host:port"), apps; None if down."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            data = json.loads(r.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    workers = data.get("workers", [])
    return {"status": data.get("status"),
            "alive": sorted("%s:%s" % (w.get("host"), w.get("port")) for w in workers
                            if w.get("state") == "ALIVE"),
            "cores": data.get("cores"), "memory": data.get("memory"),
            "active_apps": len(data.get("activeapps", [])),
            "completed_apps": len(data.get("completedapps", []))}


def wait_workers(url, expected, timeout=300.0, interval=0.5):
    """Poll the master until every worker in ``expected`` ("host:port") is ALIVE or ``timeout``.

    Returns {"ok", "alive", "missing", "seconds"}.
    """
    start = time.time()
    state = None
    while True:
        state = master_state(url)
        alive = state["alive"] if state else []
        missing = sorted(set(expected) - set(alive))
        if state and not missing:
            break
        if time.time() - start > timeout:
            break
        time.sleep(interval)
    return {"ok": bool(state) and not missing, "alive": alive, "missing": missing,
            "master_up": state is not None, "seconds": round(time.time() - start, 3)}


def unpack_tarball(archive, dest):
    """Unpack a Spark tarball into ``dest`` (top directory stripped) under a lock; marked complete last.

    Returns {"changed": bool}. Hosts sharing a disk see the first host's copy complete.
    """
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(dest, ".complete")):
            return {"changed": False}
        tmp = dest + ".partial"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(tmp)
        r = subprocess.run(["tar", "-xf", archive, "-C", tmp, "--strip-components=1"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError("tar could not unpack %s: %s" % (archive, r.stderr.strip()[-300:]))
        if not os.access(os.path.join(tmp, "bin", "spark-class"), os.X_OK):
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError("%s is not a Spark distribution (no bin/spark-class inside)" % archive)
        os.rename(tmp, dest)
        open(os.path.join(dest, ".complete"), "w").close()
        return {"changed": True}


STATE_MARKER = ".sae-spark-deploy"


def make_state_dirs(root, dirs):
    """Create ``dirs`` and mark ``root`` as made by spark-deploy."""
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    open(os.path.join(root, STATE_MARKER), "a").close()
    return True


def remove(paths):
    """Remove ``[path, marker]`` entries: a directory only when ``marker`` (if given) is in it,
    a file or tree otherwise; returns the paths removed."""
    found = []
    for p, marker in paths:
        if marker and not os.path.exists(os.path.join(p, marker)):
            continue
        if os.path.lexists(p):
            found.append(p)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
    return found


def spark_submit(argv, env, log_path, cwd=None, stream=True):
    """Run spark-submit, streaming its output and writing it to ``log_path``. Its stdout (the
    application's prints) and stderr (Spark's log) are read apart, line by line, so a long line
    of the application is never cut by a log line written meanwhile.

    Returns {"rc", "output" (last 200 lines), "seconds"}.
    """
    full_env = dict(os.environ)
    full_env.update(env)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    start = time.time()
    tail = []
    lock = threading.Lock()
    with open(log_path, "w") as log:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=full_env, text=True, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as e:
            return {"rc": 127, "output": [str(e)], "seconds": 0.0}

        def pump(pipe):
            for line in pipe:
                with lock:
                    log.write(line)
                    line = line.rstrip("\n")
                    tail.append(line)
                    del tail[:-200]
                    if stream:
                        sae_emit(line)
        readers = [threading.Thread(target=pump, args=(pipe,), daemon=True) for pipe in (proc.stdout, proc.stderr)]
        for t in readers:
            t.start()
        rc = proc.wait()
        for t in readers:
            t.join()
    return {"rc": rc, "output": tail, "seconds": round(time.time() - start, 3)}


def class_archive(root, spark_home, classpath, java_home=None):
    """Where this node keeps the class-data archive of JVMs started with ``classpath`` from
    ``spark_home`` on its Java: {"path", "exists"}. The name hashes those and the stat of the
    ``java`` binary and of ``jars/``, so an upgrade of either gets a new archive."""
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    facts = [spark_home, classpath]
    for path in (os.path.realpath(java) if java else "java", os.path.join(spark_home, "jars")):
        try:
            st = os.stat(path)
            facts.append("%s %d %d" % (path, st.st_size, st.st_mtime_ns))
        except OSError:
            facts.append(path)
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16] + ".jsa")
    return {"path": path, "exists": os.path.isfile(path)}


def keep_archive(dump, path, keep):
    """Move the archive a driver wrote at exit (``dump``) to ``path`` when ``keep`` and it is
    not empty, else delete it; returns whether it was kept."""
    if keep and os.path.isfile(dump) and os.path.getsize(dump) > 0:
        os.replace(dump, path)
        return True
    if os.path.lexists(dump):
        os.unlink(dump)
    return False


def find(root, name):
    """Paths below ``root`` whose base name is ``name`` (e.g. a cluster-mode driver directory)."""
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        if name in dirnames:
            out.append(os.path.join(dirpath, name))
    return out


def wait_closed(host, ports, timeout=30.0):
    """Wait until nothing listens on ``host`` at any of ``ports``; returns the ports still open."""
    import socket
    deadline = time.time() + timeout
    while True:
        still = []
        for port in ports:
            try:
                socket.create_connection((host, int(port)), timeout=0.5).close()
                still.append(port)
            except OSError:
                pass
        if not still or time.time() > deadline:
            return still
        time.sleep(0.2)


def jars_present(paths):
    """Per path: whether the jar is there and matches the sha1 recorded beside it (``<jar>.sha1``)."""
    out = []
    for path in paths:
        try:
            with open(path + ".sha1") as f:
                out.append(file_digest(path, "sha1") == f.read().strip())
        except OSError:
            out.append(False)
    return out


def place_jars(root, jars):
    """Move each ``[incoming, path, sha1]`` jar to ``path`` with its ``.sha1`` beside it, under a
    lock in ``root`` (hosts sharing a disk place it once); a jar whose bytes do not match ``sha1``
    is refused. Returns the paths placed now."""
    os.makedirs(root, exist_ok=True)
    placed = []
    with open(os.path.join(root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for incoming, path, sha1 in jars:
            if jars_present([path]) == [True]:
                if os.path.exists(incoming):
                    os.unlink(incoming)
                continue
            actual = file_digest(incoming, "sha1")
            if actual != sha1:
                os.unlink(incoming)
                raise RuntimeError("%s fails its checksum on arrival (sha1 %s, Maven Central's %s); install again"
                                   % (os.path.basename(path), actual, sha1))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.replace(incoming, path + ".part")
            with open(path + ".sha1", "w") as f:
                f.write(sha1 + "\n")
            os.replace(path + ".part", path)
            placed.append(path)
    return placed


def truststore(pem, path, password):
    """A PKCS12 trust store at ``path``: the JVM's default CA certificates plus ``pem`` (made with
    keytool from the ``java`` on PATH unless there). Returns whether it was made now."""
    if os.path.exists(path):
        return False
    java = os.path.realpath(shutil.which("java") or "java")
    cacerts = os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "security", "cacerts")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    shutil.copyfile(cacerts, tmp)
    with open(tmp + ".pem", "w") as f:
        f.write(pem)
    r = subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "sae-" + os.path.basename(path)[:16],
                        "-file", tmp + ".pem", "-keystore", tmp, "-storetype", "PKCS12", "-storepass", password],
                       capture_output=True, text=True)
    os.unlink(tmp + ".pem")
    if r.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError("keytool could not add the certificate to %s: %s" % (path, (r.stderr or r.stdout).strip()[-300:]))
    os.replace(tmp, path)
    return True
