"""Planning: what an experiment declares (:mod:`.spec`, the readers of :mod:`.readers`, the
profiles of :mod:`.profiles`, host capacities in :mod:`.capacities`), loaded from its file
(:mod:`.loader`) and ordered into steps (:mod:`.planner`). Imports no other group of sae's."""
from .loader import load_experiment
from .planner import Plan, plan
from .spec import CephSpec, ClusterSpec, DataSpec, Experiment, MonitorSpec, SparkSpec, Sweep, Workload

__all__ = ["load_experiment", "plan", "Plan", "Experiment", "ClusterSpec", "SparkSpec", "CephSpec", "MonitorSpec",
           "DataSpec", "Workload", "Sweep"]
