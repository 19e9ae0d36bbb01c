"""sae: compute-to-storage offloading experiments from reservation to plot.

Notebook API: :func:`load_experiment`, :func:`plan`, :func:`run`, :func:`resume`,
:func:`status`, :func:`load_results`, :func:`make_report`, :func:`figures`, :func:`run_catalogue`
(every experiment file of a directory, one index page), :func:`compare` (runs at the points they
share), :func:`history` (every run of an experiment, with outliers flagged) and :func:`advise` (a
cost model fitted on runs: each reader's predicted time, where offloading stops paying); ``run`` and
``resume`` return a :class:`RunHandle` (run directory, results, summary, figures).

Groups, imports pointing one way: :mod:`sae.planning` ← :mod:`sae.results` ← :mod:`sae.running`;
beside them the connector (:mod:`sae.connector`) and the programs run on nodes (:mod:`sae.app`).
"""
from .planning import (CephSpec, ClusterSpec, DataSpec, Experiment, MonitorSpec, Plan, SparkSpec, Sweep, Workload,
                       load_experiment, plan, profiles, readers)
from .results import RunDir, RunHandle, RunLedger, load_results, make_report
from .results.analysis.advice import advise
from .results.analysis.compare import compare
from .results.analysis.history import history
from .results.handle import figures
from .running import RunOptions, resume, run, run_catalogue, status

__all__ = ["Experiment", "ClusterSpec", "SparkSpec", "CephSpec", "MonitorSpec", "DataSpec",
           "Workload", "Sweep", "load_experiment", "plan", "Plan", "run", "resume", "status",
           "RunOptions", "RunLedger", "load_results", "make_report", "RunDir", "RunHandle", "figures",
           "run_catalogue", "profiles", "readers", "compare", "history", "advise"]
