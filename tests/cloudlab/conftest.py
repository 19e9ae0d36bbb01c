"""Fixtures of the cloudlab tests: a credentials file with owner-only modes, recorded exchanges."""
from __future__ import annotations

from pathlib import Path

import pytest

from metareserve.providers.cloudlab import CloudLabProvider, ReplayTransport

RECORDED = Path(__file__).parent / "recorded"
FAST = {"poll": 0, "backoff": 0}


@pytest.fixture
def credentials(tmp_path) -> Path:
    """A credentials file like docs/cloudlab.md describes, every secret mode 600."""
    d = tmp_path / "sae"
    d.mkdir()
    (d / "cloudlab.pem").write_text("-----BEGIN CERTIFICATE-----\n(test)\n-----END CERTIFICATE-----\n")
    key = d / "cloudlab.key"
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\n(test)\n-----END RSA PRIVATE KEY-----\n")
    key.chmod(0o600)
    (d / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests alice@laptop\n")
    f = d / "cloudlab.yaml"
    f.write_text("cert: cloudlab.pem\nkey: cloudlab.key\nproject: myproj\nuser: alice\n"
                 "ssh_public_key: id_ed25519.pub\n")
    f.chmod(0o600)
    return f


@pytest.fixture
def replay():
    """``replay(scenario)`` → (provider over that recorded exchange, its transport)."""
    def make(scenario: str):
        transport = ReplayTransport(RECORDED / scenario)
        return CloudLabProvider(transport=transport), transport
    return make
