"""Write the recorded CloudLab exchanges the cloudlab tests replay (run: python build.py).

CloudLab cannot be reached from CI, so these exchanges were not captured live: each response is
written in the exact shape CloudLab's ProtoGENI software returns (protogeni/lib/GeniAM.pm:
Allocate/Provision/Describe/Status/Renew/Delete of AM API v3 with geni_code/am_type/am_code,
geni_slivers with geni_client_id and geni_operational_status; GeniStdSA.pm and the member
authority for CH API v2 get_credentials/create/update), with manifests modeled on real CloudLab
manifests (services/login per project member, emulab:vnode, host, interface ip). A real exchange
recorded with ``SAE_CLOUDLAB_RECORD=DIR`` has the same layout and replays the same way.
"""
from __future__ import annotations

import shutil
import xmlrpc.client
from pathlib import Path

import yaml

HERE = Path(__file__).parent
PROJECT, SLICE, USER = "myproj", "paper", "alice"
USER_URN = f"urn:publicid:IDN+emulab.net+user+{USER}"
SLICE_URN = f"urn:publicid:IDN+emulab.net:{PROJECT}+slice+{SLICE}"
AM = "https://boss.utah.cloudlab.us:12369/protogeni/xmlrpc/am/3.0"
SA = "https://www.emulab.net:12369/protogeni/xmlrpc/geni-sa/2"
MA = "https://www.emulab.net:12369/protogeni/xmlrpc/geni-ma"
EXPIRES = "2026-03-02T08:00:00Z"
RENEWED = "2026-03-03T08:00:00Z"
STAMP = r"re:^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
NODES = 4


def credential(owner: str, target: str, expires: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<signed-credential xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.geni.net/resources/credential/2/credential.xsd">
 <credential xml:id="ref0A1B2C3D4E5F">
  <type>privilege</type>
  <serial>4711</serial>
  <owner_gid>-----BEGIN CERTIFICATE-----(owner certificate elided)-----END CERTIFICATE-----</owner_gid>
  <owner_urn>{owner}</owner_urn>
  <target_gid>-----BEGIN CERTIFICATE-----(target certificate elided)-----END CERTIFICATE-----</target_gid>
  <target_urn>{target}</target_urn>
  <uuid>8d0b1c7e-5a3f-11ee-9f1c-e4434b2381fc</uuid>
  <expires>{expires}</expires>
  <privileges><privilege><name>*</name><can_delegate>1</can_delegate></privilege></privileges>
 </credential>
 <signatures><Signature xmlns="http://www.w3.org/2000/09/xmldsig#" xml:id="Sig_ref0A1B2C3D4E5F">(signature elided)</Signature></signatures>
</signed-credential>"""


def cred_value(owner, target, expires):
    return [{"geni_type": "geni_sfa", "geni_version": "3", "geni_value": credential(owner, target, expires)}]


def ch(value, code=0, output=""):
    return {"code": code, "value": value, "output": output}


def am(value, code=0, output=""):
    return {"code": {"geni_code": code, "am_type": "protogeni", "am_code": code}, "value": value, "output": output}


def sliver(n: int) -> str:
    return f"urn:publicid:IDN+utah.cloudlab.us+sliver+{518200 + n}"


def manifest(machines: dict[str, str], *, hosts: bool = True) -> str:
    """A CloudLab manifest for node1..nodeN on machines (client id -> msNNNN) plus lan0."""
    nodes, refs = [], []
    for i, (cid, pc) in enumerate(machines.items(), 1):
        logins = "".join(f'\n      <login authentication="ssh-keys" hostname="{pc}.utah.cloudlab.us" port="22" username="{u}"/>'
                         for u in ("bob", USER)) if hosts else ""
        host = f'\n    <host name="{cid}.{SLICE}.{PROJECT}-pg0.utah.cloudlab.us" ipv4="128.110.219.{20 + i}"/>' if hosts else ""
        nodes.append(f"""  <node client_id="{cid}" component_manager_id="urn:publicid:IDN+utah.cloudlab.us+authority+cm" component_id="urn:publicid:IDN+utah.cloudlab.us+node+{pc}" exclusive="true" sliver_id="{sliver(i)}">
    <sliver_type name="raw-pc">
      <disk_image name="urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"/>
    </sliver_type>
    <hardware_type name="m510"/>
    <interface client_id="{cid}:if0" component_id="urn:publicid:IDN+utah.cloudlab.us+interface+{pc}:eth1" sliver_id="{sliver(100 + i)}" mac_address="1458d058{i:04x}">
      <ip address="10.10.1.{i}" type="ipv4" netmask="255.255.255.0"/>
    </interface>
    <services>{logins}
      <emulab:console server="boss.utah.cloudlab.us"/>
    </services>
    <emulab:vnode name="{pc}" hardware_type="m510"/>{host}
  </node>""")
        refs.append(f'    <interface_ref client_id="{cid}:if0" component_id="urn:publicid:IDN+utah.cloudlab.us+interface+{pc}:eth1" sliver_id="{sliver(100 + i)}"/>')
    return f"""<rspec xmlns="http://www.geni.net/resources/rspec/3" xmlns:emulab="http://www.protogeni.net/resources/rspec/ext/emulab/1" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.geni.net/resources/rspec/3 http://www.geni.net/resources/rspec/3/manifest.xsd" type="manifest" expires="{EXPIRES}">
{chr(10).join(nodes)}
  <link client_id="lan0" sliver_id="{sliver(99)}" vlantag="259">
{chr(10).join(refs)}
    <link_type name="lan"/>
  </link>
  <rs:site_info xmlns:rs="http://www.protogeni.net/resources/rspec/ext/site-info/1">
    <rs:location country="US" latitude="40.750714" longitude="-111.893288"/>
  </rs:site_info>
</rspec>"""


MACHINES = {f"node{i}": f"ms08{10 + i}" for i in range(1, NODES + 1)}
REPLACED = {**MACHINES, "node3": "ms0842"}


def slivers(states: dict[str, tuple[str, str]], allocation="geni_provisioned", expires=EXPIRES):
    out = []
    for i, cid in enumerate(list(MACHINES) + ["lan0"], 1):
        state, error = states.get(cid, states.get("*", ("geni_ready", "")))
        out.append({"geni_sliver_urn": sliver(99 if cid == "lan0" else i), "geni_client_id": cid,
                    "geni_expires": expires, "geni_allocation_status": allocation,
                    "geni_operational_status": state, "geni_error": error})
    return out


def status(states):
    return ("am", "Status", {0: [SLICE_URN]}, am({"geni_urn": SLICE_URN, "geni_slivers": slivers(states)}))


CREDS = [
    ("ma", "get_credentials", {0: USER_URN}, ch(cred_value(USER_URN, USER_URN, EXPIRES))),
]
SLICE_CRED = ("sa", "get_credentials", {0: SLICE_URN}, ch(cred_value(USER_URN, SLICE_URN, EXPIRES)))
NO_SLICE = ("sa", "get_credentials", {0: SLICE_URN}, ch(None, 12, f"No such slice {SLICE_URN}"))
CREATE = ("sa", "create", {0: "SLICE", 2: {"fields": {"SLICE_NAME": SLICE, "SLICE_PROJECT_URN":
                                                     f"urn:publicid:IDN+emulab.net+project+{PROJECT}",
                                                     "SLICE_EXPIRATION": STAMP}}},
          ch({"SLICE_URN": SLICE_URN, "SLICE_EXPIRATION": EXPIRES}))
NOT_HERE = ("am", "Status", {0: [SLICE_URN]}, am(None, 12, "No such slice here"))
ALLOCATE = ("am", "Allocate", {0: SLICE_URN, 2: rf're:(?s)(?=.*client_id="node{NODES}")(?=.*<hardware_type name="m510"/>)',
                               3: {"geni_end_time": STAMP}},
            am({"geni_rspec": manifest(MACHINES, hosts=False),
                "geni_slivers": slivers({"*": ("geni_pending_allocation", "")}, "geni_allocated")}))
PROVISION = ("am", "Provision", {0: [SLICE_URN], 2: {"geni_users": [{"urn": USER_URN, "keys": ["re:^ssh-ed25519 "]}]}},
             am({"geni_rspec": manifest(MACHINES), "geni_slivers": slivers({"*": ("geni_notready", "")})}))
DESCRIBE = ("am", "Describe", {0: [SLICE_URN]}, am({"geni_rspec": manifest(MACHINES), "geni_urn": SLICE_URN,
                                                    "geni_slivers": slivers({})}))
DELETE = ("am", "Delete", {0: [SLICE_URN]}, am([{"geni_sliver_urn": s["geni_sliver_urn"], "geni_allocation_status":
                                                 "geni_unallocated", "geni_expires": EXPIRES, "geni_error": ""}
                                                for s in slivers({})]))
FAILED_NODE3 = status({"node3": ("geni_failed", "node ms0813 failed to boot: TBFAILED (reload timed out)")})

SCENARIOS = {
    # new slice, nodes go notready -> configuring -> ready
    "reserve": [*CREDS, NO_SLICE, CREATE, SLICE_CRED, NOT_HERE, ALLOCATE, PROVISION,
                status({"*": ("geni_notready", "")}),
                status({"node1": ("geni_configuring", ""), "node2": ("geni_ready", ""), "*": ("geni_notready", "")}),
                status({}), DESCRIBE],
    # node3 fails to boot: everything deleted and requested again; the aggregate is busy once and
    # one Status call gets no answer, both retried with backoff
    "replace": [*CREDS, SLICE_CRED, NOT_HERE, ALLOCATE, PROVISION,
                status({"node3": ("geni_notready", ""), "*": ("geni_configuring", "")}),
                FAILED_NODE3, DELETE,
                ("am", "Allocate", {0: SLICE_URN}, am(None, 14, "Slice is busy; try again later")),
                ALLOCATE, PROVISION, ("am", "Status", {0: [SLICE_URN]}, "connection reset by peer"),
                status({"*": ("geni_configuring", "")}), status({}),
                ("am", "Describe", {0: [SLICE_URN]}, am({"geni_rspec": manifest(REPLACED), "geni_urn": SLICE_URN,
                                                         "geni_slivers": slivers({})}))],
    # node3 fails on both attempts: everything released, one error
    "giveup": [*CREDS, SLICE_CRED, NOT_HERE, ALLOCATE, PROVISION, FAILED_NODE3, DELETE,
               ALLOCATE, PROVISION, FAILED_NODE3, DELETE],
    # every node ready, but the health gate cannot reach them: released
    "gate": [*CREDS, SLICE_CRED, NOT_HERE, ALLOCATE, PROVISION, status({}), DESCRIBE, DELETE],
    # the site has too few free m510 nodes
    "refused": [*CREDS, SLICE_CRED, NOT_HERE,
                ("am", "Allocate", {0: SLICE_URN}, am(None, 7, "Not enough nodes with type m510 available (need 4, have 2)"))],
    # Provision fails: the allocated slivers are deleted before the error is raised
    "provision-fails": [*CREDS, SLICE_CRED, NOT_HERE, ALLOCATE,
                        ("am", "Provision", {0: [SLICE_URN]}, am(None, 2, "Could not map to resources: *** ms0813 is down")),
                        DELETE],
    # the slice already holds ready slivers: reattach, allocate nothing
    "reattach": [*CREDS, SLICE_CRED, status({}), status({}), DESCRIBE],
    "renew": [*CREDS, SLICE_CRED,
              ("sa", "update", {0: "SLICE", 1: SLICE_URN, 3: {"fields": {"SLICE_EXPIRATION": STAMP}}}, ch({})),
              ("am", "Renew", {0: [SLICE_URN], 2: STAMP}, am(slivers({}, expires=RENEWED)))],
    "release": [*CREDS, SLICE_CRED, DELETE],
    "release-gone": [*CREDS, SLICE_CRED, ("am", "Delete", {0: [SLICE_URN]}, am(None, 12, "No such slice here"))],
}
URLS = {"am": AM, "sa": SA, "ma": MA}


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def main() -> None:
    for name, steps in SCENARIOS.items():
        d = HERE / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        index = []
        for i, (endpoint, method, expect, response) in enumerate(steps, 1):
            step = {"url": URLS[endpoint], "method": method, "expect": expect}
            if isinstance(response, str):
                step["error"] = response
            else:
                step["response"] = f"{i:02d}-{method}.xml"
                (d / step["response"]).write_text(
                    xmlrpc.client.dumps((response,), methodresponse=True, allow_none=True))
            index.append(step)
        (d / "exchange.yaml").write_text(yaml.dump({"steps": index}, Dumper=_NoAliases, sort_keys=False, width=120))


if __name__ == "__main__":
    main()
