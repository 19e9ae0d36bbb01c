"""What kind of Ceph cluster to build: :class:`CephOptions`, validated once."""
from __future__ import annotations

import dataclasses
import re

from metareserve import UsageError, parse_size, validate
from metareserve.layout import METRICS_PORTS

SERVER_PACKAGES = ["ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-common", "ceph-base",
                   "python3-rados", "python3-cephfs", "uuid-runtime"]
CLIENT_PACKAGES = ["ceph-common", "ceph-fuse", "python3-rados", "python3-cephfs"]
CLASS_BUILD_PACKAGES = ["rados-objclass-dev", "libradospp-dev", "librados-dev", "build-essential"]
LIBRARY_BUILD_PACKAGES = ["build-essential"]
RGW_PACKAGES = ["radosgw", "python3-botocore"]

@dataclasses.dataclass
class CephOptions:
    """Options of a Ceph cluster.

    ``store``: "bluestore" (persistent; a sparse file of ``osd_size`` in the OSD dir, or
    ``bluestore_device``) or "memstore" (RAM of ``osd_size`` bytes per OSD). ``max_object_size``
    and ``max_write_size_mb`` lift the OSD limits for 128 MiB+ objects; ``op_timeout`` is the
    clients' ``rados_osd_op_timeout`` in seconds. ``packages``/``client_packages`` are Debian
    package names (``class_build_packages`` build the class on OSD nodes, ``library_build_packages``
    its scan as a client library). ``pgs_per_osd`` drives the computed PG counts of the CephFS pools;
    ``pg_autoscale`` turns Ceph's PG autoscaler on for them (off by default: the thesis found it
    slowed repeated runs), put in force by ``start`` on a running cluster too, and turning it off
    again puts the computed PG counts back. ``class_arrow``: the pyarrow release whose Arrow C++
    the ``sae`` object class is built against and loads (21.0.0 or later: the class needs Arrow's
    separate compute library); ``install_class`` on a running cluster switches it, restarting the
    OSDs that had loaded another.
    ``rgw``: run a RADOS Gateway (S3) on the first mon node when the layout names no
    ``ceph-rgw`` node (a layout that names some runs one on each of them either way); it serves
    on the node's cluster address at ``rgw_port`` (HTTP) and ``rgw_tls_port`` (HTTPS, with a
    self-signed certificate made on the node: an AWS SDK v2 client signs its uploads' payload over
    HTTP, which Ceph 16's gateway refuses for an empty object), and its nodes get ``rgw_packages``.
    ``mgr_prometheus_port`` is where the mgr's prometheus module serves (when
    ``mgr_prometheus``). ``daemon_ports`` is the range OSDs, mgrs and MDSs bind in (Ceph's default reaches 7300 and
    would take Spark's 7077/7078).
    """

    store: str = "bluestore"
    osd_size: int | str = "4GiB"
    bluestore_device: str | None = None
    osds_per_node: int = 1
    cephx: bool = True
    max_object_size: int | str = "1GiB"
    max_write_size_mb: int = 512
    op_timeout: int = 30
    packages: list[str] = dataclasses.field(default_factory=lambda: list(SERVER_PACKAGES))
    client_packages: list[str] = dataclasses.field(default_factory=lambda: list(CLIENT_PACKAGES))
    class_build_packages: list[str] = dataclasses.field(default_factory=lambda: list(CLASS_BUILD_PACKAGES))
    library_build_packages: list[str] = dataclasses.field(default_factory=lambda: list(LIBRARY_BUILD_PACKAGES))
    mgr_prometheus: bool = True
    mgr_prometheus_port: int = METRICS_PORTS["ceph-mgr"]
    rgw: bool = False
    rgw_port: int = 7480
    rgw_tls_port: int = 7443
    rgw_packages: list[str] = dataclasses.field(default_factory=lambda: list(RGW_PACKAGES))
    fs_name: str = "cephfs"
    replicas: int = 1
    pgs_per_osd: int = 16
    pg_autoscale: bool = False
    class_arrow: str = "26.0.1"
    mon_port: int = 3300
    mon_v1_port: int | None = 6789
    daemon_ports: tuple[int, int] = (6800, 7000)
    ready_timeout: float = 600.0

    def __post_init__(self):
        if self.store not in ("bluestore", "memstore"):
            raise UsageError(f"CephOptions.store must be 'bluestore' or 'memstore', not {self.store!r}")
        self.osd_size = parse_size(self.osd_size, what="CephOptions.osd_size")
        self.max_object_size = parse_size(self.max_object_size, what="CephOptions.max_object_size")
        for name in ("osds_per_node", "max_write_size_mb", "op_timeout", "replicas", "pgs_per_osd", "mon_port",
                     "mgr_prometheus_port"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"CephOptions.{name} must be a positive integer, not {value!r}")
        for name, most in (("osds_per_node", 64), ("op_timeout", 86400), ("replicas", 16), ("pgs_per_osd", 1024),
                           ("mon_port", 65535), ("mgr_prometheus_port", 65535), ("max_write_size_mb", 1 << 20)):
            if getattr(self, name) > most:
                raise UsageError(f"CephOptions.{name} must be at most {most}, not {getattr(self, name)!r}")
        arrow = validate.release_numbers(self.class_arrow)
        if arrow is None or len(arrow) != 3 or arrow < (21,):
            raise UsageError(f"CephOptions.class_arrow {self.class_arrow!r} is not a pyarrow release of 21.0.0 or "
                             f"later (e.g. 26.0.1)")
        for name in ("pg_autoscale", "rgw"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"CephOptions.{name} must be true or false, not {getattr(self, name)!r}")
        if self.bluestore_device is not None:
            validate.path(self.bluestore_device, "CephOptions.bluestore_device")
            if not self.bluestore_device.startswith("/"):
                raise UsageError(f"CephOptions.bluestore_device {self.bluestore_device!r} must be an absolute path")
        low, high = self.daemon_ports
        if not 1024 <= low < high <= 65535:
            raise UsageError(f"CephOptions.daemon_ports must be (low, high) ports above 1023, not {self.daemon_ports!r}")
        self._check_rgw_port()
        if self.bluestore_device and self.store != "bluestore":
            raise UsageError("CephOptions.bluestore_device needs store='bluestore'")
        if self.bluestore_device and self.osds_per_node != 1:
            raise UsageError("CephOptions.bluestore_device serves one OSD: set osds_per_node=1")
        if not isinstance(self.fs_name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,63}", self.fs_name):
            raise UsageError(f"CephOptions.fs_name {self.fs_name!r} must be letters, digits, '-' or '_'")

    def _check_rgw_port(self) -> None:
        """``rgw_port`` and ``rgw_tls_port`` are ports of their own: no mon's, mgr module's, daemon
        range's or metrics port's, nor each other's."""
        taken = {**{p: f"the {role} metrics port (metareserve.layout.METRICS_PORTS)" for role, p in METRICS_PORTS.items()},
                 self.mon_port: "mon_port", self.mon_v1_port: "mon_v1_port",
                 self.mgr_prometheus_port: "mgr_prometheus_port"}
        low, high = self.daemon_ports
        for name, default in (("rgw_port", 7480), ("rgw_tls_port", 7443)):
            port = getattr(self, name)
            if not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65535:
                raise UsageError(f"CephOptions.{name} must be a port from 1024 to 65535, not {port!r}")
            clash = taken.get(port) or (f"in daemon_ports {low}-{high}" if low <= port <= high else None)
            if clash:
                raise UsageError(f"CephOptions.{name} {port} is {clash} too: choose another port (default {default})")
            taken[port] = name
