"""What is computed from runs' results: statistics (:mod:`.statistics`), runs compared
(:mod:`.compare`) and their history (:mod:`.history`), the A/A calibration (:mod:`.calibration`),
the cost model (:mod:`.cost_model`) and its advice (:mod:`.advice`). Imports planning and the
run's state (:mod:`sae.results.run`), never drawing."""
