"""Executor-side half of the connector: the ``sae-ceph`` Spark data source and the scan protocol.

Self-contained (pyspark, pyarrow, Ceph bindings only): ``sae.connector.build`` ships this package to
Spark as the top-level package ``sae_ceph`` (``--py-files``); apps call ``sae_ceph.register(spark)``.
"""
from .source import FORMAT, SaeCephDataSource, register

__all__ = ["FORMAT", "SaeCephDataSource", "register"]
