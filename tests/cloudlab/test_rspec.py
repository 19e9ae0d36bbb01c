"""Request RSpecs built for real with geni-lib, options coerced from -O strings, manifests parsed."""
from __future__ import annotations

import xmlrpc.client

import pytest
from lxml import etree

from metareserve.errors import UsageError
from metareserve.providers.cloudlab import build_request, make_request, parse_manifest

from .conftest import RECORDED

NS = {"g": "http://www.geni.net/resources/rspec/3"}
CM = "urn:publicid:IDN+utah.cloudlab.us+authority+cm"
IMAGE = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU18-64-STD"


@pytest.mark.parametrize("count", [1, 8, 16])
def test_request_rspec_has_the_nodes_hardware_image_and_lan_asked_for(count):
    req = make_request(name="paper", nodes=count, hardware="m510", image=IMAGE)
    root = etree.fromstring(build_request(req, component_manager_id=CM).encode())
    assert root.get("type") == "request"
    nodes = root.findall("g:node", NS)
    assert [n.get("client_id") for n in nodes] == [f"node{i}" for i in range(1, count + 1)]
    for n in nodes:
        assert n.get("exclusive") == "true" and n.get("component_manager_id") == CM
        assert n.find("g:hardware_type", NS).get("name") == "m510"
        assert n.find("g:sliver_type", NS).get("name") == "raw"
        assert n.find("g:sliver_type/g:disk_image", NS).get("name") == IMAGE
    links = root.findall("g:link", NS)
    if count == 1:
        assert links == [] and root.findall("g:node/g:interface", NS) == []
        return
    (lan,) = links
    assert lan.get("client_id") == "lan0" and lan.find("g:link_type", NS).get("name") == "lan"
    members = [r.get("client_id") for r in lan.findall("g:interface_ref", NS)]
    assert members == [f"node{i}:if0" for i in range(1, count + 1)]
    ips = [(n.get("client_id"), n.find("g:interface/g:ip", NS).attrib) for n in nodes]
    assert ips == [(f"node{i}", {"address": f"10.10.1.{i}", "netmask": "255.255.255.0", "type": "ipv4"})
                   for i in range(1, count + 1)]


def test_request_without_lan_and_other_subnet():
    root = etree.fromstring(build_request(make_request(name="p", nodes=3, lan="no"), component_manager_id=CM).encode())
    assert root.findall("g:link", NS) == [] and root.findall("g:node/g:interface", NS) == []
    root = etree.fromstring(build_request(make_request(name="p", nodes=2, subnet="192.168.7.0/28"),
                                          component_manager_id=CM).encode())
    assert [ip.get("address") for ip in root.findall("g:node/g:interface/g:ip", NS)] == ["192.168.7.1", "192.168.7.2"]
    assert {ip.get("netmask") for ip in root.findall("g:node/g:interface/g:ip", NS)} == {"255.255.255.240"}


def test_cli_strings_are_coerced():
    req = make_request(name="paper", nodes=17, site="utah", hours="16", lan="yes", attempts="2",
                       wait="45", gate="no", poll="0")
    assert (req.hours, req.lan, req.attempts, req.wait, req.gate, req.poll) == (16.0, True, 2, 45.0, False, 0.0)
    assert req.hardware == "m510" and req.site == "utah" and req.image.endswith("UBUNTU22-64-STD")


@pytest.mark.parametrize("options, words", [
    ({"hours": "soon"}, ["hours='soon'", "float"]),
    ({"gate": "maybe"}, ["gate='maybe'", "yes or no"]),
    ({"site": "mars"}, ["site='mars'", "utah"]),
    ({"colour": "red"}, ["unknown option", "colour"]),
    ({"image": "UBUNTU22"}, ["image=", "URN"]),
    ({"subnet": "10.0.0.0/30"}, ["too small"]),
    ({"attempts": "0"}, ["attempts=0", "positive"]),
    ({"poll": "-1"}, ["poll=-1.0", "positive"]),
    ({"slice_name": "other"}, ["unknown option", "slice_name"]),
])
def test_bad_options_are_one_line_usage_errors(options, words):
    with pytest.raises(UsageError) as e:
        make_request(name="paper", nodes=4, **options)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words)


@pytest.mark.parametrize("name", ["", "9lives", "a-very-long-slice-name-indeed", "under_score"])
def test_bad_slice_names_are_refused(name):
    with pytest.raises(UsageError, match="slice name"):
        make_request(name=name, nodes=1)


def test_manifest_gives_login_host_port_and_lan_address_of_our_user():
    body = (RECORDED / "reserve" / "11-Describe.xml").read_text()
    manifest = xmlrpc.client.loads(body)[0][0]["value"]["geni_rspec"]
    nodes = parse_manifest(manifest, user="alice")
    assert sorted(nodes) == ["node1", "node2", "node3", "node4"]
    n2 = nodes["node2"]
    assert (n2.host, n2.port, n2.address) == ("ms0812.utah.cloudlab.us", 22, "10.10.1.2")
    assert n2.component_id.endswith("+node+ms0812") and n2.sliver_id.endswith("+sliver+518202")
