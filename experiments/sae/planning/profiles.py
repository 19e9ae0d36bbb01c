"""The two profiles every shipped experiment defines, built from one definition each so that they
agree across experiment files:

* :func:`tiny`: the local cluster (3 hosts, memstore, 1-s scrapes). Every tiny profile has the
  same stack (nodes, Ceph, monitoring), so experiments run one after another share the deployed
  stack (and, where their data agree, the datasets): only their points run.
* :func:`paper`: the thesis's cluster on CloudLab m510 nodes: 17 hosts (8 OSD hosts, a driver
  host, 8 executor hosts: ``Layout.default``), bluestore, executors as large as the nodes, 1-s
  scrapes, 21 repetitions with the first dropped.

Each takes overrides in profile form (``data={...}``, ``sweep=Sweep(...)``, ``repetitions=3``);
a section's dict is merged into the common one.
"""
from __future__ import annotations

TINY = {"monitor": {"scrape_interval": "1s"}, "repetitions": 3, "warmup": 1, "pause": 2.0}
PAPER = {"cluster": {"nodes": 17}, "ceph": {"store": "bluestore", "osd_size": "200GiB"},
         "spark": {"worker_cores": 8, "worker_memory": "60g", "executor_memory": "48g"},
         "monitor": {"scrape_interval": "1s"}, "repetitions": 21, "warmup": 1, "pause": 5.0}
TINY_DATA = {"rows": 1_000_000, "object_size": "16MiB", "link_multiplier": 4}
"""The tiny dataset most experiments share (docs/results.md, "The tiny profile"): 1 M generated
rows in 16 MiB objects, each linked under 4 names, so a query scans 4 M rows."""
PAPER_DATA = {"rows": 100_000_000, "object_size": "64MiB", "link_multiplier": 64}


def _merged(common: dict, overrides: dict) -> dict:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in common.items()}
    for key, value in overrides.items():
        out[key] = {**out[key], **value} if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def tiny(**overrides) -> dict:
    """The tiny profile (local cluster) with ``overrides``; its data default to :data:`TINY_DATA`."""
    return _merged(_merged(TINY, {"data": TINY_DATA}), overrides)


def paper(**overrides) -> dict:
    """The paper profile (the thesis's 17-node cluster) with ``overrides``; data default to
    :data:`PAPER_DATA`."""
    return _merged(_merged(PAPER, {"data": PAPER_DATA}), overrides)
