"""data_deploy test fixtures: a small split dataset shared by the module tests (the shared
``ceph_cluster`` and ``taxi_dataset`` come from tests/fixtures via tests/conftest.py)."""
import pytest

import data_deploy as dd

ROWS = 300_000
SEED = 11


@pytest.fixture(scope="session")
def split_dataset(tmp_path_factory):
    """~9 MiB of generated trips split into 4 MiB single-row-group files (3 files)."""
    root = tmp_path_factory.mktemp("dd")
    generated = dd.generate(ROWS, seed=SEED, out=root / "gen")
    return dd.split(generated, out=root / "split", object_size="4MiB")
