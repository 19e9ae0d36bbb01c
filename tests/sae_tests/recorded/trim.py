"""Trim a finished run directory into a recorded-run fixture (run from the repository root):

    .venv/bin/python tests/sae_tests/recorded/trim.py RUN_DIR tests/sae_tests/recorded/PAIR/A

Keeps what ``sae.load_results``, ``sae compare`` and ``sae calibrate`` read, and nothing else:

* ``results.parquet`` without the per-call and per-metric detail (``auc_*``, ``cls_*``, ``osd_*``,
  ``client_*``, ``scan``, ``answer``);
* ``ledger.json`` with its header only (no entries: results.parquet holds the repetitions; the
  file marks the directory as a run directory);
* ``versions.lock`` (the provenance: sae's commit, the stack, each node's CPU), less where the
  checkout lived;
* ``lease.yaml`` (the host the run was controlled from: part of the machine a calibration is of).

Logs, metrics, raw files, the report and the plan stay behind. Refuses, naming the file, a
directory without results.parquet or a destination that exists.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import yaml

from monitor_deploy import read_frame, write_frame

DETAIL = ("auc_", "cls_", "osd_", "client_")
"""Prefixes of the columns a fixture leaves out."""
DROPPED = ("scan", "answer")
LEDGER_HEADER = ("version", "experiment", "profile", "created")


def trim(run: Path, dest: Path) -> Path:
    """Write the fixture of the run directory ``run`` at ``dest`` (created); returns ``dest``."""
    run, dest = Path(run), Path(dest)
    for name in ("results.parquet", "ledger.json", "versions.lock"):
        if not (run / name).is_file():
            sys.exit(f"trim: {run / name}: missing; give a finished run directory (after 'sae report')")
    if dest.exists():
        sys.exit(f"trim: {dest}: exists; give a new directory")
    dest.mkdir(parents=True)
    df = read_frame(run / "results.parquet")
    write_frame(df.drop(columns=[c for c in df.columns if c.startswith(DETAIL) or c in DROPPED]),
                dest / "results.parquet")
    ledger = json.loads((run / "ledger.json").read_text())
    (dest / "ledger.json").write_text(json.dumps({**{k: ledger[k] for k in LEDGER_HEADER if k in ledger},
                                                  "runs": [], "steps": [], "executed": [], "entries": {}}, indent=1))
    lock = yaml.safe_load((run / "versions.lock").read_text())
    if isinstance(lock.get("sae"), dict):
        lock["sae"].pop("checkout", None)
    (dest / "versions.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    if (run / "lease.yaml").is_file():
        shutil.copyfile(run / "lease.yaml", dest / "lease.yaml")
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1].strip())
    print(trim(Path(sys.argv[1]), Path(sys.argv[2])))
