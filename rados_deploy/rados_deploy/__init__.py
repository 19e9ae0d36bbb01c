"""Ceph bootstrapped by hand (mon/mgr/osd/mds, memstore/bluestore, CephFS, a RADOS Gateway) and the
``sae`` object class.

>>> from rados_deploy import CephCluster, CephOptions
>>> ceph = CephCluster(reservation, layout, CephOptions(store="memstore", osd_size="2GiB"))
>>> ceph.install(); ceph.start(); ceph.install_class()
"""
from .cluster import CephCluster
from .counters import CounterSnapshot, OsdCounters
from .ops import OpCounts
from .options import CephOptions
from .rgw import S3Credentials, S3User, S3Users
from .status import CephStatus, DaemonStatus
from .users import CephUser, ClientUsers

__all__ = ["CephCluster", "CephOptions", "CephStatus", "CephUser", "ClientUsers", "DaemonStatus", "CounterSnapshot",
           "OsdCounters", "OpCounts", "S3Credentials", "S3User", "S3Users"]
