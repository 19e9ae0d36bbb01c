"""The ``cephfs`` backend: file operations through libcephfs (no mount), object-level checks
through librados (Debian's bindings; stdlib only otherwise)."""
import errno
import glob
import importlib.util
import json
import os
import sys

from data_deploy.backends.base import CHUNK, DeployError, sae_emit, space_hint  # shipped ahead (dispatch)

DONE_XATTR = "user.data_deploy.sha256"


def _bindings():
    """Debian's rados and cephfs modules, loaded from dist-packages if this python lacks them."""
    try:
        import cephfs
        import rados
        return cephfs, rados
    except ImportError:
        pass
    tag = "cpython-%d%d" % sys.version_info[:2]
    for name in ("rados", "cephfs"):
        found = glob.glob("/usr/lib/python3/dist-packages/%s.%s-*.so" % (name, tag))
        if not found:
            raise DeployError("Ceph python bindings for %s not found (%s); install python3-rados and "
                              "python3-cephfs for this python" % (name, tag))
        spec = importlib.util.spec_from_file_location(name, found[0])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules["cephfs"], sys.modules["rados"]


class CephFSBackend:
    """File operations through libcephfs; object-level checks through librados."""

    name = "cephfs"
    objects = True
    """Each file is one RADOS object (:meth:`object_name`), checked by verify."""

    def __init__(self, ceph_conf, ceph_user=None):
        cephfs, rados = _bindings()
        self.cephfs, self.rados_mod, self.conf, self.user = cephfs, rados, ceph_conf, ceph_user
        self.errors = (OSError, cephfs.Error, rados.Error)
        self.missing = cephfs.ObjectNotFound
        try:
            self.fs = cephfs.LibCephFS(conffile=ceph_conf, auth_id=ceph_user)
            if self.fs.conf_get("client_mount_timeout") in ("300", "300.000000"):  # default: bound it
                self.fs.conf_set("client_mount_timeout", "30")
            self.fs.mount()
        except cephfs.Error as e:
            full = self._full_checks(rados)
            if full:
                raise DeployError("cannot mount CephFS with %s: the cluster is full (%s)%s" % (
                    ceph_conf, ", ".join(full), space_hint(OSError(errno.ENOSPC, "full"))))
            raise DeployError("cannot mount CephFS with %s: %s; is the Ceph cluster (mon, mds) running "
                              "and the conf path right?" % (ceph_conf, e))
        self._rados = None

    def _full_checks(self, rados):
        """The monitor's health checks that say the cluster is full (empty if none or unknown)."""
        try:
            r = rados.Rados(conffile=self.conf, rados_id=self.user, conf={"rados_mon_op_timeout": "10"})
            r.connect(timeout=10)
            try:
                _, out, _ = r.mon_command(json.dumps({"prefix": "health", "format": "json"}), b"")
            finally:
                r.shutdown()
            return sorted(c for c in json.loads(out).get("checks", {}) if c.endswith("_FULL"))
        except (rados.Error, ValueError):
            return []

    def client_id(self):
        return self.fs.get_instance_id()

    def evict(self, client):
        """Evict a dead writer's MDS session so its capabilities stop blocking us (otherwise the
        MDS waits for the session to time out, about a minute)."""
        cmd = json.dumps({"prefix": "client evict", "filters": ["id=%d" % int(client)]})
        ret, _, err = self.fs.mds_command("0", cmd, b"")
        if ret == 0:
            sae_emit("evicted the MDS session of the interrupted writer (client.%s)" % client)

    def close(self):
        try:
            self.fs.unmount()
            self.fs.shutdown()
        finally:
            if self._rados is not None:
                self._rados.shutdown()

    @property
    def rados(self):
        if self._rados is None:
            r = self.rados_mod.Rados(conffile=self.conf, rados_id=self.user, conf={"rados_osd_op_timeout": "60",
                                                               "rados_mon_op_timeout": "30"})
            r.connect(timeout=30)
            self._rados = r
        return self._rados

    def stat(self, path):
        try:
            st = self.fs.stat(path)
        except self.cephfs.ObjectNotFound:
            return None
        return {"ino": st.st_ino, "size": st.st_size, "nlink": st.st_nlink}

    def mkdirs(self, path):
        self.fs.mkdirs(path, 0o755)

    def set_layout(self, path, object_size):
        want = "stripe_unit=%d stripe_count=1 object_size=%d" % (object_size, object_size)
        try:
            have = self.fs.getxattr(path, "ceph.dir.layout").decode()
        except self.cephfs.Error:
            have = ""
        if want not in have:
            self.fs.setxattr(path, "ceph.dir.layout", want.encode(), 0)
        return want

    def complete(self, path, entry, object_size):
        st = self.stat(path)
        if st is None or st["size"] != entry["size"]:
            return False
        try:
            return (self.fs.getxattr(path, DONE_XATTR).decode() == entry["sha256"] and
                    int(self.fs.getxattr(path, "ceph.file.layout.object_size")) == object_size)
        except self.cephfs.Error:
            return False

    def write_file(self, path, src, entry):
        """Create ``path`` (new inode, final name) from local ``src``; mark it complete last."""
        if self.stat(path) is not None:
            self.fs.unlink(path)
        fd = self.fs.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            with open(src, "rb") as f:
                offset = 0
                for chunk in iter(lambda: f.read(CHUNK), b""):
                    self.fs.write(fd, chunk, offset)
                    offset += len(chunk)
            self.fs.fsync(fd, 0)
        finally:
            self.fs.close(fd)
        self.fs.setxattr(path, DONE_XATTR, entry["sha256"].encode(), 0)

    def link(self, src, dst):
        self.fs.link(src, dst)

    def rename(self, src, dst):
        self.fs.rename(src, dst)

    def unlink(self, path):
        self.fs.unlink(path)

    def listdir(self, path):
        names = []
        d = self.fs.opendir(path)
        try:
            while True:
                ent = self.fs.readdir(d)
                if ent is None:
                    break
                name = ent.d_name.decode()
                if name not in (".", ".."):
                    names.append(name)
        finally:
            self.fs.closedir(d)
        return names

    def rmdir(self, path):
        self.fs.rmdir(path)

    def read_text(self, path):
        st = self.stat(path)
        if st is None:
            return None
        fd = self.fs.open(path, os.O_RDONLY, 0)
        try:
            return self.fs.read(fd, 0, st["size"]).decode("utf-8", "replace")
        finally:
            self.fs.close(fd)

    def write_text(self, path, text):
        data = text.encode()
        fd = self.fs.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
        try:
            self.fs.write(fd, data, 0)
            self.fs.fsync(fd, 0)
        finally:
            self.fs.close(fd)

    def object_info(self, path, st):
        """Pool, layout object size and the RADOS object(s) behind a file."""
        pool = self.fs.getxattr(path, "ceph.file.layout.pool").decode()
        osize = int(self.fs.getxattr(path, "ceph.file.layout.object_size").decode())
        oid = self.object_name(st["ino"])
        io = self.rados.open_ioctx(pool)
        try:
            try:
                size = io.stat(oid)[0]
            except self.rados_mod.ObjectNotFound:
                size = None
            try:
                io.stat("%x.00000001" % st["ino"])
                second = True
            except self.rados_mod.ObjectNotFound:
                second = False
        finally:
            io.close()
        return {"pool": pool, "object_size": osize, "object": oid, "object_bytes": size, "second": second}

    def lock(self, dest):
        """Nothing to serialize: a deploy claims its destination through its pid record."""

    @staticmethod
    def object_name(ino):
        """The RADOS object holding a file's (only) object: ``<inode hex>.00000000``."""
        return "%x.00000000" % ino

    def osd_ops(self):
        """Sum of the client-op counters (``osd.op``) over all OSDs, from their perf counters; None
        when this user may not read them (an OSD ``tell`` needs ``osd 'allow *'``)."""
        ret, out, err = self.rados.mon_command(json.dumps({"prefix": "osd ls", "format": "json"}), b"")
        if ret:
            raise DeployError("ceph osd ls failed: %s" % err)
        total = 0
        for osd in json.loads(out):
            ret, out2, err = self.rados.osd_command(osd, json.dumps({"prefix": "perf dump"}), b"", timeout=30)
            if ret in (-errno.EACCES, -errno.EPERM):
                return None
            if ret:
                raise DeployError("perf dump of osd.%s failed: %s" % (osd, err))
            total += json.loads(out2)["osd"]["op"]
        return total
