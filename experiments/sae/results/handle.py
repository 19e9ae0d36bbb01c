"""What :func:`sae.run` and :func:`sae.resume` return: a handle on the run for a notebook.

    h = sae.run("experiments/selectivity.py", options=sae.RunOptions(reservation="cluster.yaml"))
    h.root            # the run directory
    h.results         # results.parquet as a DataFrame (sae.load_results)
    h.summary         # offload against each baseline per selectivity (sae.results.analysis.summary.summary)
    h.figures()       # the report's figures as matplotlib Figures, by file name

Interrupting (Ctrl-C, or the kernel's interrupt) stops the Spark application and leaves the run
resumable, as on the command line: ``sae.resume("results/<experiment>")`` continues the latest.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from .analysis import summary as summaries
from .drawing import plotting, report
from .run.directory import RunDir, load_results


@dataclasses.dataclass(frozen=True)
class RunHandle:
    """A finished run: its directory, tidy results and summary (read when the handle is made)."""

    root: Path
    results: pd.DataFrame = dataclasses.field(repr=False)
    summary: pd.DataFrame = dataclasses.field(repr=False)

    @classmethod
    def of(cls, path) -> "RunHandle":
        """The handle of the run directory at ``path`` (or of the latest run under it)."""
        root = RunDir.find(path).root
        df = load_results(root)
        return cls(root, df, summaries.summary(df) if not df.empty else pd.DataFrame())

    def summary_text(self) -> str:
        """The summary as ``sae report`` prints it."""
        return summaries.summary_text(self.summary)

    def figures(self) -> dict:
        """file name → matplotlib Figure of every figure in the run's report (redrawn, as
        :func:`sae.make_report` draws them; the PNG files are rewritten too)."""
        return figures(self.root)


def figures(path) -> dict:
    """file name → matplotlib Figure of the report of the run at ``path`` (see :class:`RunHandle`)."""
    with plotting.keeping_figures() as kept:
        report.make_report(path)
    return {p.name: fig for p, fig in kept}
