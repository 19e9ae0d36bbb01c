"""Results: a run's directory (:mod:`.results`) and ledger (:mod:`.ledger`), the tidy results
table, the storage side's work (:mod:`.storage_work`), the figures (:mod:`.figures`, drawn with
:mod:`.plotting`) and the report (:mod:`.report`), the notebook handle (:mod:`.handle`) and the
cost model fitted on runs (:mod:`.advice`).
Imports planning, never running."""
from .advice import advise
from .handle import RunHandle
from .ledger import RunLedger
from .report import make_report, summary, summary_text
from .results import RunDir, load_results, write_results

__all__ = ["RunDir", "RunLedger", "RunHandle", "load_results", "write_results", "make_report", "summary",
           "summary_text", "advise"]
