"""A provider is one entry point (``metareserve.providers``): a third-party provider installed
beside metareserve reserves, writes a reservation file that loads again, and releases, with no
list of provider names to update (a toy provider in a temporary distribution, no cluster)."""
from __future__ import annotations

import textwrap

import pytest

import metareserve
from metareserve import load_reservation, providers
from metareserve.errors import UsageError

TOY = '''
from metareserve import Node, Reservation
from metareserve.providers import Provider


class ToyProvider(Provider):
    """Hosts that are names only: nothing to reserve, nothing to release."""

    name = "toy"

    def reserve(self, *, name, nodes=None, **options):
        return Reservation(name, self.name, [Node(f"toy{i}", f"toy{i}.invalid") for i in range(1, (nodes or 1) + 1)])

    def release(self, reservation):
        return f"released {reservation.name}: {len(reservation.nodes)} toy hosts"
'''


@pytest.fixture
def toy_installed(tmp_path, monkeypatch):
    """A distribution ``toyprov`` on sys.path whose entry point registers ``toy``."""
    site = tmp_path / "site"
    (site / "toyprov-0.1.dist-info").mkdir(parents=True)
    (site / "toyprov-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: toyprov\nVersion: 0.1\n")
    (site / "toyprov-0.1.dist-info" / "entry_points.txt").write_text(
        f"[{providers.GROUP}]\ntoy = toy_provider:ToyProvider\n")
    (site / "toy_provider.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("SAE_HOME", str(tmp_path / "home"))


def test_a_third_party_provider_reserves_loads_and_releases(toy_installed, tmp_path):
    assert "toy" in providers.known()
    res = metareserve.reserve(provider="toy", name="toys", nodes=2, out=tmp_path / "toys.yaml")
    again = load_reservation(tmp_path / "toys.yaml")   # a provider outside metareserve's own loads
    assert (again.provider, [n.name for n in again.nodes]) == ("toy", ["toy1", "toy2"]) == \
        (res.provider, [n.name for n in res.nodes])
    assert [r.name for r in metareserve.list_reservations()] == ["toys"]
    assert metareserve.release(again) == "released toys: 2 toy hosts"


def test_a_reservation_of_a_provider_not_installed_is_refused_naming_the_installed_ones(tmp_path):
    f = tmp_path / "gone.yaml"
    f.write_text("version: 1\nname: gone\nprovider: toy\nnodes: [{name: a, host: b}]\n")
    with pytest.raises(UsageError, match="provider 'toy' is not one of cloudlab, local, ssh"):
        load_reservation(f)
