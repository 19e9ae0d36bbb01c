"""The offloading connector: Spark reads Parquet in CephFS through the ``sae`` object class, which
filters and projects inside the OSDs (docs/connector.md, docs/protocol.md).

- :func:`build` → :class:`SubmitSpec`: object class, executor package zip, session-extension jar,
  Spark conf and read options for ``spark.read.format("sae-ceph")``.
- :func:`mount_cephfs` / :func:`unmount_cephfs`: ceph-fuse mounts for the vanilla Parquet baseline.
- :mod:`sae.connector.spark`: the executor side (data source and scan protocol).
"""
from .build import SubmitSpec, build, cache_dir, python_zip
from .mount import default_mountpoint, mount_cephfs, unmount_cephfs
from .spark.protocol import Request, ScanError, decode_error, decode_request
from .spark.source import FORMAT

#: Extra Python requirements of the Spark nodes' venv: none beyond spark_deploy's pyarrow pin
#: (the Ceph bindings come from Debian's python3-rados/python3-cephfs on every ceph-client).
REQUIREMENTS: tuple[str, ...] = ()

__all__ = ["build", "SubmitSpec", "cache_dir", "python_zip", "mount_cephfs", "unmount_cephfs",
           "default_mountpoint", "Request", "ScanError", "decode_error", "decode_request", "FORMAT",
           "REQUIREMENTS"]
