"""The RADOS Gateway: its options and config (pure), then a Ceph of this module's own with a
gateway on node3 (memstore, every role there): S3 as the least-privilege users through a real
S3 client (botocore), keys only in 0600 files, storage operations counted exactly by type, the
mgr exporting the gateway's counters, and stop/uninstall leaving no radosgw."""
from __future__ import annotations

import configparser
import json
import os
import time

import pytest

from fixtures.ceph import client_python, every_role_on, sibling, started
from metareserve import Layout, Node, Reservation, UsageError
from rados_deploy import CephCluster, CephOptions, OpCounts, S3Credentials
from rados_deploy import remote
from rados_deploy.config import Topology, render_conf
from rados_deploy.rgw import check_bucket, credentials_text, parse_credentials


def reservation(n=3):
    nodes = [Node(name=f"node{i}", host=f"10.0.0.{i}", address=f"10.0.0.{i}") for i in range(1, n + 1)]
    return Reservation(name="t", provider="local", nodes=nodes)


HEAD = Layout({"ceph-mon": ["node1"], "ceph-osd": ["node1", "node2"], "ceph-client": ["node1", "node2"]})


# -- pure ---------------------------------------------------------------------------------------
def test_gateway_placement():
    res = reservation()
    assert Topology.from_layout(res, HEAD, CephOptions()).rgws == []
    topo = Topology.from_layout(res, HEAD, CephOptions(rgw=True))
    assert topo.rgws == ["node1"] and topo.gateways("node1") == ["rgw.node1"] and topo.gateways("node2") == []
    placed = Layout({**HEAD.roles, "ceph-rgw": ["node3"]})
    assert Topology.from_layout(res, placed, CephOptions()).rgws == ["node3"]
    assert "node3" in Topology.from_layout(res, placed, CephOptions()).nodes
    assert placed.host_roles()["node3"] == "storage"
    assert "ceph-rgw" not in Layout.default(res).roles


def _conf(options, node="node1", layout=HEAD):
    res = reservation()
    topo = Topology.from_layout(res, layout, options)
    text = render_conf(node=node, state="/s", address=res.node(node).cluster_address, fsid="f",
                       mon_host="[v2:10.0.0.1:3300]", topo=topo, options=options)
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.read_string(text)
    return parser


def test_conf_gateway_section():
    c = _conf(CephOptions(rgw=True, rgw_port=7481))
    rgw = c["client.rgw.node1"]
    assert rgw["rgw frontends"] == ("beast endpoint=10.0.0.1:7481 ssl_endpoint=10.0.0.1:7443 "
                                    "ssl_certificate=/s/data/rgw.node1/tls.crt ssl_private_key=/s/data/rgw.node1/tls.key")
    assert rgw["keyring"] == "/s/data/rgw.node1/keyring" and rgw["rgw data"] == "/s/data/rgw.node1"
    assert rgw["admin socket"] == "/s/run/ceph-rgw.node1.asok" and rgw["log file"] == "/s/log/ceph-rgw.node1.log"
    assert (rgw["rgw enable ops log"], rgw["rgw ops log rados"]) == ("true", "false")
    assert rgw["rgw ops log file path"] == "/s/log/rgw-ops.log" and rgw["rgw log nonexistent bucket"] == "true"
    assert "client.rgw.node2" not in _conf(CephOptions(rgw=True), node="node2")
    assert "keyring" not in _conf(CephOptions(rgw=True, cephx=False))["client.rgw.node1"]
    assert [s for s in _conf(CephOptions()).sections() if s.startswith("client.rgw")] == []


def test_tls_port_is_a_port_of_its_own():
    with pytest.raises(UsageError, match=r"^CephOptions.rgw_tls_port 7480 is rgw_port too"):
        CephOptions(rgw=True, rgw_tls_port=7480)


@pytest.mark.parametrize("port,why", [(8080, "spark-master metrics port"), (6789, "mon_v1_port"),
                                      (6900, "in daemon_ports 6800-7000"), (9283, "mgr_prometheus_port"),
                                      (80, "from 1024 to 65535"), ("7480", "from 1024 to 65535")])
def test_bad_gateway_port_is_refused_in_one_line(port, why):
    with pytest.raises(UsageError, match=r"^CephOptions.rgw_port ") as e:
        CephOptions(rgw=True, rgw_port=port)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_cli_bad_gateway_port(tmp_path):
    from click.testing import CliRunner
    from rados_deploy.cli import main
    path = tmp_path / "res.yaml"
    reservation().save(path)
    r = CliRunner().invoke(main, ["start", "-r", str(path), "--rgw", "--rgw-port", "9283"])
    assert r.exit_code == 2 and r.output.strip().startswith("error: CephOptions.rgw_port 9283 is mgr_prometheus_port")
    assert len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["start", "-r", str(path), "--rgw", "--rgw-tls-port", "7480"])
    assert r.exit_code == 2 and r.output.strip().startswith("error: CephOptions.rgw_tls_port 7480 is rgw_port too")


@pytest.mark.parametrize("name", ["ab", "Upper", "under_score", "-dash", "dot.", "a..b", "10.0.0.1", "x" * 64,
                                  "sae-fence-1", None])
def test_bad_bucket_name_is_refused_in_one_line(name):
    with pytest.raises(UsageError, match=r"^bucket name .* is not a valid S3 bucket name") as e:
        check_bucket(name)
    assert "\n" not in str(e.value)


def test_create_bucket_refuses_a_bad_name_before_any_connection():
    ceph = CephCluster(reservation(), HEAD, CephOptions(rgw=True))
    with pytest.raises(UsageError, match="bucket name 'Bad_Name'"):
        ceph.create_bucket("Bad_Name")
    assert ceph._cluster is None
    assert check_bucket("sae-output.2") == "sae-output.2"


def test_removals_refuse_a_bad_bucket_or_path_before_any_connection():
    ceph = CephCluster(reservation(), HEAD, CephOptions(rgw=True))
    with pytest.raises(UsageError, match="bucket name 'Bad_Name'"):
        ceph.remove_bucket("Bad_Name")
    for path in ("/", "relative/dir", "/a/../b", "/a/./b", "", None):
        with pytest.raises(UsageError, match=r"^CephFS path .*: give an absolute directory below the root") as e:
            ceph.remove_tree(path)
        assert "\n" not in str(e.value)
    assert ceph._cluster is None


def test_credentials_file_round_trip_and_repr():
    assert parse_credentials(credentials_text("AK", "SK"), where="f") == ("AK", "SK")
    creds = S3Credentials("sae-writer", "AK", "SECRET", "http://10.0.0.1:7480")
    assert "SECRET" not in repr(creds) and "AK" in repr(creds)


def test_ops_log_parsing_and_types():
    entries = [{"bucket": "b", "operation": "get_obj", "uri": "HEAD /b/k HTTP/1.1", "http_status": "200"},
               {"bucket": "b", "operation": "put_obj", "uri": "PUT /b/k?partNumber=1&uploadId=2~x HTTP/1.1"},
               {"bucket": "b", "operation": "put_obj", "uri": "PUT /b/k HTTP/1.1", "http_status": "403"},
               {"bucket": "b", "operation": "get_obj", "uri": "GET /b/k HTTP/1.1"}]
    text = (json.dumps(entries[0]) + json.dumps(entries[1]) + "\n" + json.dumps(entries[2]) + "\n"
            + json.dumps(entries[3]) + "\n")
    partial = '{"bucket": "b\u00e9", "oper'.encode()[:-1] + "é".encode()[:1]   # cut mid-character too
    got, used = remote._entries(text.encode() + partial)
    assert got == entries and text.encode()[used:].strip() == b""
    assert [remote._op_type(e) for e in got] == ["head_obj", "put_part", "put_obj", "get_obj"]
    assert remote._entries(b"") == ([], 0)


def test_op_counts_delta_and_flat():
    def counts(t, put, rename, op_w, pid=7):
        return OpCounts(t, t + 1, rgw={"put_obj": put, "get_obj": 2}, rgw_failed={}, rgw_bytes={"received": put},
                        rgw_rados={}, mds={"rename": rename}, mds_rados={}, osd={"op_w": op_w, "op_r": 5}, pids={"osd.0": pid})
    a, b = counts(0, 1, 4, 10), counts(5, 4, 5, 13)
    d = b.delta(a)
    assert (d.begin, d.end) == (0, 6)
    assert d.flat() == {"rgw.put_obj": 3, "rgw_bytes.received": 3, "mds.rename": 1, "osd.op_r": 0, "osd.op_w": 3}
    assert counts(5, 4, 5, 13, pid=8).delta(a) is None
    assert OpCounts.from_dict(json.loads(json.dumps(b.to_dict()))) == b


def test_collect_sums_daemons_and_keeps_the_types():
    from rados_deploy.ops import collect
    osd = {"osd": {"op": 9, "op_r": 4, "op_w": 5, "op_in_bytes": 700, "numpg": 16, "op_rw": 0}}
    mds = {"mds_server": {"handle_client_request": 6, "req_create_latency": {"avgcount": 2, "sum": 0.1},
                          "req_rename_latency": {"avgcount": 1, "sum": 0.0}, "dispatch_client_request": 9},
           "objecter": {"op_w": 2, "osdop_append": 2}}
    gateway = {"objecter": {"op_w": 3, "osdop_writefull": 2, "osdop_call": 4, "omap_wr": 1, "op_active": 0}}
    parts = [{"perf": {"osd.0": [11, osd], "mds.node1": [12, mds]}, "rgw": []},
             {"perf": {"osd.1": [13, osd], "rgw.node2": [14, gateway]},
              "rgw": [{"put_obj": [3, 1, 3000, 0], "head_obj": [1, 0, 0, 0]}]}]
    c = collect(1.0, 2.0, parts)
    assert c.osd == {"op": 18, "op_r": 8, "op_w": 10, "op_in_bytes": 1400, "op_rw": 0}
    assert c.mds == {"client_requests": 6, "create": 2, "rename": 1}
    assert c.rgw_rados == {"op_w": 3, "osdop_writefull": 2, "osdop_call": 4, "omap_wr": 1}
    assert c.mds_rados == {"op_w": 2, "osdop_append": 2}   # the MDS's own RADOS ops, apart from the gateway's
    assert (c.rgw, c.rgw_failed, c.rgw_bytes) == ({"head_obj": 1, "put_obj": 3}, {"head_obj": 0, "put_obj": 1},
                                                  {"received": 3000, "sent": 0})
    assert c.pids == {"mds.node1": 12, "osd.0": 11, "osd.1": 13, "rgw.node2": 14}


def test_private_files_and_a_gateway_that_exits(tmp_path):
    secret = tmp_path / "s"
    secret.write_text("k")
    secret.chmod(0o644)
    with pytest.raises(RuntimeError, match="readable by others"):
        remote.read_private(str(secret))
    secret.chmod(0o600)
    assert remote.read_private(str(secret)) == "k" and remote.read_private(str(tmp_path / "none")) is None
    assert remote.wait_http("http://127.0.0.1:9/", str(tmp_path / "no.pid"), 5) is None


# -- a Ceph with a gateway ----------------------------------------------------------------------
NODE = "node3"


@pytest.fixture(scope="module")
def gw(local_cluster, cluster):
    """A started Ceph of this module's own on node3 (memstore, every role, a gateway)."""
    options = CephOptions(store="memstore", osd_size="1GiB", mon_port=3500, mon_v1_port=None, rgw=True)
    with started(CephCluster(sibling(local_cluster, "g"), every_role_on(NODE), options, cluster=cluster)) as ceph:
        yield ceph


def s3(creds: S3Credentials):
    import botocore.config
    import botocore.session
    return botocore.session.get_session().create_client(
        "s3", endpoint_url=creds.endpoint, region_name="us-east-1", aws_access_key_id=creds.access_key,
        aws_secret_access_key=creds.secret_key, config=botocore.config.Config(s3={"addressing_style": "path"},
                                                                              retries={"max_attempts": 1}))


def test_gateway_runs_answers_and_a_second_start_changes_nothing(gw):
    st = gw.status()
    assert st.ok and [(d.name, d.host) for d in st.daemons if d.role == "rgw"] == [(f"rgw.{NODE}", NODE)]
    again = gw.start()
    assert not again.changed, again.summary()
    assert f"rgw.{NODE} running" in again.nodes[NODE].message
    assert gw.s3_endpoint == f"http://{gw.reservation.node(NODE).cluster_address}:7480"
    assert s3(gw.s3_credentials(gw.s3_users.writer)).list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_writer_writes_reader_only_reads(gw):
    import botocore.exceptions
    made = gw.create_bucket("sae-out")
    assert made.changed and "created, read access set" in made.nodes[NODE].message
    assert not gw.create_bucket("sae-out").changed
    writer, reader = s3(gw.s3_credentials(gw.s3_users.writer)), s3(gw.s3_credentials(gw.s3_users.reader))
    writer.put_object(Bucket="sae-out", Key="a", Body=b"abc")
    assert reader.get_object(Bucket="sae-out", Key="a")["Body"].read() == b"abc"
    assert [o["Key"] for o in reader.list_objects_v2(Bucket="sae-out")["Contents"]] == ["a"]
    for denied in (lambda: reader.put_object(Bucket="sae-out", Key="b", Body=b"x"),
                   lambda: reader.delete_object(Bucket="sae-out", Key="a")):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            denied()
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    for user, own in ((reader, "sae-reader-own"), (writer, "sae-writer-own")):   # only create_bucket makes them
        with pytest.raises(botocore.exceptions.ClientError):
            user.create_bucket(Bucket=own)
    writer.delete_object(Bucket="sae-out", Key="a")
    assert "Contents" not in writer.list_objects_v2(Bucket="sae-out")


def test_keys_only_in_private_files(gw):
    creds = [gw.s3_credentials(u) for u in gw.s3_users.all]
    for user in gw.s3_users.all:
        path = gw.s3_credentials_path(NODE, user)
        assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    assert os.stat(f"{gw.state_dir(NODE)}/data/rgw.{NODE}/keyring").st_mode & 0o777 == 0o600
    secrets = [c.access_key for c in creds] + [c.secret_key for c in creds]
    leaked = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        leaked += [pid for s in secrets if s in cmdline]
    assert leaked == []


def test_s3_operations_counted_exactly_by_type(gw):
    writer = s3(gw.s3_credentials(gw.s3_users.writer))
    gw.create_bucket("sae-ops")
    before = gw.op_counters()
    for i in range(5):
        writer.put_object(Bucket="sae-ops", Key=f"k{i}", Body=b"x" * 1000)
    for i in range(3):
        assert writer.get_object(Bucket="sae-ops", Key=f"k{i}")["Body"].read() == b"x" * 1000
    writer.copy_object(Bucket="sae-ops", Key="copy", CopySource={"Bucket": "sae-ops", "Key": "k0"})
    writer.head_object(Bucket="sae-ops", Key="copy")
    writer.delete_object(Bucket="sae-ops", Key="k4")
    writer.list_objects_v2(Bucket="sae-ops")
    d = gw.op_counters().delta(before)
    assert d.rgw == {"put_obj": 5, "get_obj": 3, "copy_obj": 1, "head_obj": 1, "delete_obj": 1, "list_bucket": 1}
    assert d.rgw_failed == {} and d.rgw_bytes["received"] >= 5000 and d.rgw_bytes["sent"] >= 3000
    assert d.rgw_rados.get("osdop_writefull", 0) + d.rgw_rados.get("osdop_write", 0) >= 5
    assert d.osd["op_w"] + d.osd["op_rw"] >= 5 and d.osd["op_in_bytes"] >= 5000
    print("evidence:", d.flat())


MDS_OPS = """
import cephfs, json, os
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
fd = fs.open(b"/ops-a", "w", 0o644); fs.close(fd)
fs.rename(b"/ops-a", b"/ops-b"); fs.unlink(b"/ops-b")
print(json.dumps("done"))
"""


def test_mds_requests_counted_exactly_by_type(gw):
    before = gw.op_counters()
    assert client_python(gw, NODE, MDS_OPS) == "done"
    d = gw.op_counters().delta(before)
    assert (d.mds["create"], d.mds["rename"], d.mds["unlink"]) == (1, 1, 1)
    assert "mkdir" not in d.mds and d.mds["client_requests"] >= 3
    print("evidence:", {k: v for k, v in d.flat().items() if k.startswith("mds.")})


def test_mgr_exports_the_gateway_counters(gw):
    from metareserve import node_agent
    url = f"http://{gw.reservation.node(NODE).cluster_address}:{gw.options.mgr_prometheus_port}/metrics"
    deadline = time.monotonic() + 120
    while True:
        body = gw.cluster.call(node_agent, "http_get", url, 10.0, nodes=[NODE], stage="test scrape")[NODE]["body"]
        series = [l for l in body.splitlines() if l.startswith(("ceph_rgw_req{", "ceph_rgw_put{", "ceph_rgw_get{"))]
        if len(series) == 3 or time.monotonic() > deadline:
            break
    assert len(series) == 3, body[:2000]
    print("evidence:", series)


def test_every_stop_stops_the_gateway_and_uninstall_leaves_none(gw):
    plain = CephCluster(gw.reservation, gw.layout, CephOptions(store="memstore", mon_port=3500, mon_v1_port=None),
                        cluster=gw.cluster)   # as 'sae clean' sees it: no gateway in the options
    pid = next(d.pid for d in gw.status().daemons if d.role == "rgw")
    report = plain.stop()
    assert f"rgw.{NODE}" in report.nodes[NODE].message
    assert remote.gone([pid]) == [pid]
    gw.start()
    assert [d.up for d in gw.status().daemons if d.role == "rgw"] == [True]
    gw.uninstall()
    conf = gw.conf_path(NODE)
    assert not [p for p in filter(str.isdigit, os.listdir("/proc"))
                if _cmdline(p).startswith("radosgw") and conf in _cmdline(p)]


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""
