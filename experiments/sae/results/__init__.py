"""Results, in three groups whose imports point one way (run ← analysis ← drawing): a run's own
state (:mod:`.run`: its directory and results table, ledger, provenance, what it recorded), what
is computed from runs (:mod:`.analysis`: statistics, the summary, comparisons, history,
calibration, the cost model and its advice) and what is drawn from them (:mod:`.drawing`: figures,
the report, the pages, the gallery); beside them the notebook's handle on a run (:mod:`.handle`).
Imports planning, never running."""
from .analysis.advice import advise
from .analysis.summary import summary, summary_text
from .drawing.report import make_report
from .handle import RunHandle
from .run.directory import RunDir, load_results, write_results
from .run.ledger import RunLedger

__all__ = ["RunDir", "RunLedger", "RunHandle", "load_results", "write_results", "make_report", "summary",
           "summary_text", "advise"]
