"""What is drawn from runs: the figures (:mod:`.figures`, :mod:`.axis_figures`,
:mod:`.host_figures`, drawn with :mod:`.plotting`), a run's report (:mod:`.report`), the pages
(:mod:`.pages`) and the results page (:mod:`.gallery`). Imports planning, the run's state and the
analysis."""
