"""sae: compute-to-storage offloading experiments from reservation to plot.

Notebook API: :func:`load_experiment`, :func:`plan`, :func:`run`, :func:`resume`,
:func:`status`, :func:`load_results`, :func:`make_report`, :func:`figures`, :func:`run_catalogue`
(every experiment file of a directory, one index page); ``run`` and
``resume`` return a :class:`RunHandle` (run directory, results, summary, figures).
"""
from .catalogue import run_catalogue
from .handle import RunHandle, figures
from .ledger import RunLedger
from .loader import load_experiment
from .planner import Plan, plan
from .report import make_report
from .results import RunDir, load_results
from .runner import RunOptions, resume, run, status
from .spec import (CephSpec, ClusterSpec, DataSpec, Experiment, MonitorSpec, SparkSpec, Sweep,
                   Workload)

__all__ = ["Experiment", "ClusterSpec", "SparkSpec", "CephSpec", "MonitorSpec", "DataSpec",
           "Workload", "Sweep", "load_experiment", "plan", "Plan", "run", "resume", "status",
           "RunOptions", "RunLedger", "load_results", "make_report", "RunDir", "RunHandle", "figures",
           "run_catalogue"]
