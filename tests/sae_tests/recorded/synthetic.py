"""Synthetic stand-ins for recorded pairs, made from one real run's fixture until real pairs are
recorded (run from the repository root; the real run's fixture made by trim.py first):

    .venv/bin/python tests/sae_tests/recorded/synthetic.py tests/sae_tests/recorded/aa-synthetic-1/A

Writes ``aa-synthetic-1/B``, ``aa-synthetic-2`` and ``aa-synthetic-3`` (A/A pairs) and
``ab-synthetic-storage-load`` (an A/B pair) beside it, with their ``pair.yaml``. Every synthetic
run is the real one perturbed as runs of one code on one machine differ, by assumption, not by
measurement: its time and CPU columns scaled by a factor of the run (the machine's speed that
hour, log-normal, sd :data:`MACHINE`) and one of each point and column (sd :data:`POINT`; the
byte columns :data:`BYTES_POINT`), its measured repetitions at each point drawn with replacement
from the real run's, and its start moved on by hours. The A/B pair's B adds what a CPU tenant
holding four times the storage host's core did in the contention experiment (docs/experiments.md):
offload's time at 1 % 2.2x, no-offload's 2.6x, and the tenant's CPU in the storage side's
(0.8 core over each query), with ``storage_load`` 4. Delete this file with the stand-ins.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import yaml

from monitor_deploy import read_frame, write_frame

MACHINE = 0.04
POINT = 0.06
BYTES_POINT = 0.002
TIME_CPU = ("init_s", "compute_s", "total_s", "compute_cpu_s", "storage_cpu_s")
BYTES = ("compute_rx_bytes", "storage_tx_bytes")
SLOWDOWN = {("offload", 1.0): 2.2, ("no-offload", 1.0): 2.6}
TENANT_CORES = 0.8


def perturbed(real: Path, dest: Path, seed: int, *, loaded: bool = False) -> None:
    """A synthetic run at ``dest`` from the fixture ``real`` (module docstring)."""
    rng = np.random.default_rng(seed)
    shutil.copytree(real, dest)
    df = read_frame(real / "results.parquet")
    machine = np.exp(rng.normal(0, MACHINE))
    measured = ~df["warmup"].astype(bool) & ~df["drift"].astype(bool)
    for _, rows in df.groupby("point"):
        kept = rows.index[measured[rows.index]]
        drawn = rng.choice(kept, size=len(kept), replace=True) if len(kept) else kept
        for col in [c for c in TIME_CPU + BYTES if c in df]:
            scale = np.exp(rng.normal(0, BYTES_POINT)) if col in BYTES else machine * np.exp(rng.normal(0, POINT))
            values = df[col].astype(float)
            df.loc[rows.index, col] = values[rows.index] * scale
            df.loc[kept, col] = values[drawn].to_numpy() * scale
    df["start"] = df["start"] + 3600.0 * seed
    df["end"] = df["end"] + 3600.0 * seed
    if loaded:
        for (reader, selectivity), factor in SLOWDOWN.items():
            at = (df["reader"] == reader) & (df["selectivity"].astype(float) == selectivity)
            df.loc[at, ["total_s", "compute_s"]] *= factor
        df["storage_cpu_s"] += TENANT_CORES * df["total_s"]
        df["storage_load"] = 4.0
    write_frame(df, dest / "results.parquet")


def pair(root: Path, name: str, kind: str, about: str) -> Path:
    out = root / name
    out.mkdir(exist_ok=True)
    (out / "pair.yaml").write_text(yaml.safe_dump({"kind": kind, "synthetic": True, "about": about}, sort_keys=False))
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1].strip())
    real = Path(sys.argv[1])
    root = real.parent.parent
    first = pair(root, real.parent.name, "aa", "A: a real run of selectivity.py (tiny profile), trimmed; B: A "
                                               "perturbed by synthetic.py (a stand-in)")
    perturbed(real, first / "B", 1)
    for i in (2, 3):
        out = pair(root, f"aa-synthetic-{i}", "aa", "A and B: a real run perturbed by synthetic.py (a stand-in)")
        perturbed(real, out / "A", 2 * i)
        perturbed(real, out / "B", 2 * i + 1)
    out = pair(root, "ab-synthetic-storage-load", "ab",
               "A: a real run perturbed by synthetic.py; B: another, with the CPU tenant's measured slowdown "
               "(a stand-in)")
    perturbed(real, out / "A", 8)
    perturbed(real, out / "B", 9, loaded=True)
