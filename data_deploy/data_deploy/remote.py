"""Runs on the deploy node: writes a staged dataset through a backend (:mod:`data_deploy.backends`:
CephFS through libcephfs, no mount, or a node-local directory), makes copies and hard links there,
writes the manifest last, verifies and cleans. Stdlib only, plus Debian's ``cephfs``/``rados``
bindings for the ``cephfs`` backend.

Every function returns a JSON-serialisable dict; ``sae_emit`` (rebound on nodes by the dispatcher) streams progress lines.
Completion rules (so nothing half-written looks complete, and a rerun resumes):
* a data file is complete when its size matches and, in CephFS, its ``user.data_deploy.sha256``
  xattr (set after the data is fsync'ed) equals the source's sha256; locally, when it exists under
  its final name (written to a hidden temp name and renamed);
* the dataset is complete when ``_manifest.json`` parses and says ``"complete": true``; it is
  written last, under its final name, and is removed first by ``clean``;
* a deploy writes into the hidden sibling ``.<dest name>.partial`` and renames it to ``dest``
  once the manifest is written, so readers never see part of a dataset (a rerun resumes there).
"""
import json
import os
import shutil
import time

from data_deploy.backends import DeployError, open_backend  # shipped ahead (dispatch)
from data_deploy.backends.base import sae_emit, space_hint  # shipped ahead (dispatch)

FORMAT_VERSION = 1
MANIFEST = "_manifest.json"
OBJECT_SUFFIXES = ("parquet", "arrow", "csv")
"""formats.SUFFIXES without their dots (this module runs on nodes with the standard library only)."""


def final_name(name, copy, link):
    """File name of copy ``copy``, link ``link`` of source file ``name``."""
    stem, dot, suffix = name.rpartition(".")
    stem, suffix = (stem, suffix) if dot and suffix in OBJECT_SUFFIXES else (name, "parquet")
    return "%s-c%d-l%d.%s" % (stem, copy, link, suffix)


def _claim(fs, pidfile, hold):
    """Lock the node's writer record: fail if a live deploy holds it; evict the session of a dead
    one it names. With ``hold``, keep the lock and record this process; else release it."""
    import fcntl
    os.makedirs(os.path.dirname(pidfile), exist_ok=True)
    f = open(pidfile, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        held = f.read().strip()
        f.close()
        raise DeployError("another data-deploy is writing from this node (%s); wait for it to finish" % held)
    f.seek(0)
    try:
        stale = json.loads(f.read() or "{}")
    except ValueError:
        stale = {}
    if stale.get("client"):
        fs.evict(stale["client"])
    f.seek(0)
    f.truncate()
    if hold:
        f.write(json.dumps({"pid": os.getpid(), "client": fs.client_id()}))
        f.flush()
        return f
    f.close()
    return None


def work_dir(dest):
    """Hidden sibling of ``dest`` where a deploy writes until it is complete (then renamed), so
    readers never see part of a dataset."""
    parent, base = os.path.split(dest.rstrip("/"))
    return os.path.join(parent, ".%s.partial" % base)


def _manifest(fs, dest):
    """The complete manifest of ``dest`` or None (absent, partial or unfinished)."""
    text = fs.read_text(os.path.join(dest, MANIFEST))
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("complete") is True else None


def status(backend, dest, ceph_conf=None, ceph_user=None, pidfile=None):
    """{"manifest": the complete manifest or None, "exists": whether ``dest`` exists}. With
    ``pidfile``, first evicts the session of an interrupted writer recorded there."""
    fs = open_backend(backend, ceph_conf, ceph_user)
    try:
        if pidfile:
            _claim(fs, pidfile, hold=False)
        return {"manifest": _manifest(fs, dest), "exists": fs.stat(dest) is not None}
    finally:
        fs.close()


def _same(manifest, meta):
    keys = ("dataset", "object_size", "link_multiplier", "copy_multiplier", "plugin")
    return all(manifest.get(k) == meta.get(k) for k in keys)


def deploy(backend, dest, staging, files, meta, ceph_conf=None, ceph_user=None, drop_staging=True, pidfile=None):
    """Write ``files`` (entries with name, size, rows, sha256) from ``staging`` into ``dest`` with
    ``meta["copy_multiplier"]`` copies and ``meta["link_multiplier"]`` names per copy; manifest last.

    Resumes a deploy that stopped midway (complete files are kept). Returns counts, seconds, the
    RADOS ops measured from OSD perf counters (cephfs) and the manifest.
    """
    fs = open_backend(backend, ceph_conf, ceph_user)
    record = None
    try:
        if pidfile:
            record = _claim(fs, pidfile, hold=True)
        fs.lock(dest)
        current = _manifest(fs, dest)
        if current is not None:
            if _same(current, meta):
                return {"changed": False, "manifest": current}
            raise DeployError("%s already holds dataset %s (object size %sKiB, links %s, copies %s); "
                              "run 'data-deploy clean' first or choose another destination"
                              % (dest, current.get("dataset", "?")[:12], current.get("object_size", 0) >> 10,
                                 current.get("link_multiplier"), current.get("copy_multiplier")))
        work = work_dir(dest)
        if fs.stat(dest) is not None:   # incomplete (an interrupted older deploy): resume it hidden
            if fs.stat(work) is not None:
                raise DeployError("%s holds no complete dataset and %s exists; run 'data-deploy clean' first"
                                  % (dest, work))
            fs.rename(dest, work)
        ops0 = fs.osd_ops()
        start = time.time()
        fs.mkdirs(work)
        layout = fs.set_layout(work, meta["object_size"])
        counts = {"written": 0, "linked": 0, "kept": 0, "bytes_written": 0, "link_seconds": 0.0}
        entries = []
        try:
            for i, entry in enumerate(files):
                entries.append(_deploy_file(fs, work, staging, entry, meta, counts))
                if (i + 1) % 10 == 0 or i + 1 == len(files):
                    sae_emit("%d/%d source files done (%d written, %d linked, %d kept)"
                          % (i + 1, len(files), counts["written"], counts["linked"], counts["kept"]))
        except fs.errors as e:
            raise DeployError("writing %s failed: %s%s (nothing is visible at %s; rerun to resume)"
                              % (work, e, space_hint(e), dest))
        planned = {p for e in entries for c in e["copies"] for p in c["paths"]}
        for name in fs.listdir(work):
            if name not in planned and (not name.startswith(".") or name.endswith(".part")):
                fs.unlink(os.path.join(work, name))  # left by an interrupted deploy (other parameters)
        seconds = time.time() - start
        manifest = dict(meta, version=FORMAT_VERSION, dest=dest, layout=layout, files=entries,
                        file_count=len(entries) * meta["copy_multiplier"] * meta["link_multiplier"],
                        rows=sum(e["rows"] for e in entries) * meta["copy_multiplier"] * meta["link_multiplier"],
                        logical_bytes=sum(e["size"] for e in entries) * meta["copy_multiplier"] * meta["link_multiplier"],
                        physical_bytes=sum(e["size"] for e in entries) * meta["copy_multiplier"],
                        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), complete=True)
        fs.write_text(os.path.join(work, MANIFEST), json.dumps(manifest, indent=1))
        fs.rename(work, dest)
        ops = fs.osd_ops() - ops0 if ops0 is not None else None
        if drop_staging:
            shutil.rmtree(staging, ignore_errors=True)
        counts["link_seconds"] = round(counts["link_seconds"], 3)
        return dict(counts, changed=True, manifest=manifest, seconds=round(seconds, 3), rados_ops=ops)
    finally:
        fs.close()
        if record is not None:
            record.truncate(0)
            record.close()


def _deploy_file(fs, dest, staging, entry, meta, counts):
    copies = []
    for c in range(meta["copy_multiplier"]):
        base = os.path.join(dest, final_name(entry["name"], c, 0))
        if fs.complete(base, entry, meta["object_size"]):
            counts["kept"] += 1
        else:
            fs.write_file(base, os.path.join(staging, entry["name"]), entry)
            counts["written"] += 1
            counts["bytes_written"] += entry["size"]
        st = fs.stat(base)
        paths = [final_name(entry["name"], c, 0)]
        for link in range(1, meta["link_multiplier"]):
            name = final_name(entry["name"], c, link)
            other = fs.stat(os.path.join(dest, name))
            if other is not None and other["ino"] == st["ino"]:
                counts["kept"] += 1
            else:
                if other is not None:
                    fs.unlink(os.path.join(dest, name))
                t0 = time.time()
                fs.link(base, os.path.join(dest, name))
                counts["link_seconds"] += time.time() - t0
                counts["linked"] += 1
            paths.append(name)
        copy = {"copy": c, "inode": st["ino"], "paths": paths}
        if fs.objects:
            copy["object"] = fs.object_name(st["ino"])
        copies.append(copy)
    return dict(entry, copies=copies)


def verify(backend, dest, ceph_conf=None, ceph_user=None):
    """Check ``dest`` against its manifest: every name present with the right size and inode
    sharing, link counts, completeness marks, no stray files; in CephFS every file is exactly one
    RADOS object ``<ino hex>.00000000`` of the file's size. Returns {"ok", "problems", ...}."""
    fs = open_backend(backend, ceph_conf, ceph_user)
    try:
        manifest = _manifest(fs, dest)
        if manifest is None:
            what = "has no complete manifest (deploy incomplete or never run)" if fs.stat(dest) else "does not exist"
            return {"ok": False, "problems": ["%s %s" % (dest, what)], "files": 0, "objects": 0}
        problems, names, objects = [], set(), 0
        links = manifest["link_multiplier"]
        for entry in manifest["files"]:
            inodes = set()
            for copy in entry["copies"]:
                first = fs.stat(os.path.join(dest, copy["paths"][0]))
                for name in copy["paths"]:
                    names.add(name)
                    st = fs.stat(os.path.join(dest, name))
                    if st is None:
                        problems.append("%s missing" % name)
                    elif st["ino"] != first["ino"] or st["size"] != entry["size"]:
                        problems.append("%s: inode %x size %d, expected inode %x size %d"
                                        % (name, st["ino"], st["size"], first["ino"], entry["size"]))
                if first is None:
                    continue
                inodes.add(first["ino"])
                path = os.path.join(dest, copy["paths"][0])
                if first["nlink"] != links:
                    problems.append("%s: %d links, manifest says %d" % (copy["paths"][0], first["nlink"], links))
                if not fs.complete(path, entry, manifest["object_size"]):
                    problems.append("%s: not marked complete (size or checksum mark differs)" % copy["paths"][0])
                if fs.objects:
                    objects += 1
                    problems.extend(_check_object(fs, path, first, manifest["object_size"]))
            if len(inodes) != len(entry["copies"]):
                problems.append("%s: copies share inodes (expected %d distinct)" % (entry["name"], len(entry["copies"])))
        stray = [n for n in fs.listdir(dest) if n not in names and n != MANIFEST and not n.startswith(".")]
        problems.extend("unexpected file %s" % n for n in sorted(stray))
        return {"ok": not problems, "problems": problems[:50], "problem_count": len(problems),
                "files": len(names), "objects": objects, "rows": manifest["rows"],
                "dataset": manifest["dataset"]}
    finally:
        fs.close()


def _check_object(fs, path, st, object_size):
    info = fs.object_info(path, st)
    name = os.path.basename(path)
    out = []
    if info["object_size"] != object_size:
        out.append("%s: layout object size %d, manifest says %d" % (name, info["object_size"], object_size))
    if info["object_bytes"] != st["size"]:
        out.append("%s: object %s in pool %s has %s bytes, file has %d"
                   % (name, info["object"], info["pool"], info["object_bytes"], st["size"]))
    if info["second"]:
        out.append("%s: a second object %x.00000001 exists (file spans objects)" % (name, st["ino"]))
    return out


def clean(backend, dest, ceph_conf=None, ceph_user=None, staging=None):
    """Remove the dataset at ``dest`` (the manifest first, then every file, then the directory)
    and the node's ``staging`` directory. Returns {"removed": files, "existed": bool}."""
    if staging:
        shutil.rmtree(staging, ignore_errors=True)
    fs = open_backend(backend, ceph_conf, ceph_user)
    try:
        existed = fs.stat(dest) is not None
        removed = _remove_dir(fs, dest, _recorded_names(fs, dest)) + _remove_dir(fs, work_dir(dest), None)
        return {"removed": removed, "existed": existed}
    finally:
        fs.close()


def _recorded_names(fs, dest):
    """The file names a deploy recorded in ``dest``'s manifest; DeployError when ``dest`` exists
    without one (not a dataset data-deploy made: nothing there is removed)."""
    try:
        if fs.stat(dest) is None or not fs.listdir(dest):
            return set()
        manifest = json.loads(fs.read_text(os.path.join(dest, MANIFEST)) or "null")
    except (fs.missing, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise DeployError("%s holds no data-deploy manifest: it is not a dataset data-deploy made, so "
                          "nothing was removed; remove it yourself if it should go" % dest)
    return {p for e in manifest["files"] for c in e.get("copies", []) for p in c.get("paths", [])}


def _remove_dir(fs, path, names):
    """Remove the manifest, then ``names`` (None: every file, for data-deploy's own hidden work
    directory), then the directory if that left it empty; returns the files removed."""
    removed = 0
    try:
        if fs.stat(path) is None:
            return 0
        present = fs.listdir(path)
        if MANIFEST in present:
            fs.unlink(os.path.join(path, MANIFEST))
        for name in present:
            if name != MANIFEST and (names is None or name in names):
                fs.unlink(os.path.join(path, name))
                removed += 1
        if not fs.listdir(path):
            fs.rmdir(path)
    except fs.missing:  # another node sharing this disk removed it concurrently
        pass
    return removed
