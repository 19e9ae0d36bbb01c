"""rados_deploy tests use the shared Ceph fixture (until tests/conftest.py registers fixtures.ceph)."""
from fixtures.ceph import ceph_cluster  # noqa: F401
