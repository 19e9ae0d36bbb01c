"""The notebook API on a synthetic run (no nodes): the handle sae.run/sae.resume return, the
report's figures as matplotlib Figures, section-qualified parameter columns (old run
directories still load)."""
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

import sae
from sae.results.run.directory import write_results
from sae.planning.spec import Sweep

_spec = importlib.util.spec_from_file_location(
    "synthetic_run", Path(__file__).resolve().parents[1] / "sae_tests" / "test_ledger_results.py")
synthetic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synthetic)


def _synthetic(tmp_path):
    p, run, ledger = synthetic._run(tmp_path, Sweep(cartesian={"selectivity": [1, 100], "reader": synthetic.READERS}),
                                    figures=("selectivity", "compute-side"))
    synthetic._fill(p, run, ledger, np.random.default_rng(3))
    write_results(run)
    return p, run


def test_handle_has_directory_results_summary_and_figures(tmp_path):
    p, run = _synthetic(tmp_path)
    h = sae.RunHandle.of(tmp_path / "synthetic")            # the latest run under it
    assert h.root == run.root and len(h.results) == len(p.points) * 3
    assert set(h.summary["baseline"]) == {"no-offload", "vanilla"} and set(h.summary["selectivity"]) == {1, 100}
    assert "48.9x" in h.summary_text()
    figs = h.figures()
    assert sorted(figs) == ["compute-side.png", "resources-cpu.png", "resources-net.png", "selectivity.png"]
    assert all(isinstance(f, Figure) and f.axes for f in figs.values())
    assert figs["selectivity.png"].axes[0].get_legend_handles_labels()[1] == sorted(synthetic.READERS)
    assert (run.report / "selectivity.png").stat().st_size > 5000


def test_ambiguous_parameters_carry_their_section_and_old_runs_load(tmp_path):
    _, run = _synthetic(tmp_path)
    df = sae.load_results(run.root)
    assert {"cluster_layout", "spark_conf", "monitor_enabled", "data_input"} <= set(df.columns)
    assert not {"layout", "conf", "enabled", "input"} & set(df.columns)
    assert df["monitor_enabled"].all() and set(df["spark_conf"]) == {"{}"}
    old = df.rename(columns={"cluster_layout": "layout", "spark_conf": "conf", "monitor_enabled": "enabled",
                             "data_input": "input"})
    old.to_parquet(run.results)                             # as a run written before the rename
    pd.testing.assert_frame_equal(sae.load_results(run.root), df)
