"""The one door to CloudLab: XML-RPC calls to its clearinghouse and aggregate managers.

:class:`HttpsTransport` talks to CloudLab for real (SSL client certificate, geni-lib's poster);
:class:`ReplayTransport` answers from a recorded exchange and checks every request against it;
:class:`RecordingTransport` writes such an exchange while talking to CloudLab.

An exchange is a directory with ``exchange.yaml`` (one step per call: url, method, expected
arguments, response file) and the responses as XML-RPC ``methodResponse`` documents.
"""
from __future__ import annotations

import abc
import re
import xmlrpc.client
from pathlib import Path

import yaml

from ...errors import UsageError


class TransportError(Exception):
    """The call did not get an answer (network, TLS, HTTP status): worth retrying."""


class ReplayMismatch(AssertionError):
    """A request differs from the recorded one (or the recording ran out)."""


class Transport(abc.ABC):
    """Sends one XML-RPC call and returns the decoded response struct."""

    @abc.abstractmethod
    def call(self, url: str, method: str, params: tuple):
        """Call ``method(*params)`` at ``url``; TransportError when no answer came back."""


class HttpsTransport(Transport):
    """XML-RPC over HTTPS with the user's certificate and key (geni-lib's minigcf poster).

    ``ca_bundle`` verifies the server's certificate; without it, like geni-lib, it is not checked.
    """

    def __init__(self, cert: str, key: str, ca_bundle: str | None = None):
        self.cert, self.key = str(cert), str(key)
        self.verify = str(ca_bundle) if ca_bundle else False

    def call(self, url, method, params):
        import requests
        from geni.minigcf.util import _rpcpost
        data = xmlrpc.client.dumps(tuple(params), methodname=method, allow_none=True)
        try:
            return _rpcpost(url, data, (self.cert, self.key), self.verify)
        except (requests.RequestException, xmlrpc.client.Error, OSError) as e:
            raise TransportError(f"{type(e).__name__}: {e}") from None


def _matches(actual, expected) -> bool:
    """Recorded expectation check: dicts by subset, ``re:PATTERN`` strings by regex search."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _matches(actual[k], v)
                                                for k, v in expected.items())
    if isinstance(expected, list):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                and all(_matches(a, e) for a, e in zip(actual, expected)))
    if isinstance(expected, str) and expected.startswith("re:"):
        return isinstance(actual, str) and re.search(expected[3:], actual, re.S) is not None
    return actual == expected


class ReplayTransport(Transport):
    """Answers calls from the exchange in ``directory``, in order, asserting each request."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        index = self.directory / "exchange.yaml"
        if not index.exists():
            raise UsageError(f"{index}: no recorded exchange there")
        self.steps = yaml.safe_load(index.read_text())["steps"]
        self.position = 0

    def call(self, url, method, params):
        if self.position >= len(self.steps):
            raise ReplayMismatch(f"{self.directory}: unexpected call {method} at {url}: "
                                 f"all {len(self.steps)} recorded steps were used")
        step = self.steps[self.position]
        self.position += 1
        where = f"{self.directory.name} step {self.position} ({step.get('response') or step.get('error')})"
        if (step["method"], step["url"]) != (method, url):
            raise ReplayMismatch(f"{where}: expected {step['method']} at {step['url']}, got {method} at {url}")
        for index, expected in (step.get("expect") or {}).items():
            actual = params[int(index)] if int(index) < len(params) else None
            if not _matches(actual, expected):
                raise ReplayMismatch(f"{where}: argument {index} of {method} is {actual!r:.300}, "
                                     f"recorded {expected!r}")
        if step.get("error"):
            raise TransportError(step["error"])
        body = (self.directory / step["response"]).read_text()
        return xmlrpc.client.loads(body, use_datetime=True)[0][0]

    def assert_done(self) -> None:
        """Raise ReplayMismatch unless every recorded step was used."""
        if self.position != len(self.steps):
            left = [s["method"] for s in self.steps[self.position:]]
            raise ReplayMismatch(f"{self.directory}: {len(left)} recorded steps not used: {', '.join(left)}")


class RecordingTransport(Transport):
    """Passes calls to ``inner`` and records the exchange in ``directory`` (new or empty).

    Responses hold your credentials: redact them before sharing a recording.
    """

    def __init__(self, inner: Transport, directory: str | Path):
        self.inner, self.directory = inner, Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.steps: list[dict] = []

    def call(self, url, method, params):
        step = {"url": url, "method": method}
        if params and isinstance(params[0], (str, list)):
            step["expect"] = {0: params[0]}
        try:
            response = self.inner.call(url, method, params)
        except TransportError as e:
            step["error"] = str(e)
            raise
        else:
            step["response"] = f"{len(self.steps) + 1:02d}-{method}.xml"
            (self.directory / step["response"]).write_text(
                xmlrpc.client.dumps((response,), methodresponse=True, allow_none=True))
            return response
        finally:
            self.steps.append(step)
            (self.directory / "exchange.yaml").write_text(yaml.safe_dump({"steps": self.steps}, sort_keys=False))
