"""CloudLab's clearinghouse (CH API v2) and one aggregate manager (GENI AM API v3), for one slice.

Every call goes through a :class:`Transport`; answers with a retryable code (busy, server error,
timeout) or no answer at all are retried with exponential backoff. Failures raise one line
``[SLICE-or-NODE cloudlab CALL] slice 'NAME' at AGGREGATE: what; what to do``.
"""
from __future__ import annotations

import datetime as dt
import time

import geni.aggregate.cloudlab as cloudlab
from geni.aggregate.frameworks import EmulabCH2

from ...errors import OperationalError, prefix
from ...log import node_log
from .config import SITES, Credentials
from .transport import Transport, TransportError

CODES = {0: "SUCCESS", 1: "BADARGS", 2: "ERROR", 3: "FORBIDDEN", 4: "BADVERSION", 5: "SERVERERROR",
         6: "TOOBIG", 7: "REFUSED", 8: "TIMEDOUT", 9: "DBERROR", 10: "RPCERROR", 11: "UNAVAILABLE",
         12: "SEARCHFAILED", 13: "UNSUPPORTED", 14: "BUSY", 15: "EXPIRED", 16: "INPROGRESS",
         17: "ALREADYEXISTS", 24: "VLAN_UNAVAILABLE", 25: "INSUFFICIENT_BANDWIDTH"}
RETRYABLE = {5, 8, 10, 14}
SEARCHFAILED = 12
HINTS = {3: "check the project in the credentials file and that your account belongs to it",
         7: "the site may lack free nodes of that type: try fewer nodes, another hardware type or site",
         11: "the site lacks free resources: try later, fewer nodes or another site",
         15: "your certificate or the slice expired: download new credentials, or reserve under a new name"}
RSPEC_VERSION = {"type": "GENI", "version": "3"}


def timestamp(hours: float) -> str:
    """RFC 3339 UTC time ``hours`` from now, as GENI APIs take it."""
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


class GeniCallError(OperationalError):
    """A clearinghouse or aggregate call failed; ``code`` is the GENI code (None: no answer)."""

    def __init__(self, message: str, code: int | None):
        self.code = code
        super().__init__(message)


class SliceClient:
    """The calls metareserve makes for slice ``slice_name`` of ``creds.project`` at ``site``."""

    def __init__(self, transport: Transport, creds: Credentials, *, site: str, slice_name: str,
                 retries: int = 4, backoff: float = 5.0):
        self.transport, self.creds, self.slice_name = transport, creds, slice_name
        self.retries, self.backoff = retries, backoff
        self.aggregate = getattr(cloudlab, SITES[site])
        framework = EmulabCH2()
        framework.project = creds.project
        self.sa_url, self.ma_url = EmulabCH2.SA, EmulabCH2.MA
        self.slice_urn = framework.sliceNameToURN(slice_name)
        self.project_urn = framework.projectNameToURN(creds.project)
        self._user_cred = self._slice_cred = None

    @property
    def am_name(self) -> str:
        return self.aggregate.name

    def fail(self, call: str, what: str, *, node: str | None = None, hint: str = "",
             code: int | None = None) -> GeniCallError:
        """The error for ``call`` going wrong, naming slice (and node), aggregate and call."""
        where = prefix(node or self.slice_name, f"cloudlab {call}")
        text = f"{where}slice {self.slice_name!r} at {self.am_name}: {what}"
        return GeniCallError(text + (f"; {hint}" if hint else ""), code)

    def call(self, url: str, method: str, *params, accept: tuple = ()):
        """Call ``method`` and return its value; retry transient failures with backoff.

        Codes in ``accept`` return ``(code, value)`` instead of raising.
        """
        for attempt in range(1, self.retries + 1):
            delay = self.backoff * 2 ** (attempt - 1)
            try:
                response = self.transport.call(url, method, params)
            except TransportError as e:
                if attempt == self.retries:
                    raise self.fail(method, f"no answer from {url} after {attempt} tries: {e}",
                                    hint="check the network and CloudLab's status page") from None
                node_log(self.slice_name, f"cloudlab {method}", f"no answer ({e}); retrying in {delay:g}s")
                time.sleep(delay)
                continue
            code = response["code"]["geni_code"] if isinstance(response["code"], dict) else response["code"]
            if code == 0 or code in accept:
                return (code, response.get("value")) if accept else response.get("value")
            output = str(response.get("output") or "").strip().splitlines()
            what = f"{CODES.get(code, 'code')} ({code}): {output[0] if output else 'no details'}"
            if code not in RETRYABLE or attempt == self.retries:
                raise self.fail(method, what, hint=HINTS.get(code, ""), code=code)
            node_log(self.slice_name, f"cloudlab {method}", f"{what}; retrying in {delay:g}s")
            time.sleep(delay)

    # clearinghouse ---------------------------------------------------------------------------
    def user_credential(self) -> dict:
        """The user's credential from the member authority (fetched once)."""
        if self._user_cred is None:
            self._user_cred = self.call(self.ma_url, "get_credentials", self.creds.user_urn, [], {})[0]
        return self._user_cred

    def slice_credential(self, *, create_hours: float | None = None) -> dict | None:
        """The slice credential; creates the slice when missing and ``create_hours`` is given,
        else returns None for a missing slice."""
        if self._slice_cred is None:
            code, value = self.call(self.sa_url, "get_credentials", self.slice_urn,
                                    [self.user_credential()], {}, accept=(SEARCHFAILED,))
            if code == SEARCHFAILED:
                if create_hours is None:
                    return None
                fields = {"SLICE_NAME": self.slice_name, "SLICE_PROJECT_URN": self.project_urn,
                          "SLICE_EXPIRATION": timestamp(create_hours)}
                self.call(self.sa_url, "create", "SLICE", [self.user_credential()], {"fields": fields})
                node_log(self.slice_name, "cloudlab reserve", f"created slice {self.slice_urn}")
                value = self.call(self.sa_url, "get_credentials", self.slice_urn, [self.user_credential()], {})
            self._slice_cred = value[0]
        return self._slice_cred

    def renew_slice(self, expiration: str) -> None:
        """Move the slice's own expiration (slivers cannot outlive their slice)."""
        self.call(self.sa_url, "update", "SLICE", self.slice_urn,
                  [self.slice_credential(), self.user_credential()],
                  {"fields": {"SLICE_EXPIRATION": expiration}})

    # aggregate manager -----------------------------------------------------------------------
    def _am(self, method: str, *params, accept: tuple = ()):
        return self.call(self.aggregate.urlv3, method, *params, accept=accept)

    def allocate(self, rspec: str, end_time: str) -> dict:
        return self._am("Allocate", self.slice_urn, [self.slice_credential()], rspec, {"geni_end_time": end_time})

    def provision(self) -> dict:
        users = [{"urn": self.creds.user_urn, "keys": [self.creds.public_key_text()]}]
        return self._am("Provision", [self.slice_urn], [self.slice_credential()],
                        {"geni_users": users, "geni_rspec_version": RSPEC_VERSION})

    def status(self) -> list[dict] | None:
        """The slice's slivers (geni_sliver_info dicts), or None if the aggregate has none."""
        code, value = self._am("Status", [self.slice_urn], [self.slice_credential()], {}, accept=(SEARCHFAILED,))
        return None if code == SEARCHFAILED else value.get("geni_slivers", [])

    def describe(self) -> dict:
        return self._am("Describe", [self.slice_urn], [self.slice_credential()],
                        {"geni_rspec_version": RSPEC_VERSION})

    def renew(self, end_time: str) -> list[dict]:
        return self._am("Renew", [self.slice_urn], [self.slice_credential()], end_time, {})

    def delete(self) -> list[dict] | None:
        """Delete every sliver of the slice here (CloudLab deletes slivers only all together);
        None if there was nothing to delete."""
        code, value = self._am("Delete", [self.slice_urn], [self.slice_credential()], {}, accept=(SEARCHFAILED,))
        return None if code == SEARCHFAILED else value
