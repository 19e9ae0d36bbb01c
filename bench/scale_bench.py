"""The thesis's cluster against sae's smallest, side by side in one ``sae run``: scale.py's tiny
profile on 3 and 17 hosts (1 and 8 OSDs), offload and no-offload, 1 % with the data linked once
and ``--links`` times, 100 % linked once (three warm-ups, three measured repetitions a point).

Prints, per host count and data size, offload's ratios against no-offload at 1 % (bytes to the
compute side, the compute hosts' CPU-seconds, Spark's task CPU-seconds, the storage side's
CPU-seconds, query time), each kind of host's CPU per idle second, and ``sae advise`` fitted on the
3-host points predicting the 17-host ones (median errors; the compute CPU-seconds again given the
17 hosts' measured times). Then its aims, the issue's: at 17 hosts and 1 %, at least 48.9x fewer
bytes and 8.0x fewer compute CPU-seconds than no-offload on the largest data (the thesis's figures),
and advise within 25 % on the 17 hosts' compute CPU-seconds and bytes.

    python bench/scale_bench.py [--links 4] [--out DIR]
    python bench/scale_bench.py --analyse RUN_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import one_run

ROOT = Path(__file__).resolve().parents[1]
RATIOS = {"compute_rx_bytes": "bytes", "compute_cpu_s": "compute CPU", "compute_task_cpu_s": "task CPU",
          "storage_cpu_s": "storage CPU", "total_s": "time"}
IDLE = ("compute_idle_cpu_rate", "compute_idle_services_cpu_rate", "storage_idle_cpu_rate",
        "storage_idle_services_cpu_rate")
THESIS = {"compute_rx_bytes": 48.9, "compute_cpu_s": 8.0}
"""The thesis's ratios at 17 hosts and 1 % (fewer bytes, less compute CPU than no-offload)."""
ADVISE = 0.25


def experiment_file(out: Path, links: int) -> Path:
    """scale.py with the sweep above."""
    f = out / "scale_bench.py"
    f.write_text(
        "import dataclasses, runpy\n"
        "from sae import Sweep\n"
        f"base = runpy.run_path({str(ROOT / 'experiments' / 'scale.py')!r})['experiment']\n"
        "experiment = dataclasses.replace(base, name='scale_bench', sweep=Sweep(\n"
        "    cartesian={'cluster.nodes': [3, 17], 'selectivity': [100, 1], 'reader': ['offload', 'no-offload'],\n"
        f"               'link_multiplier': [1, {links}]}},\n"
        f"    where=lambda p: not (p['selectivity'] == 100 and p['link_multiplier'] == {links})))\n")
    return f


def analyse(run: Path) -> bool:
    """Print the tables and the aims; True when every aim is met."""
    sys.path.insert(0, str(ROOT / "experiments"))
    import sae
    from sae.results.analysis import advice, cost_model
    df = sae.load_results(run)
    df = df[~df["warmup"]]
    print(f"run: {run}\n\n1 %, no-offload / offload (medians):")
    print(f"{'hosts':>5} {'links':>5}" + "".join(f"{v:>13}" for v in RATIOS.values()))
    ratios = {}
    for (hosts, links), g in df[df["selectivity"] == 1].groupby(["hosts", "link_multiplier"]):
        med = g.groupby("reader")[list(RATIOS)].median()
        ratios[hosts, links] = med.loc["no-offload"] / med.loc["offload"]
        print(f"{hosts:>5} {links:>5}" + "".join(f"{ratios[hosts, links][c]:>12.2f}x" for c in RATIOS))
    print("\nCPU-s per idle second: " + "; ".join(
        f"{hosts} hosts " + ", ".join(f"{c} {g[c].median():.4f}" for c in IDLE if c in g and g[c].notna().any())
        for hosts, g in df.groupby("hosts")))
    data, _ = cost_model.observations([run])
    sizes = data["point"].map(df.groupby("point")["hosts"].first())
    model = cost_model.fit_observations(data[sizes == 3])
    large = data[sizes == 17]
    v = advice.validate_observations(model, large)
    errors = {k: e for k, (e, _) in v.volume_errors().items()}
    given_time = np.median([abs(model.work(cost_model.volumes(row["reader"], cost_model.config_of(row), model.shape,
                                                              float(row["total_s"])), "compute_cpu_s")
                                / row["compute_cpu_s"] - 1) for _, row in large.iterrows()])
    print(f"\nadvise fitted on 3 hosts, 17 hosts predicted (median |error|): time {v.median_error:.0%}, "
          + ", ".join(f"{k} {e:.0%}" for k, e in errors.items())
          + f"; compute CPU given the measured times {given_time:.0%}")
    largest = max(links for hosts, links in ratios if hosts == 17)
    aims = [(f"17 hosts, 1 %, {largest}x data: {RATIOS[c]} {ratios[17, largest][c]:.1f}x fewer, thesis {x}x",
             ratios[17, largest][c] >= x) for c, x in THESIS.items()]
    aims += [(f"advise 3 -> 17 hosts: {c} within {errors[c]:.0%}, aim {ADVISE:.0%}", errors[c] <= ADVISE)
             for c in ("compute_cpu_s", "compute_rx_bytes")]
    print()
    return one_run.aims_met(aims)


def main() -> None:
    ap = one_run.parser(__doc__)
    ap.add_argument("--links", type=int, default=4, help="times the data is linked at 1 %% (default 4)")
    args = ap.parse_args()

    def run(out: Path) -> Path:
        import sae
        return sae.run(experiment_file(out, args.links), out=out).root
    one_run.main(args, analyse, run, "sae-scale-")


if __name__ == "__main__":
    main()
