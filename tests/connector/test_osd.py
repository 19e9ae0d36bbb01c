"""The ``scan`` method inside real OSDs (rados_deploy's shared ``ceph_cluster``): the shared vectors
give the same answers as the C++ harness, and malformed requests leave every OSD up."""
import glob
import importlib.util
import json
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metareserve.errors import OperationalError
from sae.connector.protocol import FLAG_INDEX, Request, decode_error, decode_reply

def ceph_bindings():
    """Debian's ``rados`` and ``cephfs`` modules (python3-rados/-cephfs), loaded into this Python."""
    mods = []
    for name in ("rados", "cephfs"):
        if name not in sys.modules:
            found = glob.glob(f"/usr/lib/python3/dist-packages/{name}.cpython-%d%d-*.so" % sys.version_info[:2])
            if not found:
                pytest.skip(f"python3-{name} is not installed for this Python")
            spec = importlib.util.spec_from_file_location(name, found[0])
            sys.modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(sys.modules[name])
        mods.append(sys.modules[name])
    return mods


VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "scan"
NSPACE = "sae-connector-test"


@pytest.fixture(scope="module")
def ioctx(ceph_cluster):
    """An ioctx on the CephFS data pool (test namespace) holding the sample on every OSD."""
    rados, _ = ceph_bindings()
    r = rados.Rados(conffile=ceph_cluster.client_conf("node1"), conf={"rados_osd_op_timeout": "60"})
    r.connect()
    io = r.open_ioctx(ceph_cluster.data_pool)
    io.set_namespace(NSPACE)
    sample = (VECTORS / "sample.parquet").read_bytes()
    names = [f"sample-{i}" for i in range(24)]
    for n in names:
        io.write_full(n, sample)
    io.write_full("not-parquet", b"definitely not parquet " * 50)
    try:
        yield r, io, names
    finally:
        for n in names + ["not-parquet"]:
            io.remove_object(n)
        io.close()
        r.shutdown()


def placement(r, pool: str, name: str) -> dict:
    """Where the test namespace's object ``name`` lives (``ceph osd map``: pgid, acting_primary, ...)."""
    ret, buf, _ = r.mon_command(json.dumps({"prefix": "osd map", "pool": pool, "object": name,
                                            "nspace": NSPACE, "format": "json"}), b"")
    assert ret == 0
    return json.loads(buf)


def primaries(r, pool: str, names: list[str]) -> dict[str, int]:
    return {n: placement(r, pool, n)["acting_primary"] for n in names}


def osd_map(r) -> dict:
    ret, buf, _ = r.mon_command(json.dumps({"prefix": "osd dump", "format": "json"}), b"")
    assert ret == 0
    d = json.loads(buf)
    return {"epoch": d["epoch"], "up": sorted((o["osd"], o["up"], o["in"]) for o in d["osds"])}


def scan(io, oid: str, data: bytes, length: int = 1 << 20):
    ret, out = io.execute(oid, "sae", "scan", data, length=length)
    return ret, out


def test_vectors_through_every_osd(ioctx, vectors, ceph_cluster, assert_rows):
    r, io, names = ioctx
    _, results = vectors
    where = primaries(r, ceph_cluster.data_pool, names)
    one_per_osd = {osd: n for n, osd in where.items()}
    assert len(one_per_osd) == len(ceph_cluster.topology.osd_nodes)
    for oid in one_per_osd.values():
        for v in results:
            ret, out = scan(io, oid, bytes.fromhex(v["hex"]))
            err = decode_error(out)
            if "errno" in v:
                assert ret >= 0 and err is not None and err.errno == v["errno"], (oid, v["name"])
                continue
            assert err is None, (oid, v["name"], err)
            reply = decode_reply(out)
            table = pa.ipc.open_stream(reply.stream).read_all()
            assert table.column_names == v["columns"], (oid, v["name"])
            assert_rows(table, v)
            st = reply.stats   # the OSD's own measurement of the call
            assert (st["rows_in"], st["rows_out"], st["reply_bytes"]) == (40, len(v["rows"]), len(reply.stream))
            assert st["read_calls"] >= 2 and st["read_bytes"] > 0 and 0 < st["read_ns"] < st["total_ns"], st


def test_schema_method_answers_the_files_arrow_schema(ioctx):
    _, io, names = ioctx
    _, out = io.execute(names[0], "sae", "schema", b"", length=1 << 20)
    reader = pa.ipc.open_stream(pa.py_buffer(out))
    assert reader.schema.equals(pq.read_schema(VECTORS / "sample.parquet")) and reader.read_all().num_rows == 0
    _, out = io.execute("not-parquet", "sae", "schema", b"", length=1 << 20)
    assert decode_error(out).errno == 74


def test_errors_without_in_band_flag_are_negative_errnos(ioctx):
    _, io, names = ioctx
    rados, _ = ceph_bindings()
    with pytest.raises(rados.Error) as e:
        scan(io, names[0], Request(columns=["nope"], flags=0).encode())
    assert e.value.errno == 22


def test_not_parquet_object(ioctx):
    _, io, _ = ioctx
    ret, out = scan(io, "not-parquet", Request().encode())
    err = decode_error(out)
    assert err.errno == 74 and "not a Parquet file" in err.message


def test_malformed_requests_leave_every_osd_up(ioctx, vectors, ceph_cluster):
    r, io, names = ioctx
    requests, results = vectors
    before = osd_map(r)
    assert all(up for _, up, _ in before["up"])
    bad = [bytes.fromhex(v["hex"]) for v in requests if "error" in v]
    rng = random.Random(7)
    good = [bytes.fromhex(v["hex"]) for v in results]
    for _ in range(300):
        m = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(3)
            if op == 0 and m:
                m[rng.randrange(len(m))] = rng.randrange(256)
            elif op == 1:
                del m[rng.randrange(len(m) + 1):]
            else:
                m.insert(rng.randrange(len(m) + 1), rng.randrange(256))
        bad.append(bytes(m))
    rados, _ = ceph_bindings()
    outcomes = {"error": 0, "ok": 0}
    for i, data in enumerate(bad):
        try:
            ret, out = scan(io, names[i % len(names)], data, length=8 << 20)
            outcomes["error" if decode_error(out) else "ok"] += 1
        except rados.Error as e:
            assert e.errno in (22, 93, 7, 74, 34), e   # a clean errno, never a timeout
            outcomes["error"] += 1
    assert outcomes["error"] > 0
    after = osd_map(r)
    assert after == before, "an OSD went down or the OSD map changed"
    for n in names:   # and every OSD still scans correctly
        ret, out = scan(io, n, Request(columns=["id"]).encode())
        assert pa.ipc.open_stream(decode_reply(out).stream).read_all().num_rows == 40


def _calls_beside(io, oids, clients) -> dict:
    """Scan calls on ``oids`` for ``clients`` sent at once; per call (own, all) calls-seconds over
    its wall time, after checking each reply's counts."""
    replies = [None] * len(oids)

    def done(i):
        return lambda completion, out: replies.__setitem__(i, bytes(out))
    calls = [io.aio_execute(oid, "sae", "scan", Request(columns=["id", "x"], client=c, filter={
        "cmp": "<", "column": "id", "value": 1000}).encode(), length=1 << 20, oncomplete=done(i))
        for i, (oid, c) in enumerate(zip(oids, clients))]
    for call in calls:
        call.wait_for_complete_and_cb()
    stats = [decode_reply(out).stats for out in replies]
    for c, st in zip(clients, stats):
        assert st["rows_out"] == 1000 and st["all_calls_ns"] >= st["wall_ns"] > 0, st
        assert (0 < st["own_calls_ns"] <= st["all_calls_ns"]) if c else st["own_calls_ns"] == 0, st
    return {i: (st["own_calls_ns"] / st["wall_ns"], st["all_calls_ns"] / st["wall_ns"]) for i, st in enumerate(stats)}


def test_replies_count_the_calls_beside_them_by_client(ioctx, ceph_cluster, tmp_path):
    """Protocol 5's ``own_calls_ns`` and ``all_calls_ns``: calls of two clients and one without a
    client sent at once to one OSD, over objects of several placement groups (the OSD runs those
    side by side): each call counts itself over its whole wall time at least, its client's calls
    never more than all calls, a call without a client none of its own; the client with one call
    counts only that call while others ran beside it, the client with six counts its own."""
    r, io, _ = ioctx
    n = 400_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array([i * 0.5 for i in range(n)])})
    pq.write_table(table, tmp_path / "big.parquet", row_group_size=n)
    data = (tmp_path / "big.parquet").read_bytes()
    names = [f"calls-{i}" for i in range(24)]
    for name in names:
        io.write_full(name, data)
    try:
        by_osd = {}
        for name in names:
            m = placement(r, ceph_cluster.data_pool, name)
            by_osd.setdefault(m["acting_primary"], {}).setdefault(m["pgid"], []).append(name)
        osd, by_pg = max(by_osd.items(), key=lambda kv: len(kv[1]))
        assert len(by_pg) >= 2, f"the objects' placement groups on osd.{osd}: {by_pg}"
        groups = list(by_pg.values())
        oids = [groups[i % len(groups)][(i // len(groups)) % len(groups[i % len(groups)])] for i in range(8)]
        clients = [9, 9, 9, 7, 9, 9, 9, 0]
        for _ in range(5):   # the OSD may run the lone client's call when the others are done: again
            beside = _calls_beside(io, oids, clients)
            if beside[3][1] > 1:
                break
        assert beside[3][0] <= 1 < beside[3][1], f"osd.{osd}, (own, all) calls beside each call: {beside}"
        assert max(beside[i][0] for i, c in enumerate(clients) if c == 9) > 1.2, f"osd.{osd}: {beside}"
    finally:
        for name in names:
            io.remove_object(name)


def test_the_index_beside_an_object_answers_a_lookup_in_the_osd(ioctx, ceph_cluster, edge_dataset):
    """rados_deploy's build over a CephFS directory keeps each object's index of a column in its
    omap, and a second build changes nothing; a scan with the index flag through the OSD answers a
    key the object lacks from the index and the footer alone, and a key it holds as a scan without
    the flag; a column the index does not hold is refused naming it (docs/protocol.md, "Index")."""
    built, again = ceph_cluster.index(edge_dataset, "id"), ceph_cluster.index(edge_dataset, "id")
    assert (built.objects, built.built, built.rows, built.keys) == (1, 1, 40, 40) and built.bytes > 0, built
    assert (again.built, again.unchanged, again.bytes) == (0, 1, built.bytes), again
    with pytest.raises(OperationalError, match="refused to index column 'amount'"):
        ceph_cluster.index(edge_dataset, "amount")
    _, cephfs = ceph_bindings()
    fs = cephfs.LibCephFS(conffile=ceph_cluster.client_conf("node1"))
    try:
        fs.mount(filesystem_name=ceph_cluster.fs_name.encode())
        d, names = fs.opendir(edge_dataset.encode()), []
        while (entry := fs.readdir(d)) is not None:
            names += [entry.d_name] if entry.d_name.endswith(b".parquet") else []
        fs.closedir(d)
        assert len(names) == 1, names   # the sample, one object
        oid = "%x.00000000" % fs.stat(edge_dataset.encode() + b"/" + names[0]).st_ino
    finally:
        fs.shutdown()
    r, _, _ = ioctx
    io = r.open_ioctx(ceph_cluster.data_pool)
    try:
        got = {}
        for key in (7, 1000):
            for flags in (1, 1 | FLAG_INDEX):
                req = Request(columns=["id", "name"], flags=flags, filter={"cmp": "==", "column": "id", "value": key})
                ret, out = scan(io, oid, req.encode())
                reply = decode_reply(out)
                got[key, flags] = pa.ipc.open_stream(reply.stream).read_all().to_pylist(), reply.stats
    finally:
        io.close()
    assert got[7, 1][0] == got[7, 1 | FLAG_INDEX][0] == [{"id": 7, "name": "ab-7"}], got
    assert got[7, 1 | FLAG_INDEX][1]["index_rows"] == 1 and got[7, 1][1]["index_ns"] == 0, got
    miss, plain = got[1000, 1 | FLAG_INDEX][1], got[1000, 1][1]
    assert got[1000, 1 | FLAG_INDEX][0] == [] and miss["rows_in"] == 0 and plain["rows_in"] == 40, got
    assert miss["read_calls"] <= 2 and miss["read_bytes"] < plain["read_bytes"], (miss, plain)   # the footer's reads
