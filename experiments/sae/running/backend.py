"""Backend-only reads (the thesis's fig. 16): a ``run`` stage that times the ``sae`` object class's
``scan`` of every object of the point's dataset from a librados client on the driver host,
without Spark (``app/backend_scan.py``), for experiments that set ``stages={"run":
sae.running.backend.stage_run}`` (experiments/backend.py).

The request is the one the connector sends for the point's workload, encoded with
:class:`sae.connector.protocol.Request`: the filter ``column < threshold`` (selectivity), the
projection ``workload.columns`` (empty: every column), the reply codec and ``batch_size`` rows per
batch, sent as the connector's cephx user (``sae-scan``: CephFS metadata and calls of the class,
nothing else). Each repetition records ``init_s`` (listing the files and mapping them to objects),
``compute_s`` (every scan answered), ``rows``, and the extra result columns ``objects``,
``batches`` (Arrow record batches in the replies) and ``reply_bytes``, and the class's own stats
summed over the replies (``scan``: the ``cls_*`` columns, as for the connector's reads); its Prometheus window is
exported as for Spark points (the storage side's CPU during the scans).
"""
from __future__ import annotations

import json

from metareserve import StageReport
from metareserve.errors import OperationalError

from ..app import BACKEND_SCAN
from ..app.backend_scan import TAG
from ..connector.protocol import decode_error, reply_framing
from .context import Stack, StageInput, StageResult
from .execute import export_windows, scan_client_config, scan_request
from .stages import _stack

STAGE = "sae backend scan"
IN_FLIGHT = 8
"""Scan calls outstanding at once: the connector's 4 per task on the tiny cluster's 2 task slots."""


def stage_run(given: StageInput) -> StageResult:
    """Scan every object of the point's dataset once per pending repetition (see the module)."""
    with _stack(given, given.point) as stack:
        return StageResult(_scan(given, stack), stack=stack)


def _scan(given: StageInput, stack: Stack) -> StageReport:
    """What :func:`stage_run` does on the point's ``stack``."""
    session, point, report = given.session, given.point, StageReport("run")
    ledger = session.ledger
    driver, pending = stack.spark.driver_node, ledger.pending(point.id)
    remote = f"{given.hosts.reservation.node_dir(driver, 'sae')}/{session.run.root.name}/{BACKEND_SCAN.name}"
    cluster = given.hosts.cluster
    cluster.put(str(BACKEND_SCAN), remote, nodes=[driver], stage=STAGE)
    cfg = {**scan_client_config(stack, point, scan_request(point), conf=stack.ceph.shared_client_conf,
                                in_flight=IN_FLIGHT, reps=pending),
           "reply": reply_framing(), "pause": session.experiment.pause}
    ledger.mark(point.id, pending, "running")
    out = cluster.run([stack.spark.python(driver), remote, json.dumps(cfg)], nodes=[driver], stage=STAGE,
                      timeout=600 + 120 * len(pending))[driver]["stdout"]
    lines = [json.loads(line[len(TAG):]) for line in out.splitlines() if line.startswith(TAG)]
    done = {}
    for r in lines:
        if r["failures"] or r["error_frame"]:
            error = r["failures"][0] if r["failures"] else str(decode_error(bytes.fromhex(r["error_frame"])))
            ledger.mark(point.id, pending, "failed", error=f"[{driver} {STAGE}] {error}")
            raise OperationalError(f"[{driver} {STAGE}] point {point.id}: {error}")
        done[r["repetition"]] = r
    ledger.mark(point.id, list(done), "done",
                timings={k: {"start": r["start"], "end": r["end"]} for k, r in done.items()},
                results={k: {key: r[key] for key in ("init_s", "compute_s", "total_s", "rows", "objects",
                                                       "batches", "reply_bytes", "scan")} for k, r in done.items()})
    ledger.record_aucs(point.id, export_windows(session, stack.monitoring, [(point, {
        k: {"start": r["start"], "end": r["end"]} for k, r in done.items()})])[0])
    missing = sorted(set(pending) - set(done))
    if missing:
        ledger.mark(point.id, missing, "failed", error=f"[{driver} {STAGE}] no result line for {missing}")
        raise OperationalError(f"[{driver} {STAGE}] point {point.id}: repetitions {missing} gave no result")
    objects = {r["objects"] for r in done.values()}
    report.add(driver, True, f"point {point.id}: {len(done)} repetitions, {max(objects)} objects scanned each")
    return report
