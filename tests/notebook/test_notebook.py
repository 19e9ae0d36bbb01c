"""docs/notebooks/selectivity.ipynb executed top to bottom by nbclient in a real IPython kernel:
its plan alone (pure), and the whole reduced sweep (the 1 % point, three readers, two
repetitions, no drift check) on the shared sae cluster (fixtures/sae.py), asserting on the cells'
outputs. The committed notebook carries no outputs."""
from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "selectivity.ipynb"
QUICK = {"selectivities": [1], "repetitions": 2}
CI = {"drift": False, "cluster.cores": "shared", "spark.jit": "quick"}
"""The run's settings besides :data:`QUICK`: no drift check, every host on every core and C1-only
JVMs (the main job in test_e2e checks the defaults)."""


def _with(nb, **params):
    """``nb`` with a cell setting ``params`` right after its parameters cell (as papermill does)."""
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params.items())))
    return nb


def _execute(nb, timeout: int) -> list[str]:
    """Run every cell in the notebook's directory, as Jupyter does; the text of each code cell's
    outputs (streams and plain results)."""
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    texts = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            texts.append("".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                                 for o in cell.get("outputs", [])))
    return texts


def _cell(nb, texts, needle: str) -> tuple[dict, str]:
    cells = [c for c in nb.cells if c.cell_type == "code"]
    i = next(i for i, c in enumerate(cells) if needle in c.source)
    return cells[i], texts[i]


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def test_notebook_plans_the_cut_sweep(tmp_path):
    """The cells up to the plan, in a real kernel: the tiny profile cut to 1 %."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells = nb.cells[:next(i for i, c in enumerate(nb.cells) if "sae.run(" in c.source)]
    texts = _execute(_with(nb, out=str(tmp_path / "out"), **QUICK), timeout=120)
    _, plan = _cell(nb, texts, "print(plan.text())")
    assert "experiment selectivity (profile tiny): 3 points x 2 repetitions (1 warm-up)" in plan
    assert set(re.findall(r"selectivity=1 reader=(offload|no-offload|vanilla)", plan)) == {"offload", "no-offload",
                                                                                           "vanilla"}


def test_notebook_runs_the_sweep_on_the_local_cluster(sae_cluster, figure):
    root, res = sae_cluster
    nb = _with(nbformat.read(NOTEBOOK, as_version=4), reservation=str(res.path), out=str(root / "notebook"),
               settings=CI, **QUICK)
    start = time.monotonic()
    texts = _execute(nb, timeout=1800)
    took = time.monotonic() - start
    # progress lines below the run cell, one per repetition with an ETA
    _, progress = _cell(nb, texts, "sae.run(")
    assert len(re.findall(r"repetition \d.*ETA", progress)) == 6, progress[-3000:]
    # the summary table: offload against both baselines
    _, summary = _cell(nb, texts, "run.summary")
    assert all(word in summary for word in ("no-offload", "vanilla", "bytes_x")), summary
    # figures inline, as images
    fig_cell, _ = _cell(nb, texts, "run.figures()")
    pngs = {p.name for p in (root / "notebook").rglob("report/*.png")}
    assert {"selectivity.png", "compute-side.png", "storage-phases.png", "storage-ops.png"} <= pngs, pngs
    assert sum("image/png" in o.get("data", {}) for o in fig_cell.outputs) == len(pngs), pngs
    # the readers at 1 %: a table with the three readers, then the bytes ratios
    _, at1 = _cell(nb, texts, "at1 = ")
    assert all(re.search(rf"^{r}\s", at1, re.M) for r in ("offload", "no-offload", "vanilla")), at1
    final = texts[-1].strip()
    m = re.fullmatch(r"at 1 % the compute side received ([\d.]+)x fewer bytes with offload than with "
                     r"no-offload and ([\d.]+)x fewer than with vanilla \(paper: 48.9x vs no-offload\)", final)
    assert m and float(m.group(1)) > 10 and float(m.group(2)) > 10, final
    figure(f"notebook executed in {took:.0f}s; final cell: {final}")
