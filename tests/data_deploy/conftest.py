"""data_deploy test fixtures: a small split dataset shared by the module tests, and the Ceph
cluster from rados_deploy's session fixture (tests needing it skip while it is unavailable)."""
import pytest

import data_deploy as dd

try:
    from fixtures.ceph import ceph_cluster  # noqa: F401  (rados_deploy's session fixture)
except ImportError:
    @pytest.fixture(scope="session")
    def ceph_cluster():
        pytest.skip("needs tests/fixtures/ceph.py (rados_deploy's ceph_cluster session fixture)")

from fixtures.data import taxi_dataset  # noqa: F401,E402  (the shared dataset, exercised here too)

ROWS = 300_000
SEED = 11


@pytest.fixture(scope="session")
def split_dataset(tmp_path_factory):
    """~9 MiB of generated trips split into 4 MiB single-row-group files (3 files)."""
    root = tmp_path_factory.mktemp("dd")
    generated = dd.generate(ROWS, seed=SEED, out=root / "gen")
    return dd.split(generated, out=root / "split", object_size="4MiB")
