"""Per-point fixed cost of ``sae run``: one warm Spark application for all points vs one
application per point (the reference), both measured in one invocation on an already-deployed
cluster.

    python bench/sae_overhead.py --reservation FILE [--points N] [--repetitions R] [--out DIR]
    python bench/sae_overhead.py --analyse WARM_RUN REFERENCE_RUN

Runs experiments/selectivity.py's tiny profile (its first ``N`` points, ``R`` repetitions) twice
with the Python API: ``RunOptions(warm=True)`` first (so OS caches favour the reference, if
anything), then ``warm=False``. Setup stages find everything deployed and change nothing.

From each run's raw timings and ledger it prints, per mode, the median time between two queries
of one application beyond the configured pause, and:

* the run phase: from the first run step's start to the aggregate step's start (submits,
  sessions, queries, pauses, fetch, window export, application stop);
* the first point's fixed cost: its share of the run phase minus its query time and pauses;
* the per-point fixed cost after the first: the run phase after the first point's last query,
  minus the later points' query time and pauses, divided by their number. ``all queries``
  subtracts every query; ``warm-up as cost`` leaves the warm-up repetitions in the cost (in the
  reference they are the cold first queries);

and the ratio reference / warm of each figure.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def experiment_file(out: Path, points: int | None, repetitions: int | None) -> Path:
    """selectivity.py's tiny profile cut to its first ``points`` points (a wrapper file)."""
    f = out / "overhead.py"
    f.write_text(
        "import dataclasses, itertools, runpy\n"
        "from sae import Sweep\n"
        f"base = runpy.run_path({str(ROOT / 'experiments' / 'selectivity.py')!r})['experiment']\n"
        "tiny = dict(base.profiles['tiny'], drift=False)\n"
        f"if {repetitions!r}:\n"
        f"    tiny['repetitions'] = {repetitions!r}\n"
        f"if {points!r}:\n"
        "    sweep = tiny['sweep']\n"
        "    combos = list(itertools.product(*sweep.cartesian.values()))\n"
        "    axes = {k: [c[i] for c in combos] for i, k in enumerate(sweep.cartesian)}\n"
        f"    tiny['sweep'] = Sweep(zipped={{k: v[:{points!r}] for k, v in axes.items()}})\n"
        "experiment = dataclasses.replace(base, name='overhead', profiles={**base.profiles, 'tiny': tiny})\n")
    return f


def queries(run: Path) -> list[dict]:
    """Every query the applications ran (discarded pre-warm ones too), in time order, with
    ``paused``: whether the application paused before it, and ``gap``: seconds since the
    application's previous query ended (None for its first)."""
    out = []
    for f in sorted((run / "raw").glob("*.jsonl")):
        recs = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        reps = sorted((r for r in recs if r.get("event") == "rep"), key=lambda r: r["start"])
        out += [dict(r, paused=i > 0, gap=r["start"] - reps[i - 1]["end"] if i else None)
                for i, r in enumerate(reps)]
    return sorted(out, key=lambda r: r["start"])


def analyse(run: Path) -> dict:
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    pause, warmup = spec["experiment"]["pause"], spec["experiment"]["warmup"]
    ledger = json.loads((run / "ledger.json").read_text())
    steps = ledger["steps"]
    begin = min(s["start"] for s in steps if s["stage"] == "run")
    end = next(s["start"] for s in steps if s["stage"] == "aggregate")
    qs = queries(run)
    order = list(dict.fromkeys(q["point"] for q in qs))

    def spent(points, *, warm_as_cost=False):
        return sum(q["end"] - q["start"] + (pause if q["paused"] else 0) for q in qs
                   if q["point"] in points and not (warm_as_cost and q["repetition"] < warmup))

    first_end = max(q["end"] for q in qs if q["point"] == order[0])
    later = order[1:]
    return {"run": str(run), "points": len(order), "repetitions": len(qs) // max(len(order), 1),
            "run_phase_s": end - begin, "median_query_s": statistics.median(q["end"] - q["start"] for q in qs),
            "between_queries_ms": 1000 * (statistics.median(q["gap"] for q in qs if q["paused"]) - pause),
            "first_point_fixed_s": first_end - begin - spent(order[:1]),
            "per_point_fixed_s": (end - first_end - spent(later)) / max(len(later), 1),
            "per_point_fixed_warmup_as_cost_s": (end - first_end - spent(later, warm_as_cost=True))
            / max(len(later), 1)}


def report(warm: dict, ref: dict) -> None:
    print(f"warm:      {warm['run']}\nreference: {ref['run']}")
    print(f"{warm['points']} points x {warm['repetitions']} queries; median query "
          f"{warm['median_query_s']:.2f} s (warm) / {ref['median_query_s']:.2f} s (reference)")
    print(f"between queries of one application, beyond the pause: median {warm['between_queries_ms']:.1f} ms "
          f"(warm) / {ref['between_queries_ms']:.1f} ms (reference)")
    print(f"{'figure':<38}{'warm app':>10}{'app/point':>11}{'ratio':>8}")
    for key, label in (("run_phase_s", "run phase (s)"), ("first_point_fixed_s", "first point fixed cost (s)"),
                       ("per_point_fixed_s", "per-point fixed cost after first (s)"),
                       ("per_point_fixed_warmup_as_cost_s", "  same, warm-up queries as cost (s)")):
        ratio = ref[key] / warm[key] if warm[key] > 0 else float("inf")
        print(f"{label:<38}{warm[key]:>10.2f}{ref[key]:>11.2f}{ratio:>7.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reservation", help="an already-deployed cluster's reservation file")
    ap.add_argument("--points", type=int, help="first N points of the tiny sweep (default: all)")
    ap.add_argument("--repetitions", type=int, help="repetitions per point (default: the profile's)")
    ap.add_argument("--out", help="results root (default: a temporary directory)")
    ap.add_argument("--analyse", nargs=2, metavar=("WARM_RUN", "REFERENCE_RUN"),
                    help="only analyse two existing run directories")
    args = ap.parse_args()
    if args.analyse:
        report(analyse(Path(args.analyse[0])), analyse(Path(args.analyse[1])))
        return
    if not args.reservation:
        ap.error("--reservation is required (an already-deployed cluster)")
    sys.path.insert(0, str(ROOT / "experiments"))
    import sae
    out = Path(args.out or tempfile.mkdtemp(prefix="sae-overhead-"))
    out.mkdir(parents=True, exist_ok=True)
    f = experiment_file(out, args.points, args.repetitions)
    runs = {}
    for warm in (True, False):
        runs[warm] = sae.run(f, out=out, options=sae.RunOptions(reservation=args.reservation, warm=warm)).root
    report(analyse(runs[True]), analyse(runs[False]))


if __name__ == "__main__":
    main()
