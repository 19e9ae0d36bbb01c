"""Backend-only reads (the thesis's fig. 16): the ``sae`` object class's ``scan`` on every object of
a dataset, called from a librados client on a compute host, without Spark.

Run by :mod:`sae.running.backend` with the Spark nodes' python (pyarrow, Debian's rados and cephfs
bindings) and one argument, a JSON object::

    {"ceph_conf": "...", "ceph_user": "sae-scan", "path": "/sae/<hash>", "request": "<hex of the encoded scan request>",
     "reply": {"magic": "SAER", "error_magic": "SAEE", "head": "<4sHH", "stats": ["read_ns", ...], "bodies": [...]},
     "reply_limit": <bytes>, "in_flight": 8, "reps": [0, 1, 2], "pause": 1.0}

``reply`` is the protocol's reply framing (docs/protocol.md), given by the controller from the
protocol's one definition: this script runs alone, with no sae package beside it.

Per repetition: list the dataset's files through libcephfs (names starting with ``_`` or ``.``
are not data, as for Spark) and map each to its one RADOS object (``<inode hex>.00000000``) in the
file's data pool (``init_s``); then send the same request to every object, at most ``in_flight``
asynchronous calls at a time, and wait for every reply (``compute_s``: the backend's time). Only
then are the replies decoded (not timed): Arrow record batches, rows and reply bytes are counted,
the class's own stats summed (``scan``: phase CPU times, rows and batches in and out, as the
connector sums them, plus ``calls``); an error frame's bytes are returned for the controller to
decode. One JSON line per repetition on stdout, prefixed ``sae-backend``.

As a second application on the storage side (:mod:`sae.running.tenant_load`, ``"reps": null``):
the objects listed once (then CephFS unmounted), the same calls over and over, without pause,
until stopped; the replies are not kept or decoded
(the distribution's python suffices: no pyarrow). It prints the calls answered so far, one line
prefixed ``sae-tenant`` at most every :data:`TENANT_LINE_S` seconds while calls are answered and at
the end of each pass: a reader of its last line sees calls answered within a query's repetition
even when a pass outlasts it.
"""
import itertools
import json
import struct
import sys
import threading
import time

TAG, TENANT_TAG = "sae-backend ", "sae-tenant "
TENANT_LINE_S = 0.2
"""The second application's least interval between two lines of progress."""


def objects(fs, path):
    """(pool, [object names]) of the dataset's data files under ``path``, in name order."""
    names = []
    d = fs.opendir(path)
    try:
        while (entry := fs.readdir(d)) is not None:
            name = entry.d_name.decode()
            if not name.startswith(("_", ".")):
                names.append(name)
    finally:
        fs.closedir(d)
    names.sort()
    pool = fs.getxattr(f"{path}/{names[0]}", "ceph.file.layout.pool").decode() if names else None
    return pool, ["%x.00000000" % fs.stat(f"{path}/{n}").st_ino for n in names]


def scan_all(io, oids, request, reply_limit, in_flight, keep=True, answered=None):
    """Every object's reply (bytes; None unless ``keep``), at most ``in_flight`` calls outstanding;
    ``answered()``, if given, is called on librados's thread as each call succeeds."""
    slots = threading.Semaphore(in_flight)
    replies, failures, done = [None] * len(oids), [], threading.Semaphore(0)

    def finished(i):
        def cb(completion, data):
            ret = completion.get_return_value()
            if ret < 0:
                failures.append(f"object {oids[i]}: errno {-ret}")
            else:
                if keep:
                    replies[i] = data
                if answered:
                    answered()
            slots.release()
            done.release()
        return cb

    calls = []   # the completions stay referenced until every call is in
    for i, oid in enumerate(oids):
        slots.acquire()
        calls.append(io.aio_execute(oid, "sae", "scan", request, length=reply_limit, oncomplete=finished(i)))
    for _ in oids:
        done.acquire()
    return replies, failures


def count(replies, framing):
    """(record batches, rows, reply bytes, summed class stats, first error frame as hex or None)."""
    import pyarrow as pa
    batches = rows = size = 0
    head = struct.Struct(framing["head"])   # magic, stat count, body format; then the stats as u64
    stats = dict.fromkeys(framing["stats"], 0)
    stats["calls"] = 0
    for reply in replies:
        size += len(reply)
        if reply[:4] == framing["error_magic"].encode():
            return batches, rows, size, stats, reply.hex()
        magic, n, body = head.unpack_from(reply)
        if magic != framing["magic"].encode() or framing["bodies"][body] != "arrow_ipc":
            raise SystemExit(f"reply starts {magic!r} with body format {body}: not this protocol's Arrow IPC reply")
        for name, value in zip(framing["stats"], struct.unpack_from(f"<{n}Q", reply, head.size)):
            stats[name] += value
        stats["calls"] += 1
        with pa.ipc.open_stream(pa.py_buffer(reply)[head.size + 8 * n:]) as stream:
            for batch in stream:
                batches += 1
                rows += batch.num_rows
    return batches, rows, size, stats, None


def ceph_bindings():
    """Debian's ``cephfs`` and ``rados`` modules, also from a python other than the distribution's
    (the bindings have the same ABI)."""
    try:
        import cephfs
        import rados
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        import cephfs
        import rados
    return cephfs, rados


def main(cfg):
    cephfs, rados = ceph_bindings()
    request = bytes.fromhex(cfg["request"])
    cluster = rados.Rados(conffile=cfg["ceph_conf"], rados_id=cfg["ceph_user"])
    cluster.connect()
    fs = cephfs.LibCephFS(conffile=cfg["ceph_conf"], auth_id=cfg["ceph_user"])
    fs.mount()
    try:
        if cfg["reps"] is None:
            tenant(fs, cluster, cfg, request)
        else:
            measure(fs, cluster, cfg, request)
    finally:
        fs.shutdown()
        cluster.shutdown()


def measure(fs, cluster, cfg, request):
    """Each repetition of ``cfg["reps"]``: list, scan every object, decode; one line each."""
    for n, rep in enumerate(cfg["reps"]):
        if n:
            time.sleep(cfg["pause"])
        t0 = time.time()
        pool, oids = objects(fs, cfg["path"])
        io = cluster.open_ioctx(pool)
        t1 = time.time()
        replies, failures = scan_all(io, oids, request, cfg["reply_limit"], cfg["in_flight"])
        t2 = time.time()
        io.close()
        batches, rows, size, stats, error = count([] if failures else replies, cfg["reply"])
        print(TAG + json.dumps({"repetition": rep, "start": t0, "end": t2, "init_s": t1 - t0,
                                "compute_s": t2 - t1, "total_s": t2 - t0, "objects": len(oids),
                                "rows": rows, "batches": batches, "reply_bytes": size, "scan": stats,
                                "failures": failures[:3], "error_frame": error}), flush=True)


def tenant(fs, cluster, cfg, request):
    """The calls over and over until stopped, printing the calls answered so far (the module's
    docstring). CephFS is unmounted once the objects are listed: a tenant is stopped with a signal,
    and a session left open would keep its capabilities on the dataset's directories until the MDS
    times it out (a minute, in which another client's mkdir there waits)."""
    pool, oids = objects(fs, cfg["path"])
    fs.unmount()
    io = cluster.open_ioctx(pool)
    lock, progress = threading.Lock(), {"pass": 0, "calls": 0, "printed": 0.0, "failures": []}

    def line(now):
        progress["printed"] = now
        print(TENANT_TAG + json.dumps({"pass": progress["pass"], "end": now, "calls": progress["calls"],
                                       "failures": progress["failures"][:3]}), flush=True)

    def answered():
        with lock:
            progress["calls"] += 1
            if (now := time.time()) - progress["printed"] >= TENANT_LINE_S:
                line(now)

    for n in itertools.count():
        _, failures = scan_all(io, oids, request, cfg["reply_limit"], cfg["in_flight"], keep=False, answered=answered)
        with lock:
            progress.update({"pass": n, "failures": failures})
            line(time.time())


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
