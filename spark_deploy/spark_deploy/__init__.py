"""Spark standalone clusters: install, start, status, submit, stop, uninstall.

>>> from spark_deploy import SparkCluster, SparkOptions
>>> with SparkCluster(reservation, layout, SparkOptions(worker_memory="2g")) as spark:
...     spark.install(); spark.start()
...     spark.submit("pi.py", args=[10]).exit_code
"""
from .cluster import DaemonStatus, SparkCluster, SparkStatus
from .options import SparkOptions, check_conf, check_memory, merged_conf
from .software import ships_arrow_compression
from .submit import SubmitError, SubmitResult

__all__ = ["SparkCluster", "SparkOptions", "SparkStatus", "DaemonStatus", "SubmitResult", "SubmitError",
           "check_memory", "check_conf", "merged_conf", "ships_arrow_compression"]
