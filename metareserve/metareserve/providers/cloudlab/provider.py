"""The cloudlab provider: reserve, reattach, renew and release raw PCs on CloudLab.

Replacement policy (CloudLab's aggregates allocate, renew and delete a slice's slivers only all
together, so a single bad node cannot be swapped out of a LAN): after Provision, the provider
polls Status until every node is ``geni_ready``, stopping early at the first ``geni_failed`` node
or after ``wait`` minutes. Then the health gate runs on every node. If any node failed, never came
up, or failed the gate, the provider deletes the slivers and requests the whole set again, up to
``attempts`` times in all; after the last failed attempt everything is deleted and one error names
the slice, the bad nodes and why. When every node fails the gate the cause is on the user's side
(SSH key), so there is no further attempt. Reattaching to a slice that already has slivers never deletes
anything: bad nodes are reported with what to do.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ... import health
from ...errors import NothingToDo, OperationalError, UsageError
from ...log import node_log
from ...model import Node, Reservation
from .. import Provider
from .client import SliceClient, timestamp
from .config import Credentials, Request, load_credentials, make_request
from .rspec import build_request, node_names, parse_manifest
from .transport import HttpsTransport, RecordingTransport, ReplayTransport, Transport

ENV_REPLAY, ENV_RECORD = "SAE_CLOUDLAB_REPLAY", "SAE_CLOUDLAB_RECORD"
READY, FAILED = "geni_ready", "geni_failed"
STAGE = "cloudlab reserve"


def decide(states: dict[str, tuple[str, str]], names: list[str], *, timed_out: bool) -> dict[str, str] | None:
    """Pure policy step: node → (operational state, error) from Status, to the bad nodes with a
    reason ({} when all are ready), or None while waiting is still worthwhile."""
    failed = {n: f"{FAILED}: {states[n][1] or 'no details'}" for n in names
              if n in states and states[n][0] == FAILED}
    if failed:
        return failed
    pending = {n: f"not ready ({states.get(n, ('missing', ''))[0]})" for n in names
               if states.get(n, ("missing", ""))[0] != READY}
    if not pending:
        return {}
    return pending if timed_out else None


class CloudLabProvider(Provider):
    """Raw PCs on one CloudLab site over GENI AM API v3 (geni-lib builds the requests).

    ``transport`` replaces the HTTPS transport (tests replay recorded exchanges); ``gate`` is
    the health gate (default :func:`metareserve.health.check`).
    """

    gates_nodes = True

    name = "cloudlab"

    def __init__(self, transport: Transport | None = None, gate=None):
        self.transport, self.gate = transport, gate or health.check

    def _client(self, creds: Credentials, *, site: str, slice_name: str, backoff: float = 5.0) -> SliceClient:
        transport = self.transport
        if transport is None and os.environ.get(ENV_REPLAY):
            transport = ReplayTransport(os.environ[ENV_REPLAY])
        if transport is None:
            transport = HttpsTransport(creds.cert, creds.key, creds.ca_bundle)
            if os.environ.get(ENV_RECORD):
                transport = RecordingTransport(transport, os.environ[ENV_RECORD])
        return SliceClient(transport, creds, site=site, slice_name=slice_name, backoff=backoff)

    def check_request(self, *, name: str, nodes: int | None = None, **options) -> None:
        super().check_request(name=name, nodes=nodes)
        make_request(name=name, nodes=nodes, **options)

    def reserve(self, *, name: str, nodes: int | None = None, **options) -> Reservation:
        """Reserve ``nodes`` raw PCs as slice ``name`` (or reattach to its slivers).

        Options (Python values or ``-O`` strings): site, hardware, image, hours, lan, subnet,
        wait (minutes), poll and backoff (seconds), attempts, gate, credentials (file).
        Raises UsageError for bad options or credentials, OperationalError naming slice, node
        and call when CloudLab refuses or nodes stay bad after every attempt.
        """
        req = make_request(name=name, nodes=nodes, **options)
        creds = load_credentials(req.credentials)
        client = self._client(creds, site=req.site, slice_name=name, backoff=req.backoff)
        client.slice_credential(create_hours=req.hours)
        slivers = client.status()
        if slivers:
            return self._reattach(client, req, creds, slivers)
        rspec = build_request(req, component_manager_id=client.aggregate.component_manager_id)
        for attempt in range(1, req.attempts + 1):
            res, bad, gated = self._attempt(client, req, creds, rspec, attempt)
            if res is not None:
                return res
            if gated and len(bad) == req.nodes:
                hint = ("every node failed the health gate, so the cause is likely here, not on CloudLab: "
                        "check ssh_private_key in the credentials file and that the key is loaded")
                break
        else:
            hint = "try another hardware type or site, or more attempts (-O attempts=N)"
        raise OperationalError(
            f"[{name} {STAGE}] slice {name!r} at {client.am_name}: bad nodes after attempt "
            f"{attempt} of {req.attempts}, everything released: "
            + "; ".join(f"{n}: {r}" for n, r in sorted(bad.items())) + f"; {hint}")

    def _attempt(self, client: SliceClient, req: Request, creds: Credentials, rspec: str,
                 attempt: int) -> tuple[Reservation | None, dict[str, str], bool]:
        """Allocate, provision, wait and gate once: (reservation, {}, gated) when all nodes are
        good, else (None, bad nodes, whether the gate ran) after deleting the slivers."""
        node_log(req.slice_name, STAGE, f"attempt {attempt}/{req.attempts}: requesting {req.nodes} "
                                        f"{req.hardware} nodes at {client.am_name}")
        end = timestamp(req.hours)
        client.allocate(rspec, end)
        try:
            client.provision()
        except OperationalError:
            client.delete()
            raise
        bad, gated = self._wait(client, req), False
        if not bad:
            res = self._reservation(client, req, creds, end)
            bad, gated = (self._gate(res) if req.gate else {}), True
            if not bad:
                node_log(req.slice_name, STAGE, f"{req.nodes} nodes ready at {client.am_name} until {end}")
                return res, {}, gated
        for node, reason in sorted(bad.items()):
            node_log(node, STAGE, reason)
        client.delete()
        node_log(req.slice_name, STAGE, f"deleted the slivers of attempt {attempt} ({len(bad)} bad nodes)")
        return None, bad, gated

    def _wait(self, client: SliceClient, req: Request) -> dict[str, str]:
        """Poll Status until :func:`decide` has an answer; returns the bad nodes."""
        names = node_names(req.nodes)
        deadline = time.monotonic() + req.wait * 60
        while True:
            slivers = client.status() or []
            states = {s.get("geni_client_id"): (s.get("geni_operational_status", ""), s.get("geni_error", ""))
                      for s in slivers}
            verdict = decide(states, names, timed_out=time.monotonic() >= deadline)
            if verdict is not None:
                return verdict
            ready = sum(1 for n in names if states.get(n, ("",))[0] == READY)
            node_log(req.slice_name, STAGE, f"{ready}/{len(names)} nodes ready")
            time.sleep(req.poll)

    def _gate(self, res: Reservation) -> dict[str, str]:
        return {h.node: f"health gate failed: {h.reason}" for h in self.gate(res) if not h.ok}

    def _reattach(self, client: SliceClient, req: Request, creds: Credentials, slivers: list[dict]) -> Reservation:
        held = sorted({s["geni_client_id"] for s in slivers if re.fullmatch(r"node\d+", s.get("geni_client_id") or "")})
        if len(held) != req.nodes:
            raise UsageError(f"[{req.slice_name} {STAGE}] slice {req.slice_name!r} already holds {len(held)} "
                             f"nodes at {client.am_name}; release it first or ask for --nodes {len(held)}")
        node_log(req.slice_name, STAGE, f"slice already has {len(held)} nodes: reattaching")
        bad = self._wait(client, req)
        expires = min((str(s.get("geni_expires")) for s in slivers if s.get("geni_expires")), default="")
        res = self._reservation(client, req, creds, expires)
        bad = bad or (self._gate(res) if req.gate else {})
        if bad:
            raise OperationalError(
                f"[{req.slice_name} {STAGE}] reattached slice {req.slice_name!r} has bad nodes: "
                + "; ".join(f"{n}: {r}" for n, r in sorted(bad.items()))
                + "; release it ('metareserve release') and reserve again")
        res.provider_state["reattached"] = True
        return res

    def _reservation(self, client: SliceClient, req: Request, creds: Credentials, expires: str) -> Reservation:
        manifest = parse_manifest(client.describe()["geni_rspec"], user=creds.user)
        nodes = []
        for name in node_names(req.nodes):
            m = manifest.get(name)
            if m is None or not m.host:
                raise client.fail("Describe", "the manifest has no login host for this node", node=name,
                                  hint="CloudLab may still be setting it up: reserve again to reattach")
            labels = {"hardware": req.hardware, "site": req.site}
            if m.component_id:
                labels["component"] = m.component_id.rsplit("+", 1)[-1]
            nodes.append(Node(name=name, host=m.host, port=m.port, user=creds.user,
                              identity=str(creds.ssh_private_key) if creds.ssh_private_key else None,
                              address=m.address, labels=labels))
        state = {"slice_name": req.slice_name, "slice_urn": client.slice_urn, "project": creds.project,
                 "site": req.site, "aggregate": client.am_name, "am_url": client.aggregate.urlv3,
                 "expires": expires, "credentials": str(creds.path), "hardware": req.hardware,
                 "image": req.image, "slivers": {n: manifest[n].sliver_id for n in node_names(req.nodes)}}
        return Reservation(name=req.slice_name, provider=self.name, nodes=nodes, provider_state=state)

    def _client_for(self, res: Reservation) -> SliceClient:
        state = res.provider_state
        missing = [k for k in ("slice_name", "site", "credentials") if not state.get(k)]
        if missing:
            where = res.path or res.name
            raise UsageError(f"{where}: provider_state lacks {', '.join(missing)}; "
                             f"this is not a reservation written by the cloudlab provider")
        creds = load_credentials(state["credentials"])
        return self._client(creds, site=state["site"], slice_name=state["slice_name"])

    def release(self, reservation: Reservation) -> str:
        """Delete every sliver of the reservation's slice; NothingToDo if none is left."""
        client = self._client_for(reservation)
        if client.slice_credential() is None or client.delete() is None:
            raise NothingToDo(f"cloudlab slice {client.slice_name!r} has no slivers at {client.am_name}: "
                              f"nothing to release")
        return f"released slice {client.slice_name!r} at {client.am_name}: deleted its {len(reservation.nodes)} nodes"

    def extend(self, reservation: Reservation, *, hours=4, **options) -> str:
        """Move the expiration to ``hours`` from now (slice first, then its slivers)."""
        if options:
            raise UsageError(f"cloudlab renew: unknown option(s) {', '.join(sorted(options))}")
        try:
            hours = float(hours)
        except (TypeError, ValueError):
            raise UsageError(f"cloudlab renew: hours={hours!r} is not a number") from None
        if hours <= 0:
            raise UsageError(f"cloudlab renew: hours must be positive, not {hours:g}")
        client = self._client_for(reservation)
        if client.slice_credential() is None:
            raise UsageError(f"[{client.slice_name} cloudlab renew] slice {client.slice_urn} does not exist "
                             f"(expired or never created): reserve again")
        end = timestamp(hours)
        client.renew_slice(end)
        slivers = client.renew(end)
        expires = min((str(s.get("geni_expires")) for s in slivers if s.get("geni_expires")), default=end)
        reservation.provider_state["expires"] = expires
        if reservation.path:
            reservation.save(Path(reservation.path))
        return f"renewed slice {client.slice_name!r} at {client.am_name} until {expires}"
