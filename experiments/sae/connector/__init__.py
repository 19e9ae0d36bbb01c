"""The offloading connector: Spark reads Parquet in CephFS through the ``sae`` object class, which
filters and projects inside the OSDs (docs/connector.md, docs/protocol.md).

- :func:`build` → :class:`SubmitSpec`: object class, the JVM data source jar (``jvm/``), Spark
  conf and read options for ``spark.read.format("sae-ceph")``.
- :mod:`sae.connector.protocol`: the scan request and reply in Python (test vectors, OSD tests).
"""
from .build import FORMAT, SYSTEM_PACKAGES, SubmitSpec, build, cache_dir
from .protocol import Reply, Request, ScanError, decode_error, decode_reply, decode_request

__all__ = ["build", "SubmitSpec", "cache_dir", "Request", "Reply", "ScanError", "decode_error", "decode_reply",
           "decode_request", "FORMAT", "SYSTEM_PACKAGES"]
