"""The main job on a shared box against the main job on the emulated two clusters, side by side in
one ``sae run``: selectivity.py's tiny profile with two capacity settings zipped onto its sweep,

* ``shared``: every host on every core, links unlimited (sae before capacities were emulated);
* ``sides``: storage and compute hosts on disjoint cores, 1.25 Gbit/s per core on every link
  (the default),

both on the same stack and data (a shape step switches between them in place). Prints, per
setting, the medians per selectivity and reader and offload's ratios against vanilla (query
time; bytes to and CPU of the compute side), then its aims: on ``sides`` offload's
query time at most 1.05x vanilla's at 100 % and at most 0.5x at 1 %, and the bytes and compute-CPU
ratios of ``sides`` within noise of ``shared`` (the emulation must not change what it does not
model).

    python bench/emulation_bench.py [--repetitions R] [--selectivities 100,10,1] [--out DIR]
    python bench/emulation_bench.py --analyse RUN_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

import one_run

ROOT = Path(__file__).resolve().parents[1]
MODES = {"shared": "unlimited", "sides": "1.25gbit/core"}
COLUMNS = {"total_s": "time s", "compute_rx_bytes": "compute rx MB", "compute_cpu_s": "compute CPU s",
           "storage_cpu_s": "storage CPU s"}


def experiment_file(out: Path, repetitions: int | None, selectivities: list[float]) -> Path:
    """selectivity.py's tiny profile with the two capacity settings zipped onto its sweep."""
    f = out / "emulation.py"
    f.write_text(
        "import dataclasses, runpy\n"
        "from sae import Sweep, readers\n"
        f"base = runpy.run_path({str(ROOT / 'experiments' / 'selectivity.py')!r})\n"
        "tiny = dict(base['experiment'].profiles['tiny'], drift=False)\n"
        f"tiny['sweep'] = Sweep(cartesian={{'selectivity': {selectivities!r}, 'reader': readers.names()}},\n"
        f"                      zipped={{'cores': {list(MODES)!r}, 'link_rate': {list(MODES.values())!r}}})\n"
        f"if {repetitions!r}:\n"
        f"    tiny['repetitions'] = {repetitions!r}\n"
        "experiment = dataclasses.replace(base['experiment'], name='emulation', profiles={**base['experiment'].profiles, 'tiny': tiny})\n")
    return f


def analyse(run: Path) -> bool:
    """Print the tables and the aims; True when every aim is met."""
    sys.path.insert(0, str(ROOT / "experiments"))
    import sae
    from sae.planning.readers import NO_OFFLOAD, OFFLOAD, VANILLA
    off, van, no_off = OFFLOAD.name, VANILLA.name, NO_OFFLOAD.name
    df = sae.load_results(run)
    df = df[~df["warmup"]]
    med = df.groupby(["cluster_cores", "selectivity", "reader"])[list(COLUMNS)].median()
    print(f"run: {run}")
    for mode in MODES:
        caps = df[df["cluster_cores"] == mode].iloc[0]
        print(f"\n{mode}: compute cores {caps['compute_cores_declared']:g} declared / "
              f"{caps['compute_cores_measured']:.2f} measured, storage {caps['storage_cores_declared']:g} / "
              f"{caps['storage_cores_measured']:.2f}, link {_rate(caps['link_rate_declared_bps'])} / "
              f"{_rate(caps['link_rate_measured_bps'])}")
        print(f"{'sel %':>6} {'reader':<11}" + "".join(f"{v:>15}" for v in COLUMNS.values()))
        for (sel, reader), row in med.loc[mode].iterrows():
            print(f"{sel:>6g} {reader:<11}" + "".join(
                f"{row[c] / (1e6 if c == 'compute_rx_bytes' else 1):>15.2f}" for c in COLUMNS))
    ratios = {}
    print(f"\n{'sel %':>6} {'setting':<8}{'off/van time':>14}{'van/off bytes':>15}{'van/off CPU':>13}"
          f"{'off/no-off time':>17}")
    for sel in sorted(df["selectivity"].unique(), reverse=True):
        for mode in MODES:
            m = med.loc[(mode, sel)]
            r = (m.loc[off, "total_s"] / m.loc[van, "total_s"],
                 m.loc[van, "compute_rx_bytes"] / m.loc[off, "compute_rx_bytes"],
                 m.loc[van, "compute_cpu_s"] / m.loc[off, "compute_cpu_s"],
                 m.loc[off, "total_s"] / m.loc[no_off, "total_s"])
            ratios[mode, sel] = r
            print(f"{sel:>6g} {mode:<8}{r[0]:>13.2f}x{r[1]:>14.1f}x{r[2]:>12.2f}x{r[3]:>16.2f}x")
    aims = [(f"sides 100 %: offload time <= 1.05x vanilla's", ratios[("sides", 100)][0] <= 1.05),
            (f"sides 1 %: offload time <= 0.5x vanilla's", ratios[("sides", 1)][0] <= 0.5)]
    for sel in sorted(df["selectivity"].unique()):
        for i, what in ((1, "bytes"), (2, "compute CPU")):
            shared, sides = ratios[("shared", sel)][i], ratios[("sides", sel)][i]
            aims.append((f"{sel:g} %: {what} ratio sides {sides:.2f}x vs shared {shared:.2f}x within 20 %",
                         abs(sides / shared - 1) <= 0.2))
    print()
    return one_run.aims_met(aims)


def _rate(bps) -> str:
    return "unlimited" if bps != bps else f"{bps / 1e9:.3g} Gbit/s"   # NaN: unlimited


def main() -> None:
    ap = one_run.parser(__doc__)
    ap.add_argument("--repetitions", type=int, help="repetitions per point (default: the profile's)")
    ap.add_argument("--selectivities", default="100,10,1", type=lambda v: [float(x) for x in v.split(",")])
    args = ap.parse_args()

    def run(out: Path) -> Path:
        import sae
        return sae.run(experiment_file(out, args.repetitions, args.selectivities), out=out).root
    one_run.main(args, analyse, run, "sae-emulation-")


if __name__ == "__main__":
    main()
