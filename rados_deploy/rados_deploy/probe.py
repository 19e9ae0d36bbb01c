"""Cluster queries run ON a Ceph node by the distribution's Python (which has ``rados``).

The controller ships this file's text and runs ``/usr/bin/python3 -c <text> FN`` with FN's keyword
arguments as JSON on stdin (never on the command line: they may carry keys);
the one JSON line printed on stdout is the answer. Stdlib + Debian's python3-rados only.
"""
import json
import sys
import time


def _connect(conf, timeout=15):
    import rados
    r = rados.Rados(conffile=conf, conf={"rados_osd_op_timeout": "30", "rados_mon_op_timeout": "15",
                                         "client_mount_timeout": str(timeout)})
    r.connect(timeout=timeout)
    return r


def _mon(r, prefix, target="mon", **args):
    cmd = json.dumps(dict(args, prefix=prefix, format="json"))
    ret, out, errs = (r.mgr_command if target == "mgr" else r.mon_command)(cmd, b"", timeout=15)
    if ret != 0:
        raise RuntimeError("ceph %s failed (%d): %s" % (prefix, ret, errs))
    return json.loads(out) if out else {}


def quorum(conf, mons, wait=120, commands=()):
    """Wait until every mon in ``mons`` is in quorum, then run ``commands`` (see :func:`_configure`)."""
    start = time.time()
    r = _connect(conf, timeout=int(wait))
    try:
        while True:
            names = _mon(r, "quorum_status").get("quorum_names", [])
            if set(mons) <= set(names):
                _configure(r, commands)
                return {"ready": True, "seconds": round(time.time() - start, 2), "quorum": names}
            if time.time() - start > wait:
                return {"ready": False, "seconds": round(time.time() - start, 2), "quorum": names}
            time.sleep(0.3)
    finally:
        r.shutdown()


def _configure(r, commands):
    """Run mon commands ``[{prefix, ..., "_inbuf": text}]`` in order; "already exists" counts as done."""
    for c in commands:
        args = dict(c)
        inbuf = args.pop("_inbuf", "").encode()
        ret, out, errs = r.mon_command(json.dumps(args), inbuf, timeout=30)
        if ret not in (0, -17):
            raise RuntimeError("ceph %s failed (%d): %s" % (args["prefix"], ret, errs))


def users(conf, users):
    """Make each of ``users`` ({entity: {service: cap}}) exist with exactly those caps: create it
    (the mon makes its key) or set its caps. Returns {entity: {"key", "changed"}}; the keys leave
    only through this process's stdout."""
    r = _connect(conf)
    try:
        out = {}
        for entity, caps in users.items():
            flat = [x for service, cap in sorted(caps.items()) for x in (service, cap)]
            ret, got, errs = r.mon_command(json.dumps({"prefix": "auth get", "entity": entity, "format": "json"}),
                                           b"", timeout=15)
            if ret == -2:   # ENOENT
                entry, changed = _mon(r, "auth get-or-create", entity=entity, caps=flat)[0], True
            elif ret != 0:
                raise RuntimeError("ceph auth get %s failed (%d): %s" % (entity, ret, errs))
            else:
                entry = json.loads(got)[0]
                changed = entry.get("caps") != caps
                if changed:
                    _mon(r, "auth caps", entity=entity, caps=flat)
            out[entity] = {"key": entry["key"], "changed": changed}
        return out
    finally:
        r.shutdown()


def _pg_state(r):
    pg = _mon(r, "pg stat", target="mgr")
    summary = pg.get("pg_summary", pg)
    by_state = {e["name"]: e["num"] for e in summary.get("num_pg_by_state", [])}
    return by_state


def state(r, fs_name):
    """One snapshot: OSDs up, PG states vs Σ pg_num, MDS states of ``fs_name``, health."""
    dump = _mon(r, "osd dump")
    expected = sum(p["pg_num"] for p in dump.get("pools", []))
    by_state = _pg_state(r)
    mds = []
    for fs in _mon(r, "fs dump").get("filesystems", []):
        if fs["mdsmap"]["fs_name"] == fs_name:
            mds = [i["state"] for i in fs["mdsmap"].get("info", {}).values()]
    health = _mon(r, "health")
    return {"osds_up": sorted(o["osd"] for o in dump.get("osds", []) if o.get("up")),
            "osds": sorted(o["osd"] for o in dump.get("osds", [])),
            "pools": {p["pool_name"]: {"pg_num": p["pg_num"], "pg_num_target": p.get("pg_num_target", p["pg_num"]),
                                       "pgp_num": p.get("pgp_num"), "pgp_num_target": p.get("pgp_num_target", p.get("pgp_num")),
                                       "autoscale": p.get("pg_autoscale_mode")}
                      for p in dump.get("pools", [])},
            "pgs_expected": expected, "pgs_clean": by_state.get("active+clean", 0), "pgs_by_state": by_state,
            "mds": mds, "health": health.get("status", "?"), "checks": sorted(health.get("checks", {}))}


def _is_ready(s, osds):
    settled = all(p["pg_num"] == p["pg_num_target"] and p["pgp_num"] == p["pgp_num_target"] for p in s["pools"].values())
    return (len(s["osds_up"]) == osds and s["pgs_expected"] > 0 and s["pgs_clean"] == s["pgs_expected"]
            and settled and sum(s["pgs_by_state"].values()) == s["pgs_expected"]
            and "up:active" in s["mds"] and s["health"] == "HEALTH_OK")


def ready(conf, fs_name, osds, wait=10):
    """Poll until HEALTH_OK, ``osds`` OSDs up, every PG active+clean and an active MDS (or timeout)."""
    start = time.time()
    r = _connect(conf)
    try:
        while True:
            try:
                s = state(r, fs_name)
            except RuntimeError as e:  # mgr not yet available, fs not yet created
                s = {"error": str(e)}
            if "error" not in s and _is_ready(s, osds):
                return dict(s, ready=True, seconds=round(time.time() - start, 2))
            if time.time() - start > wait:
                return dict(s, ready=False, seconds=round(time.time() - start, 2))
            time.sleep(0.4)
    finally:
        r.shutdown()


def pools(conf, pools, autoscale):
    """Set the autoscaler mode of each of ``pools`` ({name: pg_num}); turning it off also sets
    pg_num and pgp_num to the given count (the mgr merges or splits PGs toward it)."""
    r = _connect(conf)
    try:
        for name, pgs in sorted(pools.items()):
            _mon(r, "osd pool set", pool=name, var="pg_autoscale_mode", val="on" if autoscale else "off")
            if not autoscale:
                for var in ("pg_num", "pgp_num"):
                    _mon(r, "osd pool set", pool=name, var=var, val=str(pgs))
        return {"set": sorted(pools)}
    finally:
        r.shutdown()


def health(conf, fs_name):
    """The cluster's view: health, checks, OSDs up and where each OSD lives (host)."""
    r = _connect(conf, timeout=10)
    try:
        s = state(r, fs_name)
        tree = _mon(r, "osd tree")
        hosts = {}
        for n in tree.get("nodes", []):
            if n.get("type") == "host":
                for child in n.get("children", []):
                    hosts[str(child)] = n["name"]
        s["osd_hosts"] = hosts
        return s
    finally:
        r.shutdown()


def class_version(conf, pool, nspace, cls, osds):
    """Call ``cls.version`` once through each OSD in ``osds`` (a probe object whose primary it is)."""
    r = _connect(conf)
    try:
        io = r.open_ioctx(pool)
        io.set_namespace(nspace)
        todo, out = set(osds), {}
        for i in range(10000):
            if not todo:
                break
            oid = "probe-%d" % i
            primary = _mon(r, "osd map", pool=pool, object=oid, nspace=nspace)["acting_primary"]
            if primary not in todo:
                continue
            io.write_full(oid, b"sae")
            ret, reply = io.execute(oid, cls, "version", b"", length=65536)
            out[str(primary)] = json.loads(reply.decode())
            todo.discard(primary)
        if todo:
            raise RuntimeError("no probe object maps to OSD(s) %s" % sorted(todo))
        io.close()
        return out
    finally:
        r.shutdown()


def _file_objects(fs, path, suffixes=None):
    """``{object name: size}`` of the RADOS objects behind the CephFS files under ``path`` (those
    whose names end in one of ``suffixes``, if given; hard links share one), and the data pool of
    the first file (None without files). Objects are named ``<inode hex>.<block>``."""
    objects, stack, pool = {}, [path.encode()], None
    while stack:
        d = stack.pop()
        h = fs.opendir(d)
        try:
            entry = fs.readdir(h)
            while entry is not None:
                name = entry.d_name
                if name not in (b".", b".."):
                    full = d.rstrip(b"/") + b"/" + name
                    if entry.is_dir():
                        stack.append(full)
                    elif not suffixes or name.decode(errors="replace").endswith(tuple(suffixes)):
                        st = fs.stat(full)
                        objects["%x.00000000" % st.st_ino] = st.st_size
                        pool = pool or fs.getxattr(full, "ceph.file.layout.pool").decode()
                entry = fs.readdir(h)
        finally:
            fs.closedir(h)
    return objects, pool


def _mounted(conf, fs_name, work):
    """``work(rados handle, mounted cephfs handle)``, both shut down after."""
    import cephfs
    r = _connect(conf)
    fs = cephfs.LibCephFS(conffile=conf)
    try:
        fs.mount(filesystem_name=fs_name.encode())
        return work(r, fs)
    finally:
        try:
            fs.shutdown()
        finally:
            r.shutdown()


def placement(conf, pool, fs_name, path, suffixes=None):
    """Where the RADOS objects behind the CephFS files under ``path`` (those whose names end in
    one of ``suffixes``, if given) live: per primary OSD, how many distinct objects (hard links
    share one) and their bytes, and the placement groups of ``pool`` each OSD is primary of."""
    def work(r, fs):
        objects, _ = _file_objects(fs, path, suffixes)
        out = {}
        for oid, size in sorted(objects.items()):
            osd = str(_mon(r, "osd map", pool=pool, object=oid)["acting_primary"])
            got = out.setdefault(osd, {"objects": 0, "bytes": 0, "pgs": 0})
            got["objects"] += 1
            got["bytes"] += size
        pool_id = next(p["pool_id"] for p in _mon(r, "osd pool ls", detail="detail") if p["pool_name"] == pool)
        for pg in _mon(r, "pg ls", pool=pool_id).get("pg_stats", []):
            out.setdefault(str(pg["acting_primary"]), {"objects": 0, "bytes": 0, "pgs": 0})["pgs"] += 1
        return out
    return _mounted(conf, fs_name, work)


def index(conf, fs_name, path, cls, request, header_key, suffixes=None, in_flight=8):
    """Run the class's ``index`` method (``request``: its input, hex) on every RADOS object behind
    the CephFS files under ``path``, ``in_flight`` at a time, and read each object's index header
    (omap ``header_key``) before and after: ``{"seconds", "headers": {object: [before, after]},
    "errors": {object: errno}}``. A write op returns no output, so the headers say what it did."""
    import threading

    import rados

    def headers(io, oids):
        out = {}
        for oid in oids:
            with rados.ReadOpCtx() as op:
                it, _ = io.get_omap_vals_by_keys(op, (header_key,))
                io.operate_read_op(op, oid)
                out[oid] = dict(it).get(header_key, b"").decode() or None
        return out

    def work(r, fs):
        objects, pool = _file_objects(fs, path, suffixes)
        if not objects:
            return {"seconds": 0.0, "headers": {}, "errors": {}}
        io = r.open_ioctx(pool)
        try:
            oids = sorted(objects)
            before = headers(io, oids)
            slots, errors, done, start = threading.Semaphore(in_flight), {}, threading.Semaphore(0), time.time()

            def finished(oid):
                def cb(completion):
                    ret = completion.get_return_value()
                    if ret < 0:
                        errors[oid] = -ret
                    slots.release()
                    done.release()
                return cb
            calls = []   # the completions and ops stay referenced until every call is in
            for oid in oids:
                slots.acquire()
                op = io.create_write_op()
                op.execute(cls, "index", bytes.fromhex(request))
                calls.append((op, io.operate_aio_write_op(op, oid, oncomplete=finished(oid))))
            for _ in oids:
                done.acquire()
            seconds = round(time.time() - start, 3)
            for op, _ in calls:
                io.release_write_op(op)
            after = headers(io, oids)
            return {"seconds": seconds, "headers": {o: [before[o], after[o]] for o in oids}, "errors": errors}
        finally:
            io.close()
    return _mounted(conf, fs_name, work)


def _radosgw_admin(conf, *args, json_out=True):
    """``radosgw-admin`` as client.admin; its JSON answer (None without ``json_out``), or None
    where the user is not there."""
    import subprocess
    r = subprocess.run(["radosgw-admin", "-c", conf, "--format", "json", *args], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        if "no user info saved" in r.stderr:
            return None
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        raise RuntimeError("radosgw-admin %s failed (%d): %s" % (" ".join(args[:2]), r.returncode,
                                                                 lines[-1] if lines else ""))
    return json.loads(r.stdout) if json_out else None


def s3_users(conf, users):
    """Make each of ``users`` ({uid: max_buckets}) exist with that bucket limit: create it (the
    gateway makes its keys) or set its limit. Returns {uid: {"access_key", "secret_key",
    "changed"}}; the keys leave only through this process's stdout."""
    out = {}
    for uid, max_buckets in users.items():
        info, changed = _radosgw_admin(conf, "user", "info", "--uid", uid), False
        if info is None:
            info, changed = _radosgw_admin(conf, "user", "create", "--uid", uid, "--display-name", uid,
                                           "--max-buckets=%d" % max_buckets), True
        elif info.get("max_buckets") != max_buckets:
            info, changed = _radosgw_admin(conf, "user", "modify", "--uid", uid,
                                           "--max-buckets=%d" % max_buckets), True
        key = next(k for k in info["keys"] if k["user"] == uid)
        out[uid] = {"access_key": key["access_key"], "secret_key": key["secret_key"], "changed": changed}
    return out


def s3_bucket(conf, endpoint, credentials, bucket, readers, owner, max_buckets):
    """Make ``bucket`` as ``owner``, the user whose credentials file is ``credentials``, unless it
    owns it, and let ``readers`` (uids) get, head and list it. {"created", "policy"}: what changed.
    An owner that may create no bucket (``max_buckets`` < 1) may create this one: its limit is
    lifted to the buckets it owns plus this one while it does, then set back."""
    import os
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = credentials
    import botocore.config
    import botocore.exceptions
    import botocore.session
    s3 = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
    try:
        s3.head_bucket(Bucket=bucket)
        created = False
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] not in ("404", "NoSuchBucket"):
            raise RuntimeError("bucket %s: %s (does another user own it?)" % (bucket, e.response["Error"]["Code"]))
        if max_buckets < 1:
            owned = _radosgw_admin(conf, "bucket", "list", "--uid", owner) or []
            _radosgw_admin(conf, "user", "modify", "--uid", owner, "--max-buckets=%d" % (len(owned) + 1))
            try:
                _create_bucket(s3, bucket)
            finally:
                _radosgw_admin(conf, "user", "modify", "--uid", owner, "--max-buckets=%d" % max_buckets)
        else:
            s3.create_bucket(Bucket=bucket)
        created = True
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/%s" % r for r in readers]},
        "Action": ["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"],
        "Resource": ["arn:aws:s3:::%s" % bucket, "arn:aws:s3:::%s/*" % bucket]}]} if readers else None
    try:
        current = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    except botocore.exceptions.ClientError:
        current = None
    changed = current != policy
    if changed and policy:
        s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    elif changed:
        s3.delete_bucket_policy(Bucket=bucket)
    return {"created": created, "policy": changed}


def _create_bucket(s3, bucket, wait=10):
    """Create ``bucket``, retrying while the gateway still holds the owner's old bucket limit
    (an admin's change reaches its user cache by a notification, not at once)."""
    import botocore.exceptions
    deadline = time.time() + wait
    while True:
        try:
            return s3.create_bucket(Bucket=bucket)
        except botocore.exceptions.ClientError as e:
            if e.response["Error"]["Code"] not in ("AccessDenied", "TooManyBuckets") or time.time() > deadline:
                raise
            time.sleep(0.2)


NAMED = 20
"""How many of the files or objects a removal took it names (it counts them all)."""


def remove_tree(conf, fs_name, path):
    """Remove CephFS ``path`` and everything under it, as client.admin. {"existed", "files",
    "named"}: whether it was there, how many files (not directories) went and the paths of the
    first :data:`NAMED` of them."""
    import cephfs
    r = _connect(conf)   # a stopped cluster fails here, in seconds
    fs = cephfs.LibCephFS(rados_inst=r)
    try:
        fs.mount(filesystem_name=fs_name.encode())
        top = path.encode()
        try:
            fs.stat(top)
        except cephfs.ObjectNotFound:
            return {"existed": False, "files": 0, "named": []}
        files, named, order, stack = 0, [], [], [top]
        while stack:   # each directory before those under it; removed in the reverse order
            d = stack.pop()
            order.append(d)
            h = fs.opendir(d)
            try:
                entry = fs.readdir(h)
                while entry is not None:
                    if entry.d_name not in (b".", b".."):
                        full = d.rstrip(b"/") + b"/" + entry.d_name
                        if entry.is_dir():
                            stack.append(full)
                        else:
                            fs.unlink(full)
                            files += 1
                            if len(named) < NAMED:
                                named.append(full.decode(errors="replace"))
                    entry = fs.readdir(h)
            finally:
                fs.closedir(h)
        for d in reversed(order):
            fs.rmdir(d)
        return {"existed": True, "files": files, "named": named}
    finally:
        try:
            fs.shutdown()
        finally:
            r.shutdown()


def remove_bucket(conf, bucket):
    """Remove S3 ``bucket`` with its objects and its incomplete multipart uploads
    (``radosgw-admin bucket rm --purge-objects``, as client.admin: no gateway needed).
    {"existed", "objects", "named"}: whether it was there, how many objects it held and the keys
    of the first :data:`NAMED` of them."""
    _connect(conf).shutdown()   # a stopped cluster fails here, in seconds (radosgw-admin would wait)
    try:
        stats = _radosgw_admin(conf, "bucket", "stats", "--bucket", bucket)
    except RuntimeError as e:
        if "No such file or directory" in str(e):
            return {"existed": False, "objects": 0}
        raise
    objects = sum(u.get("num_objects", 0) for u in (stats.get("usage") or {}).values())
    listed = _radosgw_admin(conf, "bucket", "list", "--bucket", bucket, "--max-entries", str(NAMED))
    _radosgw_admin(conf, "bucket", "rm", "--bucket", bucket, "--purge-objects", json_out=False)
    return {"existed": True, "objects": objects, "named": [o["name"] for o in listed or []][:NAMED]}


if __name__ == "__main__":
    fn, kwargs = sys.argv[1], json.loads(sys.stdin.read())
    print(json.dumps(globals()[fn](**kwargs)))
