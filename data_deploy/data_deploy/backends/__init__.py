"""Node-side deploy backends, one module each, registered here by name (stdlib only; shipped
ahead of :mod:`data_deploy.remote` by metareserve's dispatch). A plugin names the backend it
writes through (:attr:`data_deploy.plugins.Plugin.backend`), checked against :data:`BACKENDS`
when the plugin loads."""
from data_deploy.backends.base import DeployError  # shipped ahead (dispatch)
from data_deploy.backends.cephfs import CephFSBackend  # shipped ahead (dispatch)
from data_deploy.backends.local import LocalBackend  # shipped ahead (dispatch)

BACKENDS = {b.name: b for b in (CephFSBackend, LocalBackend)}
"""Backend name → class (``cls(ceph_conf, ceph_user)`` opens it, ``close()`` releases it)."""


def open_backend(name, ceph_conf, ceph_user=None):
    """The backend registered as ``name``, opened; DeployError naming the known ones otherwise."""
    if name not in BACKENDS:
        raise DeployError("unknown backend %r (known: %s)" % (name, ", ".join(sorted(BACKENDS))))
    return BACKENDS[name](ceph_conf, ceph_user)
