"""A lookup of pickup times written into the query, through offload-index against offload, side by
side in one ``sae run`` of selectivity.py's tiny profile (1 M trips, each object linked under 4
names) with its statement replaced: ``SELECT * FROM trips WHERE tpep_pickup_datetime IN (...)``
of ``--keys`` times taken from the generated data. offload scans every object for the keys;
offload-index's OSDs answer the objects their index says hold none of them from the footer and
the index (docs/protocol.md, "Index"), its build made before the queries.

Prints per reader the medians (query time, bytes the class read, rows it scanned, its CPU, bytes
to the compute side) and offload-index's ratios against offload, then issue 62's aims for the OSD
index: a one-key lookup reads at most 1 % of offload's bytes at the OSDs, in at most 0.5x its time.

    python bench/osd_index_bench.py [--keys 1] [--object-size 4MiB] [--repetitions 5] [--out DIR]
    python bench/osd_index_bench.py --analyse RUN_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

import one_run

ROOT = Path(__file__).resolve().parents[1]
ROWS = 1_000_000   # selectivity.py's tiny profile
COLUMNS = {"total_s": "time s", "cls_read_bytes": "OSD read MB", "cls_rows_in": "rows scanned",
           "cls_total_s": "class CPU s", "compute_rx_bytes": "to compute MB"}
MB = ("cls_read_bytes", "compute_rx_bytes")


def lookup_keys(n: int, work: Path) -> list[str]:
    """``n`` pickup times of the generated trips (selectivity.py's data: its rows and seed), as
    Spark SQL literals, taken at evenly spaced rows."""
    import data_deploy
    import pyarrow.parquet as pq
    data_deploy.generate(ROWS, out=work / "trips")
    times = pq.read_table(sorted((work / "trips").glob("*.parquet")), columns=["tpep_pickup_datetime"]).column(0)
    return [f"TIMESTAMP_NTZ '{times[i * (len(times) // n)].as_py()}'" for i in range(n)]


def settings(keys: list[str], object_size: str, repetitions: int) -> list[str]:
    sql = f"SELECT * FROM trips WHERE tpep_pickup_datetime IN ({', '.join(keys)})"
    return [f"workload.sql={sql}", "sweep.cartesian.selectivity=[100]", "sweep.cartesian.reader=[offload, offload-index]",
            f"data.object_size={object_size}", f"repetitions={repetitions}", "drift=false"]


def analyse(run: Path) -> bool:
    """Print the table, the ratios and the aims; True when every aim is met."""
    sys.path.insert(0, str(ROOT / "experiments"))
    import sae
    df = sae.load_results(run)
    df = df[~df["warmup"]]
    med = df.groupby("reader")[list(COLUMNS)].median()
    print(f"run: {run}\n{'reader':<14}" + "".join(f"{v:>15}" for v in COLUMNS.values()))
    for reader, row in med.iterrows():
        print(f"{reader:<14}" + "".join(f"{row[c] / (1e6 if c in MB else 1):>15.3f}" for c in COLUMNS))
    ratio = med.loc["offload-index"] / med.loc["offload"]
    print(f"{'index/offload':<14}" + "".join(f"{ratio[c]:>14.3f}x" for c in COLUMNS))
    aims = [(f"OSD bytes {ratio['cls_read_bytes']:.1%} of offload's, at most 1 %", ratio["cls_read_bytes"] <= 0.01),
            (f"time {ratio['total_s']:.2f}x offload's, at most 0.5x", ratio["total_s"] <= 0.5)]
    return one_run.aims_met(aims)


def main() -> None:
    ap = one_run.parser(__doc__)
    ap.add_argument("--keys", type=int, default=1, help="pickup times looked up (default 1)")
    ap.add_argument("--object-size", default="4MiB", help="bytes per object (default 4MiB: 8 objects of data)")
    ap.add_argument("--repetitions", type=int, default=5)
    args = ap.parse_args()

    def run(out: Path) -> Path:
        import sae
        keys = lookup_keys(args.keys, out)
        return sae.run(ROOT / "experiments" / "selectivity.py", out=out, options=sae.RunOptions(teardown=True),
                       set=settings(keys, args.object_size, args.repetitions)).root
    one_run.main(args, analyse, run, "sae-osd-index-")


if __name__ == "__main__":
    main()
