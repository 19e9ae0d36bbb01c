"""Framework overhead of sae, measured on a real run.

    python bench/sae_overhead.py [RUN_DIR]

Without RUN_DIR it runs ``sae run experiments/selectivity.py --profile tiny --teardown`` on a fresh
local cluster first (needs root; several minutes). Prints:

* per repetition: the gap between the end of one repetition's query and the start of the next,
  minus the configured pause (JSON line + fsync + marker line + loop), as a ratio of the median
  query time measured in the same run;
* per point: the run step's wall time not spent in queries or pauses (spark-submit, SparkSession
  start, fetching raw timings, metric export), also as a ratio of the median query time;
* the run's wall time split by stage (seconds and share).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]


def raw_records(run: Path) -> pd.DataFrame:
    rows = []
    for f in sorted((run / "raw").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("event") == "rep":
                rows.append(dict(rec, attempt_file=f.name))
    return pd.DataFrame(rows)


def main(run: Path) -> None:
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    pause = spec["experiment"]["pause"]
    ledger = json.loads((run / "ledger.json").read_text())
    raw = raw_records(run).sort_values(["attempt_file", "start"])
    query = raw["total_s"].median()
    gaps = (raw.groupby("attempt_file").apply(
        lambda g: g["start"].shift(-1) - g["end"], include_groups=False).dropna() - pause)
    steps = pd.DataFrame(ledger["steps"])
    runs = steps[steps.stage == "run"].set_index("point")["seconds"]
    in_queries = raw.groupby(raw["attempt_file"].str.split("-a").str[0]).apply(
        lambda g: g["total_s"].sum() + pause * (len(g) - 1), include_groups=False)
    per_point = (runs - in_queries.reindex(runs.index)).dropna()
    print(f"run {run}")
    print(f"median query time (reference): {query:.3f} s over {len(raw)} repetitions")
    print(f"overhead between repetitions: median {gaps.median() * 1000:.1f} ms, max {gaps.max() * 1000:.1f} ms "
          f"= {gaps.median() / query:.4f} x query time")
    print(f"overhead per point (submit, session start, fetch, export): median {per_point.median():.1f} s "
          f"= {per_point.median() / query:.1f} x query time")
    total = steps["seconds"].sum()
    print(f"wall time by stage (total {total:.0f} s):")
    for stage, sec in steps.groupby("stage", sort=False)["seconds"].sum().items():
        print(f"  {stage:<10} {sec:8.1f} s  {sec / total:6.1%}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        target = Path(sys.argv[1])
    else:
        out = subprocess.run([str(Path(sys.executable).with_name("sae")), "run", "experiments/selectivity.py",
                              "--profile", "tiny", "--teardown", "--out", "/tmp/sae-bench"],
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout
        target = Path(out.strip().splitlines()[-1])
    sys.path.insert(0, str(ROOT / "experiments"))
    from sae.results import RunDir
    main(RunDir.find(target).root)
