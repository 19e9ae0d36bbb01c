"""Running: the runner (:mod:`.runner`) and its stages (:mod:`.stages`; the run stage in
:mod:`.execute`, the connector's build in :mod:`.reader`), what a stage takes and gives
(:mod:`.context`: :class:`StageInput`, :class:`StageResult`), the console, cleaning up
(:mod:`.clean`) and the catalogue of experiment files (:mod:`.catalogue`). Imports planning and
results."""
from .catalogue import run_catalogue
from .context import StageInput, StageResult
from .runner import RunOptions, resume, run, status

__all__ = ["run", "resume", "status", "RunOptions", "run_catalogue", "StageInput", "StageResult"]
