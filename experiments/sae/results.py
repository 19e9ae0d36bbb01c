"""The result directory of one experiment run, and the tidy results table.

Layout (spec and plan are written first, before any node is touched)::

    <out>/<experiment>/<YYYYmmdd-HHMMSS>-<profile>/
        spec.yaml  plan.yaml  versions.lock  ledger.json  stages.yaml  reservation.yaml  layout.yaml
        raw/<point>-a<attempt>.jsonl     per-repetition timings as the Spark application wrote them
        logs/<point>-a<attempt>/         driver log, spark-submit output
        metrics/<point>/rep<k>/          Prometheus window of each repetition (parquet, AUC, PNGs)
        results.parquet                  one row per point × repetition (done ones)
        report/*.png
    <out>/<experiment>/latest -> the newest run directory
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import time
from pathlib import Path

import pandas as pd
import yaml

from metareserve.errors import UsageError

from .spec import SECTIONS

COMPONENTS = ("sae", "metareserve", "spark_deploy", "rados_deploy", "data_deploy", "monitor_deploy",
              "pyspark", "pyarrow", "pandas")


def versions() -> dict:
    """Versions of the controller-side components (part of every ledger key)."""
    out = {}
    for name in COMPONENTS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


@dataclasses.dataclass
class RunDir:
    """Paths inside one run directory."""

    root: Path

    def __post_init__(self):
        self.root = Path(self.root)

    spec = property(lambda self: self.root / "spec.yaml")
    plan = property(lambda self: self.root / "plan.yaml")
    versions = property(lambda self: self.root / "versions.lock")
    ledger = property(lambda self: self.root / "ledger.json")
    stages = property(lambda self: self.root / "stages.yaml")
    reservation = property(lambda self: self.root / "reservation.yaml")
    layout = property(lambda self: self.root / "layout.yaml")
    raw = property(lambda self: self.root / "raw")
    logs = property(lambda self: self.root / "logs")
    metrics = property(lambda self: self.root / "metrics")
    results = property(lambda self: self.root / "results.parquet")
    report = property(lambda self: self.root / "report")

    @classmethod
    def new(cls, out, experiment: str, profile: str | None) -> "RunDir":
        """A fresh run directory under ``out/<experiment>/`` with the ``latest`` link updated."""
        parent = Path(out) / experiment
        stamp = time.strftime("%Y%m%d-%H%M%S")
        root = parent / f"{stamp}-{profile or 'default'}"
        n = 1
        while root.exists():
            n += 1
            root = parent / f"{stamp}-{profile or 'default'}-{n}"
        for d in ("raw", "logs", "metrics", "report"):
            (root / d).mkdir(parents=True, exist_ok=True)
        link = parent / "latest"
        tmp = parent / f".latest-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(root.name)
        os.replace(tmp, link)
        return cls(root)

    @classmethod
    def find(cls, path) -> "RunDir":
        """The run directory at ``path`` (or the ``latest`` one under it); UsageError otherwise."""
        p = Path(path)
        for cand in (p, p / "latest"):
            if (cand / "ledger.json").exists():
                return cls(cand.resolve())
        subs = sorted(p.glob("*/latest")) if p.is_dir() else []
        if len(subs) == 1:
            return cls(subs[0].resolve())
        raise UsageError(f"{p}: not an sae run directory (no ledger.json); pass the directory "
                         f"'sae run' printed, or its parent holding 'latest'")

    def write_yaml(self, path: Path, data) -> None:
        """Write YAML atomically."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
        os.replace(tmp, path)

    def read_yaml(self, path: Path):
        return yaml.safe_load(path.read_text()) if path.exists() else None


def flat_params(params: dict) -> dict:
    """One column per parameter, named by field (field names are unique across sections);
    dict-valued parameters (layout, conf) become JSON text."""
    out = {}
    for section in SECTIONS:
        for k, v in params[section].items():
            out[k] = json.dumps(v, sort_keys=True) if isinstance(v, dict) else v
    return out


def tidy(run: RunDir) -> pd.DataFrame:
    """The results table of a run: one row per done point × repetition, with timings,
    parameters (one column each), warm-up flag and metric AUCs."""
    from .ledger import RunLedger
    ledger = RunLedger.load(run.ledger)
    plan = run.read_yaml(run.plan)
    points = {p["id"]: p for p in plan["points"]}
    order = {pid: i for i, pid in enumerate(plan["order"])}
    rows = []
    for e in ledger.entries.values():
        if e["state"] != "done":
            continue
        p = points[e["point"]]
        result = e.get("result") or {}
        row = {"experiment": plan["experiment"], "profile": plan["profile"], "point": e["point"],
               "order": order[e["point"]], "repetition": e["repetition"], "warmup": e["warmup"],
               "start": e["start"], "end": e["end"],
               "init_s": result.get("init_s"), "compute_s": result.get("compute_s"),
               "total_s": result.get("total_s"), "rows_out": result.get("rows"),
               "checksum": result.get("checksum"), "attempts": e["attempts"]}
        row.update(flat_params(p["params"]))
        row.update({f"auc_{k}": v for k, v in (e.get("auc") or {}).items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    if not df.empty:
        df = df.sort_values(["order", "repetition"]).reset_index(drop=True)
    return df


def write_results(run: RunDir) -> Path:
    """Write ``results.parquet`` from the ledger; returns its path."""
    df = tidy(run)
    tmp = run.results.with_name("results.parquet.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, run.results)
    return run.results


def load_results(path) -> pd.DataFrame:
    """The tidy results of a run directory (or of the ``latest`` run under ``path``).

    One row per point × repetition: ``point``, ``repetition``, ``warmup``, ``init_s``,
    ``compute_s``, ``total_s``, ``rows_out`` (rows the query kept), ``checksum``, one column per
    parameter (``rows`` is the dataset's row count)
    (``selectivity``, ``object_size``, ``offload``, ...) and ``auc_*`` metric areas.
    Filter ``~df.warmup`` for statistics.
    """
    run = RunDir.find(path)
    if run.results.exists():
        return pd.read_parquet(run.results)
    return tidy(run)
