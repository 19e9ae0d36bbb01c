"""data_deploy: NYC-taxi data as fixed-size single-row-group Parquet objects (or Arrow IPC files
of one record batch) in CephFS.

Pure pyarrow steps (controller or node): :func:`generate`, :func:`ingest`, :func:`split`,
:func:`selectivity_threshold`, :func:`generate_zones` (the zone dimension table). Cluster steps through plugins: :func:`deploy`, :func:`verify`,
:func:`clean`.
"""
from .deploy import (CEPH_DEFAULT_CONF, MAX_MULTIPLIER, DeployReport, VerifyReport, check_target, clean,
                     dataset_id, deploy, describe, verify)
from .plugins import get_plugin
from .selectivity import selectivity_threshold
from .sizes import check_object_size
from .formats import CODECS, CODECS_BY_FORMAT, FORMATS, MAX_PAGE_ROWS, check_codec, check_format, check_page_rows
from .split import SplitReport, split
from .taxi import AMOUNT_PARTS, GENERATORS, INGEST_PATTERNS, MAX_ROWS, MAX_SEED, SCHEMA, generate, ingest, ingestible
from .zones import ZONES_SCHEMA, generate_zones, zones_table

__version__ = "0.1.0"
__all__ = ["CEPH_DEFAULT_CONF", "generate", "ingest", "split", "SplitReport", "selectivity_threshold",
           "deploy", "verify", "clean", "check_target", "DeployReport", "VerifyReport", "describe",
           "dataset_id", "get_plugin", "check_object_size", "check_codec", "check_format", "check_page_rows", "CODECS",
           "CODECS_BY_FORMAT", "FORMATS", "MAX_PAGE_ROWS", "SCHEMA", "AMOUNT_PARTS", "GENERATORS", "INGEST_PATTERNS", "ingestible",
           "MAX_ROWS", "MAX_SEED", "MAX_MULTIPLIER", "ZONES_SCHEMA", "zones_table", "generate_zones"]
