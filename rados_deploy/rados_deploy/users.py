"""The cluster's cephx client users: each role gets only the caps it needs, instead of ``client.admin``."""
from __future__ import annotations

import dataclasses

from .config import ADMIN_CAPS


@dataclasses.dataclass(frozen=True)
class CephUser:
    """A cephx client user: ``id`` (its entity is ``client.<id>``; librados ``rados_create(id)``,
    ``ceph-fuse --id``) and its caps per service (``{"osd": "allow r pool=cephfs_data"}``)."""

    id: str
    caps: dict[str, str]

    @property
    def entity(self) -> str:
        return f"client.{self.id}"


@dataclasses.dataclass(frozen=True)
class ClientUsers:
    """Who may do what on a cluster whose CephFS data pool is ``data_pool``:

    - ``scan``: reads CephFS metadata (list, stat, layouts), calls the object class on the data
      pool and reads its objects, so the files' data too (the offloading connector; its mode
      ``auto`` may read an object whole instead of calling the class), nothing else: no writes,
      no other pool, no other class;
    - ``fs_read``: reads CephFS, read-only (a ceph-fuse mount for vanilla readers);
    - ``fs_write``: writes CephFS files and layouts into the data pool and evicts a dead writer's
      MDS session (an MDS ``tell``, which needs ``mds 'allow *'``): data deployment;
    - ``write``: the connector's write path: reads and writes CephFS files and the data pool's
      objects, creates files with a layout of their own (MDS ``p``: a layout other than the
      directory's is refused without it, ``EACCES``) and calls the object class as ``scan`` does
      (a write's schema is checked against the directory's files); no MDS ``tell`` (no eviction),
      no other pool or class;
    - ``admin``: ``client.admin``, everything (bootstrap, probes, daemons' management).
    """

    admin: CephUser
    scan: CephUser
    fs_read: CephUser
    fs_write: CephUser
    write: CephUser

    @classmethod
    def of(cls, data_pool: str, class_name: str) -> "ClientUsers":
        return cls(
            admin=CephUser("admin", dict(ADMIN_CAPS)),
            scan=CephUser("sae-scan", {"mds": "allow r", "mon": "allow r",
                                       "osd": f"allow r pool={data_pool}, allow pool={data_pool} class {class_name}"}),
            fs_read=CephUser("fs-read", {"mds": "allow r", "mon": "allow r", "osd": f"allow r pool={data_pool}"}),
            fs_write=CephUser("fs-write", {"mds": "allow *", "mon": "allow r", "osd": f"allow rw pool={data_pool}"}),
            write=CephUser("sae-write", {"mds": "allow rwp", "mon": "allow r",
                                         "osd": f"allow rw pool={data_pool}, allow pool={data_pool} class {class_name}"}))

    @property
    def made(self) -> list[CephUser]:
        """The users rados_deploy creates after bootstrap (admin is made with the cluster)."""
        return [self.scan, self.fs_read, self.fs_write, self.write]
