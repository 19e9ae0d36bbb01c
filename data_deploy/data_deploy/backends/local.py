"""The ``local`` backend: a node-local directory (disk or tmpfs); stdlib only."""
import os

from data_deploy.backends.base import CHUNK  # shipped ahead (dispatch)


class LocalBackend:
    """The same operations on a node-local directory (disk or tmpfs)."""

    name = "local"
    objects = False
    """Files are not RADOS objects: no object name, layout check or OSD op count."""
    errors = (OSError,)
    missing = FileNotFoundError

    def __init__(self, ceph_conf=None, ceph_user=None):
        self._lock = None

    def close(self):
        if self._lock is not None:
            self._lock.close()

    def client_id(self):
        return None

    def evict(self, client):
        return None

    def lock(self, dest):
        """Serialize deploys to one directory (local-cluster nodes share a disk)."""
        import fcntl
        parent, base = os.path.split(dest.rstrip("/"))
        self.mkdirs(parent)
        self._lock = open(os.path.join(parent, ".%s.lock" % base), "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def osd_ops(self):
        return None

    def stat(self, path):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return {"ino": st.st_ino, "size": st.st_size, "nlink": st.st_nlink}

    def mkdirs(self, path):
        os.makedirs(path, exist_ok=True)

    def set_layout(self, path, object_size):
        return None

    def complete(self, path, entry, object_size):
        st = self.stat(path)
        return st is not None and st["size"] == entry["size"]

    def write_file(self, path, src, entry):
        tmp = os.path.join(os.path.dirname(path), ".%s.part" % os.path.basename(path))
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            for chunk in iter(lambda: fin.read(CHUNK), b""):
                fout.write(chunk)
            fout.flush()
            os.fsync(fout.fileno())
        os.replace(tmp, path)

    def link(self, src, dst):
        os.link(src, dst)

    def rename(self, src, dst):
        os.rename(src, dst)

    def unlink(self, path):
        os.unlink(path)

    def listdir(self, path):
        return os.listdir(path)

    def rmdir(self, path):
        os.rmdir(path)

    def read_text(self, path):
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write_text(self, path, text):
        with open(path, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
