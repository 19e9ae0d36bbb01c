"""Request RSpecs built with geni-lib, and the nodes read back from a manifest RSpec."""
from __future__ import annotations

import dataclasses

import geni.rspec.pg as pg
from geni.rspec.pgmanifest import Manifest

from .config import Request


def node_names(count: int) -> list[str]:
    """Client ids of the requested nodes: node1..nodeN, as the local provider names them."""
    return [f"node{i}" for i in range(1, count + 1)]


def build_request(req: Request, *, component_manager_id: str) -> str:
    """The request RSpec (XML text) for ``req``: raw PCs of one hardware type and image at one site,
    all on one LAN ``lan0`` with addresses from ``req.subnet`` when ``req.lan`` and N > 1."""
    request = pg.Request()
    lan = pg.LAN("lan0") if req.lan and req.nodes > 1 else None
    for name, address in zip(node_names(req.nodes), req.addresses()):
        node = pg.RawPC(name)
        node.hardware_type = req.hardware
        node.disk_image = req.image
        node.component_manager_id = component_manager_id
        if lan is not None:
            iface = node.addInterface("if0")
            iface.addAddress(pg.IPv4Address(address, req.netmask))
            lan.addInterface(iface)
        request.addResource(node)
    if lan is not None:
        request.addResource(lan)
    return request.toXMLString(pretty_print=True, ucode=True)


@dataclasses.dataclass(frozen=True)
class ManifestNode:
    """What the manifest says about one node: how to log in and its private address."""

    client_id: str
    sliver_id: str | None
    component_id: str | None
    host: str | None
    port: int
    address: str | None


def parse_manifest(xml: str, *, user: str) -> dict[str, ManifestNode]:
    """Nodes of a manifest RSpec by client id; login host and port are those of ``user``
    (else the first login listed), the address is the node's first interface IP."""
    out = {}
    for node in Manifest(xml=xml).nodes:
        logins = [lg for lg in node.logins if lg.username == user] or list(node.logins)
        host = logins[0].hostname if logins else node.hostfqdn
        port = logins[0].port if logins else 22
        address = next((i.address_info[0] for i in node.interfaces if i.address_info), None)
        out[node.client_id] = ManifestNode(node.client_id, node.sliver_id, node.component_id,
                                           host, port, address)
    return out
