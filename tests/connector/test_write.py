"""The connector's write path end to end (docs/connector.md, "Writing") on the session's stack:
one Spark application (tests/connector/apps/writes.py) writes the taxi dataset and slices of it
through sae-ceph, with a task failing, a straggler under speculation and an executor killed
mid-write, and reads every output back through offload, auto, no-offload and vanilla Spark over
the mount; the tests check its answers and what the directories hold."""
import json
import re
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures.ceph import client_python
from fixtures.spark import SPARK_ROLES
from metareserve import Cluster, Layout
from rados_deploy import ops, sessions
from sae import connector
from sae.connector import manifest
from spark_deploy import SparkCluster

APP = Path(__file__).parent / "apps" / "writes.py"
FAULTS = Path(__file__).parent / "WriteFaults.java"
ROOT = "/data/test-writes"
SPECULATION = {"spark.speculation": "true", "spark.speculation.interval": "200ms", "spark.speculation.quantile": "0.5",
               "spark.speculation.multiplier": "1.5", "spark.speculation.minTaskRuntime": "3s"}

REMOVE = """
import os, sys, cephfs
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
def remove(path):
    try:
        st = fs.stat(path)
    except cephfs.ObjectNotFound:
        return
    if st.st_mode & 0o040000:
        d = fs.opendir(path)
        names = []
        while (e := fs.readdir(d)) is not None:
            if e.d_name not in (b".", b".."):
                names.append(e.d_name.decode())
        fs.closedir(d)
        for n in names:
            remove(path + "/" + n)
        fs.rmdir(path)
    else:
        fs.unlink(path)
for p in sys.argv[1:]:
    remove(p)
fs.shutdown()
"""


def _remove(ceph, *paths: str) -> None:
    client_python(ceph, ceph.topology.clients[0], REMOVE, *paths)


STATE = """
import json, os, sys, cephfs
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
d, names = fs.opendir(sys.argv[1]), []
while (e := fs.readdir(d)) is not None:
    if e.d_name not in (b".", b".."):
        names.append(e.d_name.decode())
fs.closedir(d)
def read(name):
    path = sys.argv[1] + "/" + name
    fd = fs.open(path, os.O_RDONLY, 0)
    try:
        return fs.read(fd, 0, fs.stat(path).st_size)
    finally:
        fs.close(fd)
s = state(names, read)
fs.shutdown()
print(json.dumps({"visible": s.visible, "leftovers": s.leftovers}))
"""


def _dir_state(ceph, path: str) -> dict:
    """sae.connector.manifest's state of CephFS directory ``path``, listed on a node through
    libcephfs (the mount is in the nodes' mount namespaces, not the test's)."""
    return client_python(ceph, ceph.topology.clients[0], Path(manifest.__file__).read_text() + STATE, path)


@pytest.fixture(scope="module")
def faults_jar(tmp_path_factory):
    """tests/connector/WriteFaults.java (the fault-injecting UDF) compiled against Spark's jars."""
    import pyspark
    out = tmp_path_factory.mktemp("faults")
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", f"{Path(pyspark.__file__).parent / 'jars'}/*",
                    "-d", str(out / "classes"), str(FAULTS)], check=True, capture_output=True)
    subprocess.run(["jar", "cf", str(out / "faults.jar"), "-C", str(out / "classes"), "."], check=True)
    return out / "faults.jar"


@pytest.fixture(scope="module")
def written(local_cluster, spark_cluster, ceph_cluster, taxi_dataset, faults_jar, tmp_path_factory):
    """The application's answers, the storage operations of its one-object write, the CephFS
    sessions of the executors it lost, evicted, and how many executors it lost."""
    spec = connector.build(spark=spark_cluster, ceph=ceph_cluster)
    nodes = [spark_cluster.driver_node, *spark_cluster.worker_nodes]
    mount = ceph_cluster.mount(nodes).details["mountpoint"]
    handshake = tmp_path_factory.mktemp("handshake")
    cfg = {"src": f"file://{mount}{taxi_dataset.dest}", "mount": mount, "root": ROOT, "options": spec.options,
           "write_options": spec.write_options, "handshake": str(handshake)}
    kwargs = spec.submit_kwargs()
    kwargs["conf"].update(SPECULATION)
    kwargs["jars"].append(str(faults_jar))
    kwargs["py_files"].append(manifest.__file__)
    steps = {"before": threading.Event(), "after": threading.Event()}
    lost, losses = threading.Event(), set()

    def on_line(line: str) -> None:
        if line.startswith("sae-ops ") and line[8:].strip() in steps:
            steps[line[8:].strip()].set()
        if match := re.search(r"Lost executor (\d+)", line):
            losses.add(match.group(1))   # executor ids are not reused: one per loss
            lost.set()

    counts = {}
    try:
        # the application holds its connection to the driver's node while it runs, and the counts
        # need that node (an OSD, the MDS): it runs over connections of its own
        with Cluster(local_cluster) as own, ThreadPoolExecutor(1) as pool:
            spark = SparkCluster(local_cluster, Layout(SPARK_ROLES), spark_cluster.options, cluster=own)
            running = pool.submit(spark.submit, str(APP), args=[json.dumps(cfg)], on_line=on_line,
                                  log_dir=tmp_path_factory.mktemp("logs"), **kwargs)
            for step, event in steps.items():   # counted here: not in on_line, which runs in the connection's thread
                while not event.wait(1):
                    if running.done():
                        running.result()
                        pytest.fail(f"the application ended before sae-ops {step}")
                counts[step] = ops.snapshot(ceph_cluster)
                (handshake / step).touch()
            # A killed executor's MDS session keeps the capabilities it held on the directory and
            # its files until the MDS times it out (measured: the kill's job took 65 s, its commit
            # waiting); end it as sae's stages do once its process is gone.
            evicted = []
            while not running.done():
                if lost.wait(0.5):
                    lost.clear()
                    evicted += [str(s) for found in sessions.evict_dead_clients(ceph_cluster).values() for s in found]
            result = running.result()
        line = next(ln for ln in result.stdout.splitlines() if ln.startswith("sae-result "))
        yield json.loads(line[len("sae-result "):]), counts["after"].delta(counts["before"]), evicted, len(losses)
    finally:
        _remove(ceph_cluster, ROOT)


def test_a_copy_reads_back_the_same_through_every_reader(written, taxi_dataset):
    """The dataset written by two tasks: every reader gets its rows (count and checksum over every
    column); every committed file is one 4 MiB object at most, and a manifest names them all."""
    out = written[0]
    copy = out["copy"]
    assert out["input"][0] == taxi_dataset.rows
    assert all(ck == out["input"] for ck in copy["checksums"].values()), (out["input"], copy["checksums"])
    assert copy["committed"] and all(0 < s <= 4 << 20 for s in copy["sizes"].values()), copy["sizes"]
    # a task's first file comes out small (Parquet's estimate counts its open pages uncompressed),
    # its later ones fill their object, but its last
    later = sorted(size for name, size in copy["sizes"].items() if name.rsplit("-", 1)[1] != "0.parquet")
    assert later[2:] and min(later[2:]) > 0.75 * (4 << 20), copy["sizes"]   # the two smallest: the tasks' last
    assert copy["leftovers"] == [], copy
    assert [n for n in copy["files"] if n.startswith("_sae-write-")] == [n for n in copy["files"] if n.endswith(".json")]
    assert sorted(set(copy["files"]) - set(copy["committed"])) == [n for n in copy["files"] if n.endswith(".json")]


def test_a_one_object_write_counts_its_storage_operations(written):
    """A slice written by one task is one file, one object, plus its manifest; the storage
    operations it cost (MDS requests by type, OSD ops) are printed (Stocator's goal: 8 or fewer)."""
    out, delta, *_ = written
    one = out["one"]
    assert one["checksums"]["offload"] == out["one_input"] == one["checksums"]["vanilla"], one
    assert len(one["committed"]) == 1 and len(one["files"]) == 2, one
    assert delta is not None, "a Ceph daemon restarted during the one-object write"
    mds = {k: v for k, v in delta.mds.items() if k != "client_requests"}
    print(f"\none-object write ({one['seconds']:.1f} s): MDS requests {delta.mds}, OSD {delta.osd}")
    print(f"storage operations: {sum(mds.values())} MDS requests + {delta.osd['op']} OSD ops "
          f"(of them writes {delta.osd['op_w']}, reads {delta.osd['op_r']}, read-modify-writes {delta.osd['op_rw']})")
    assert mds.get("create", 0) >= 2 and delta.osd["op_w"] >= 2, (delta.mds, delta.osd)


def test_append_adds_and_overwrite_replaces(written):
    """Overwrite A, append B: readers see A and B; overwrite C: readers see C alone, and A's and B's
    files and manifests are gone; ``SaeCephProvider.delete`` removes the directory whole."""
    out = written[0]
    s, modes = out["slices"], out["modes"]
    both = [s["A"][0] + s["B"][0], s["A"][1] + s["B"][1]]
    assert all(ck == s["A"] for ck in modes["A"]["checksums"].values()), modes["A"]
    assert all(ck == both for ck in modes["A+B"]["checksums"].values()), modes["A+B"]
    assert all(ck == s["C"] for ck in modes["C"]["checksums"].values()), modes["C"]
    assert len([n for n in modes["A+B"]["files"] if n.startswith("_sae-write-")]) == 2
    assert sorted(modes["C"]["files"]) == sorted(modes["C"]["committed"] + [n for n in modes["C"]["files"]
                                                                            if n.startswith("_sae-write-")])
    assert len([n for n in modes["C"]["files"] if n.startswith("_sae-write-")]) == 1
    assert modes["C"]["leftovers"] == []
    assert out["delete"] == [True, False, False]   # removed (through the writer's cephx user), then nothing to remove


@pytest.mark.parametrize("fault", ["fail", "straggle", "kill"])
def test_a_fault_leaves_exactly_the_input_committed(written, ceph_cluster, fault, figure):
    """A task that fails and is retried, a straggler overtaken by its speculative copy, an executor
    killed mid-write (its files written before it died removed by the commit): the committed output
    holds exactly the input's rows (the straggler's job overwriting an earlier output, which both
    readers' listings still give whole while the job's files are there), through the connector
    and vanilla Spark, and the directory holds nothing that no manifest names, seen from the driver
    right after the job and from another node after the application."""
    out, _, evicted, losses = written
    got = out["faults"][fault]
    assert "error" not in got, got
    assert losses == 1, "one executor lost in the application: the kill fired, and neither other fault loses one"
    assert all(ck == out["input"] for ck in got["checksums"].values()), (fault, out["input"], got["checksums"])
    zero = [n for n in got["committed"] if n.split("-")[2] == "0"]   # part-<job>-<partition>-<task>-<attempt>-<n>
    assert zero, got["committed"]
    if fault != "kill":   # (a lost executor's shuffle output runs the stage again, from attempt 0)
        assert all(int(n.split("-")[4]) >= 1 for n in zero), zero
    assert got["leftovers"] == [], got
    if fault == "straggle":   # it overwrote an earlier output, read while the job ran: that one, whole
        seen = got["in_flight"]
        assert seen and seen["new_files"] > 0, seen
        assert seen["python"] == seen["java"] == seen["before"] and seen["before"], seen
    state = _dir_state(ceph_cluster, f"{ROOT}/{fault}")
    assert state == {"visible": got["committed"], "leftovers": []}, state
    figure(f"{fault}: the write took {got['seconds']:.1f} s" + (f"; evicted {', '.join(evicted)}" if fault == "kill"
                                                                 else ""))


def test_bad_writes_are_refused_in_one_line(written):
    """An object size that is no multiple of 64 KiB, a column the connector cannot read back (an
    array), a path that
    does not exist: one line naming the option, column or path and what to do."""
    r = written[0]["refusals"]
    assert "sae-ceph option object_size='5000000' is invalid; use a multiple of 64 KiB" in r["object_size"], r
    assert "sae-ceph: column a is array<int>, which the connector cannot read back" in r["array"], r
    assert "cast or drop it before writing" in r["array"], r
    assert f"{ROOT}/nowhere does not exist in CephFS" in r["missing"], r


LAYOUT_PROBE = """
import errno, json, os, sys, cephfs, rados
r = rados.Rados(conffile=os.environ["CEPH_CONF"]); r.connect()
def auth(prefix, **kw):
    ret, out, err = r.mon_command(json.dumps(dict(prefix=prefix, format="json", **kw)), b"")
    assert ret == 0, err
    return json.loads(out) if out else None
out = {}
fs = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"]); fs.mount()
fs.mkdirs(sys.argv[1], 0o755)
for mds in ("allow rw", "allow rwp"):
    key = auth("auth get-or-create", entity="client.sae-layout-probe",
               caps=["mds", mds, "mon", "allow r", "osd", "allow rw pool=cephfs_data"])[0]["key"]
    user = cephfs.LibCephFS(conffile=os.environ["CEPH_CONF"], auth_id="sae-layout-probe", conf={"key": key})
    user.mount()
    path = sys.argv[1] + "/probe"
    fd = user.open(path, os.O_CREAT | os.O_WRONLY, 0o644); user.close(fd)
    try:
        user.setxattr(path, "ceph.file.layout", b"stripe_unit=4194304 stripe_count=1 object_size=4194304", 0)
        out[mds] = "ok"
    except cephfs.Error as e:
        out[mds] = errno.errorcode.get(abs(e.errno), str(e.errno))
    user.unlink(path); user.shutdown()
    auth("auth rm", entity="client.sae-layout-probe")
fs.rmdir(sys.argv[1]); fs.shutdown(); r.shutdown()
print(json.dumps(out))
"""


def test_the_writer_needs_mds_cap_p_for_a_files_own_layout(ceph_cluster):
    """A file of one object needs a layout of its own, which the MDS grants only to a user with
    cap p: with MDS caps rw it refuses (EACCES), with rwp (users.write's) it sets it."""
    got = client_python(ceph_cluster, ceph_cluster.topology.clients[0], LAYOUT_PROBE, f"{ROOT}-layout")
    assert got == {"allow rw": "EACCES", "allow rwp": "ok"}, got
    assert ceph_cluster.users.write.caps["mds"] == "allow rwp"
