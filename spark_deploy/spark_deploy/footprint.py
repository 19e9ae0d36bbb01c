"""The memory a Spark host needs, by the roles it plays: what a plan checks against a machine
before anything starts (a local cluster's hosts share one machine's memory)."""
from __future__ import annotations

from .options import SparkOptions, memory_bytes

DAEMON = 512 << 20
"""A master's or worker's JVM (resident: about 250-300 MiB measured; its default heap may grow)."""
EXECUTOR_OVERHEAD = 384 << 20
"""What an executor takes beyond its heap (Spark's minimum ``spark.executor.memoryOverhead``)."""
DRIVER_OVERHEAD = 512 << 20
"""What a driver takes beyond its heap (its JVM's own and the PySpark process beside it)."""


def memory(options: SparkOptions, roles, driver_memory: str = "1g") -> int:
    """Bytes a host playing ``roles`` (spark-master, spark-worker, driver) needs at most: each
    daemon's JVM, a worker's executor (heap + overhead) and the driver's heap + overhead."""
    need = 0
    if "spark-master" in roles:
        need += DAEMON
    if "spark-worker" in roles:
        need += DAEMON + memory_bytes(options.executor_memory) + EXECUTOR_OVERHEAD
    if "driver" in roles:
        need += memory_bytes(driver_memory) + DRIVER_OVERHEAD
    return need
