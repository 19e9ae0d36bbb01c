"""CloudLab/GENI provider: raw PCs (m510 by default) on one LAN, health-gated, renewable.

``metareserve reserve --provider cloudlab --nodes 17 --name paper -O hours=16`` or
``CloudLabProvider().reserve(name="paper", nodes=17, hours=16)``. See docs/cloudlab.md.
"""
from .config import Credentials, Request, load_credentials, make_request
from .provider import CloudLabProvider, decide
from .rspec import build_request, parse_manifest
from .transport import HttpsTransport, RecordingTransport, ReplayMismatch, ReplayTransport, Transport, TransportError

__all__ = ["CloudLabProvider", "Credentials", "Request", "load_credentials", "make_request", "decide",
           "build_request", "parse_manifest", "Transport", "TransportError", "HttpsTransport",
           "ReplayTransport", "RecordingTransport", "ReplayMismatch"]
