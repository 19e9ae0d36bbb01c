"""Pure: the results page (sae.results.drawing.gallery). The committed page is what `sae gallery` makes
of the committed recorded runs, every figure and table stamped with its run and commit; recording
a run keeps what the page draws from (the representative repetitions' metric windows, the event
log cut to what the figures sum) and nothing else, and a failed recording leaves nothing."""
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from PIL import Image

import sae
from metareserve.errors import UsageError
from sae.cli import main as sae_cli
from sae.results.drawing import gallery
from sae.results.run.eventlog import input_batches
from sae.results.run.directory import RunDir, read_results, write_results
from sae.planning.spec import Sweep
from test_ledger_results import READERS, _fill, _run

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "runs"


DOCS = ROOT / "docs"


def test_the_committed_page_is_what_the_committed_runs_give():
    assert gallery.check(RUNS, DOCS, ROOT / "experiments") == [], \
        "docs/ is stale: run 'sae gallery' from the repository root and commit measurements.md and gallery/"


def test_every_figure_and_table_is_stamped_with_its_run_and_commit():
    text = (DOCS / gallery.PAGE).read_text()
    for run in gallery.recorded_runs(RUNS):
        rec = yaml.safe_load((run.root / gallery.RECORDED).read_text())
        stamp = gallery.stamp(run)
        assert stamp.startswith(f"run {rec['run']}, sae {rec['sae']['commit'][:12]} (")
        section = text[text.index(f"\n## {rec['experiment']}\n"):]
        end = section.find("\n## ", 1)   # the next experiment's
        section = section if end < 0 else section[:end]
        figures = sorted((DOCS / gallery.GALLERY / rec["experiment"]).glob("*.png"))
        assert figures
        for png in figures:
            with Image.open(png) as image:   # a real PNG, its stamp in its metadata
                assert image.size[0] > 300 and image.text["Source"] == stamp
            assert f"![{png.stem}](gallery/{rec['experiment']}/{png.name})\n*{png.name}: {stamp}.*" in section
        own = {"writes": ("| job | writer |", "each writer against sae-ceph"),   # a table of its own kind
               "indexed": ("| measure |", "the key queries beside the paper")}
        if rec["experiment"] in own or read_results(run)["reader"].nunique() > 1:   # a table of readers (autoscaler's has one)
            head, title = own.get(rec["experiment"], ("| sel % | ", "offload against each baseline"))   # then any other axis
            assert f"*{stamp}.*" in section[section.index(title):section.index(head)]
        for what in ("sae commit", "Ceph", "Spark", "JDK", "kernel", "CPU"):
            assert f"\n| {what} | " in section


def test_the_selectivity_run_states_a_headline_per_selectivity_and_its_caveats():
    text = (DOCS / gallery.PAGE).read_text()
    section = text[text.index("\n## selectivity\n"):]
    section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
    plan = RunDir(RUNS / "selectivity").load_plan()
    sels = sorted({p.spec.workload.selectivity for p in plan.points})
    heads = [line for line in section.splitlines() if line.startswith("- At ")]
    assert [h.split()[2] for h in heads] == [f"{s:g}" for s in sels]
    for caveat in ("(memstore)", "network namespaces on one machine", "inflated by hard links",
                   "within-run intervals only"):
        assert caveat in section, caveat


def test_experiments_without_a_recorded_run_keep_their_heading():
    text = (DOCS / gallery.PAGE).read_text()
    names = {f.stem for f in (ROOT / "experiments").glob("*.py")}
    recorded = {r.root.name for r in gallery.recorded_runs(RUNS)}
    assert text.count("No recorded run yet:") == len(names - recorded)
    for name in names:
        assert f"\n## {name.replace('_', '-')}\n" in text


def test_recorded_runs_stay_small_and_name_no_local_path():
    def strings(value):
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []
    for run in gallery.recorded_runs(RUNS):
        size = sum(f.stat().st_size for f in run.root.rglob("*") if f.is_file())
        assert size < 350_000, f"{run.root}: {size} bytes"   # the largest: indexed.py's 228 repetitions
        for f in [*run.root.rglob("*.yaml"), run.versions]:
            assert not [s for s in strings(yaml.safe_load(f.read_text())) if s.startswith("/")], f


def _event_log(run: RunDir, tasks: list[tuple[float, int]]) -> None:
    """A zstd rolling event log whose tasks finish at the given times with their batch counts,
    among events the page does not read."""
    import pyarrow as pa
    d = run.logs / "s1-1-p" / "20261128-1" / "events" / "eventlog_v2_app-1-0000"
    d.mkdir(parents=True)
    lines = [json.dumps({"Event": "SparkListenerJobStart", "Job ID": 1})]
    lines += [json.dumps({"Event": "SparkListenerTaskEnd", "Task Info": {
        "Finish Time": int(t * 1000), "Accumulables": [{"Name": "number of input batches", "Update": str(n)},
                                                       {"Name": "peak memory", "Update": "123456"}]},
        "Task Metrics": {"Executor Run Time": 5}}) for t, n in tasks]
    with pa.output_stream(str(d / "events_1_app-1-0000.zstd"), compression="zstd") as f:
        f.write(("\n".join(lines) + "\n").encode())


def test_recording_keeps_what_the_page_draws_and_nothing_else(tmp_path):
    p, run, ledger = _run(tmp_path / "results", Sweep(cartesian={"selectivity": [1, 100], "reader": READERS}),
                          figures=("batchsize", "resources-disk"))
    _fill(p, run, ledger, np.random.default_rng(5))
    checkout = tmp_path / "checkout"
    run.write_yaml(run.versions, {"version": 2, "sae": {"commit": "ab" * 20, "dirty": False, "checkout": str(checkout)},
                                  "command": f"sae run {checkout}/experiments/synthetic.py --out /data/results",
                                  "nodes": {}})
    run.write_yaml(run.spec, {"version": 1, "file": str(checkout / "experiments" / "synthetic.py"),
                              "experiment": {"name": "synthetic", "description": "A synthetic sweep"}})
    run.write_yaml(run.root / "lease.yaml", {"holder": "results/synthetic/20260101-000000-tiny"})
    (run.raw / "s1-1-p.jsonl").write_text("{}\n")
    write_results(run)
    df = sae.load_results(run.root)
    _event_log(run, [(float(s) + 0.1, 3) for s in df["start"]])
    sae.make_report(run.root)

    result = CliRunner().invoke(sae_cli, ["gallery", "--record", str(run.root.parent / "latest"),
                                          "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "docs"),
                                          "--experiments", str(ROOT / "experiments")])
    assert result.exit_code == 0, result.output
    kept = RunDir(tmp_path / "runs" / "synthetic")
    rec = yaml.safe_load((kept.root / gallery.RECORDED).read_text())
    assert rec["run"] == "20260101-000000-tiny" and rec["sae"] == {"commit": "ab" * 20, "dirty": False}
    assert not any((kept.root / d).exists() for d in ("ledger.json", "raw", "report", "lease.yaml"))
    # no path of the machine it ran on
    assert kept.read_yaml(kept.spec)["file"] == "experiments/synthetic.py"
    assert "checkout" not in kept.read_yaml(kept.versions)["sae"]
    assert kept.read_yaml(kept.versions)["command"] == "sae run experiments/synthetic.py --out /data/results"
    # one repetition per reader (the median one at 1 %) keeps its window, only the files the figures read
    windows = sorted(p.relative_to(kept.root).as_posix() for p in kept.metrics.rglob("*") if p.is_file())
    assert windows == sorted(rec["windows"]) and len(windows) == 2 * len(READERS)
    assert {Path(w).name for w in windows} == {"counters.parquet", "metrics.parquet"}
    # the event log, cut to task ends and the metric the figures sum, gives the same batches
    assert input_batches(kept.root, df).tolist() == input_batches(run.root, df).tolist() == [3.0] * len(df)
    log = (kept.root / rec["event_logs"][0]).read_text()
    assert "peak memory" not in log and "JobStart" not in log
    assert read_results(kept).equals(read_results(run))
    page = (tmp_path / "docs" / "measurements.md").read_text()
    assert "\n## synthetic\n" in page and "`20260101-000000-tiny`" in page
    drawn = sorted((tmp_path / "docs" / "gallery" / "synthetic").glob("*.png"))
    assert [p.name for p in drawn] == ["batchsize.png", "resources-cpu.png", "resources-disk.png", "resources-net.png"]
    for png in drawn:
        with Image.open(png) as image:
            assert image.text["Source"] == gallery.stamp(kept) == "run 20260101-000000-tiny, sae " + "ab" * 6 + " (clean)"

    # --check: up to date, then one line per stale file, exit 1, nothing written
    check = ["gallery", "--check", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "docs"),
             "--experiments", str(ROOT / "experiments")]
    assert CliRunner().invoke(sae_cli, check).exit_code == 0
    drawn[0].unlink()
    (drawn[0].parent / "old.png").write_bytes(b"")
    (tmp_path / "docs" / "measurements.md").write_text(page + "edited\n")
    result = CliRunner().invoke(sae_cli, check)
    assert result.exit_code == 1
    assert [line.split(": ", 1)[1] for line in result.output.splitlines()[:3]] == [
        "not what the recorded runs give", "missing", "no recorded run draws it"], result.output
    assert "run 'sae gallery'" in result.output.splitlines()[-1]
    assert (tmp_path / "docs" / "measurements.md").read_text() == page + "edited\n"
    assert not drawn[0].exists()


def test_a_failed_recording_leaves_nothing(tmp_path):
    p, run, ledger = _run(tmp_path / "results", Sweep(cartesian={"selectivity": [1]}))
    runs = tmp_path / "runs"
    runs.mkdir()
    with pytest.raises(UsageError, match="no results.parquet; run 'sae report"):
        gallery.record(run.root, runs)
    assert list(runs.iterdir()) == []
    with pytest.raises(UsageError, match="not an sae run directory"):
        gallery.record(tmp_path / "nowhere", runs)
    with pytest.raises(UsageError, match="no such directory of recorded runs"):
        gallery.generate(tmp_path / "none", tmp_path / "out")
    assert not (tmp_path / "out").exists()
