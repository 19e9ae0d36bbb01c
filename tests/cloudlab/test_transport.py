"""The real HTTPS transport (geni-lib's poster, SSL client certificate) against a local XML-RPC
server on 127.0.0.1 that demands a client certificate signed by its CA — CloudLab's aggregate
managers work that way but cannot be reached from CI. A recorded exchange of it replays alike.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import threading
import xmlrpc.server
from types import SimpleNamespace

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from metareserve.providers.cloudlab import (HttpsTransport, RecordingTransport, ReplayTransport,
                                            TransportError, load_credentials)
from metareserve.providers.cloudlab.client import GeniCallError, SliceClient


def _cert(name, key, issuer_name, issuer_key, *, ca=False, san=None):
    now = dt.datetime.now(dt.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
         .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _write(path, key, cert):
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()) + cert.public_bytes(serialization.Encoding.PEM))
    path.chmod(0o600)


@pytest.fixture(scope="module")
def aggregate(tmp_path_factory):
    """A TLS XML-RPC server on loopback: url, CA-signed client PEM, self-signed (rogue) PEM, CA
    PEMs, and the calls it saw."""
    d = tmp_path_factory.mktemp("tls")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test CA", ca_key, "test CA", ca_key, ca=True)
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    server_key = ec.generate_private_key(ec.SECP256R1())
    _write(d / "server.pem", server_key, _cert("127.0.0.1", server_key, "test CA", ca_key,
                                                san=[x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]))
    client_key = ec.generate_private_key(ec.SECP256R1())
    alice = x509.UniformResourceIdentifier("urn:publicid:IDN+emulab.net+user+alice")
    _write(d / "client.pem", client_key, _cert("alice", client_key, "test CA", ca_key, san=[alice]))
    rogue_key = ec.generate_private_key(ec.SECP256R1())
    rogue = _cert("mallory", rogue_key, "mallory", rogue_key, ca=True)
    _write(d / "rogue.pem", rogue_key, rogue)
    (d / "rogue-ca.pem").write_bytes(rogue.public_bytes(serialization.Encoding.PEM))

    calls = []
    class Handler(xmlrpc.server.SimpleXMLRPCRequestHandler):
        rpc_paths = ("/protogeni/xmlrpc/am/3.0",)

    server = xmlrpc.server.SimpleXMLRPCServer(("127.0.0.1", 0), Handler, allow_none=True, logRequests=False)

    def get_version(*args):
        calls.append(("GetVersion", args))
        return {"code": {"geni_code": 0, "am_type": "protogeni", "am_code": 0},
                "value": {"geni_api": 3, "geni_single_allocation": "1"}, "output": ""}

    def busy_status(*args):
        calls.append(("Status", args))
        return {"code": {"geni_code": 14, "am_type": "protogeni", "am_code": 14}, "value": None,
                "output": "slice is busy"}

    server.register_function(get_version, "GetVersion")
    server.register_function(busy_status, "Status")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "server.pem")
    ctx.load_verify_locations(d / "ca.pem")
    ctx.verify_mode = ssl.CERT_REQUIRED
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield SimpleNamespace(url=f"https://127.0.0.1:{server.server_address[1]}/protogeni/xmlrpc/am/3.0",
                              client=d / "client.pem", rogue=d / "rogue.pem", ca=d / "ca.pem",
                              rogue_ca=d / "rogue-ca.pem", calls=calls)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_https_transport_presents_the_client_certificate(aggregate):
    a = aggregate
    response = HttpsTransport(a.client, a.client, a.ca).call(a.url, "GetVersion", ({"opt": True},))
    assert response["value"] == {"geni_api": 3, "geni_single_allocation": "1"}
    assert a.calls[-1] == ("GetVersion", ({"opt": True},))


def test_a_certificate_the_aggregate_does_not_trust_gets_no_answer(aggregate):
    a = aggregate
    with pytest.raises(TransportError, match="SSLError"):
        HttpsTransport(a.rogue, a.rogue, a.ca).call(a.url, "GetVersion", ())


def test_recorded_real_exchange_replays_identically(aggregate, tmp_path):
    a = aggregate
    recorder = RecordingTransport(HttpsTransport(a.client, a.client, a.ca), tmp_path / "rec")
    live = recorder.call(a.url, "GetVersion", ("urn:publicid:IDN+emulab.net:myproj+slice+paper", {}))
    replay = ReplayTransport(tmp_path / "rec")
    assert replay.call(a.url, "GetVersion", ("urn:publicid:IDN+emulab.net:myproj+slice+paper", {})) == live
    replay.assert_done()


def test_busy_aggregate_is_retried_then_named_in_the_error(aggregate, credentials):
    a = aggregate
    slice_client = SliceClient(HttpsTransport(a.client, a.client, a.ca), load_credentials(credentials),
                               site="utah", slice_name="paper", retries=3, backoff=0)
    before = len(a.calls)
    with pytest.raises(GeniCallError) as e:
        slice_client.call(a.url, "Status", ["urn:publicid:IDN+emulab.net:myproj+slice+paper"], [], {})
    assert len(a.calls) - before == 3 and e.value.code == 14
    assert str(e.value) == "[paper cloudlab Status] slice 'paper' at cl-utah: BUSY (14): slice is busy"


def test_a_server_certificate_outside_the_ca_bundle_is_refused(aggregate):
    a = aggregate
    with pytest.raises(TransportError, match="certificate verify failed"):
        HttpsTransport(a.client, a.client, a.rogue_ca).call(a.url, "GetVersion", ())


def test_unreachable_aggregate_is_retried_then_named_in_the_error(credentials):
    slice_client = SliceClient(HttpsTransport("/nonexistent", "/nonexistent"), load_credentials(credentials),
                               site="utah", slice_name="paper", retries=2, backoff=0)
    with pytest.raises(GeniCallError) as e:
        slice_client.call("https://127.0.0.1:9/am/3.0", "Status", [], [], {})
    assert e.value.code is None
    assert str(e.value).startswith("[paper cloudlab Status] slice 'paper' at cl-utah: no answer from "
                                   "https://127.0.0.1:9/am/3.0 after 2 tries: ")
