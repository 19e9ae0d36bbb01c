"""What a benchmark made of one ``sae run`` shares (bench/emulation_bench.py,
bench/osd_index_bench.py): its ``--out`` and ``--analyse`` options, and its exit status, 0 when
the run met every aim its analysis prints."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parser(doc: str) -> argparse.ArgumentParser:
    """The benchmark's options: its docstring's first paragraph, ``--out`` and ``--analyse``."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", help="results root (default: a temporary directory)")
    ap.add_argument("--analyse", metavar="RUN_DIR", help="only analyse an existing run directory")
    return ap


def main(args, analyse, run, prefix: str) -> None:
    """Analyse ``--analyse``'s run directory, or the one ``run(out)`` makes under ``--out`` (a new
    temporary directory by default, named ``prefix...``); exit 0 when ``analyse`` says every aim
    was met. sae is importable from ``run``."""
    if args.analyse:
        sys.exit(0 if analyse(Path(args.analyse)) else 1)
    sys.path.insert(0, str(ROOT / "experiments"))
    out = Path(args.out or tempfile.mkdtemp(prefix=prefix))
    out.mkdir(parents=True, exist_ok=True)
    sys.exit(0 if analyse(run(out)) else 1)


def aims_met(aims: list[tuple[str, bool]]) -> bool:
    """Print each aim (its text, met or MISS); True when every one is met."""
    for text, ok in aims:
        print(f"{'met ' if ok else 'MISS'} {text}")
    return all(ok for _, ok in aims)
