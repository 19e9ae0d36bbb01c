"""Your own SSH hosts from ``sae run/plan --hosts FILE`` (docs/ssh.md): the hosts file checked at
load (one line naming the file and the field), against the plan (host count, layout names), the
refusals of --hosts beside --reservation or another provider, the roles-to-hosts mapping
``sae plan`` prints, and (cluster tier) a local cluster's hosts reached through the ssh provider
as a user's own machines."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import metareserve
import sae
from metareserve.errors import UsageError
from metareserve.layout import Layout
from monitor_deploy import read_frame
from metareserve.providers.ssh import load_hosts_file
from sae.cli import main
from sae.running import hosts as hosts_mod
from sae.running.runner import RunOptions, prepare

SELECTIVITY = Path(__file__).resolve().parents[2] / "experiments" / "selectivity.py"
SAE = str(Path(sys.executable).with_name("sae"))


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def hosts_file(tmp_path, hosts, **top):
    p = tmp_path / "hosts.yaml"
    p.write_text(yaml.safe_dump({**top, "hosts": hosts}) if top or isinstance(hosts, list) else hosts)
    return p


def four(tmp_path):
    return hosts_file(tmp_path, [{"name": f"lab{i}", "host": f"10.0.0.{i}"} for i in range(1, 5)])


@pytest.mark.parametrize("text, message", [
    ("hosts:\n- {name: lab1, host: 10.0.0.1, port: 70000}\n", r"hosts\[0\]\.port 70000 is not allowed"),
    ("hosts:\n- {name: 'a b', host: 10.0.0.1}\n", r"hosts\[0\]\.name 'a b' is not allowed"),
    ("- {host: 'x;reboot'}\n", r"hosts\[0\]\.host 'x;reboot' is not allowed"),
    ("- {host: x, user: Root}\n", r"hosts\[0\]\.user 'Root' is not allowed"),
    ("- {host: x, identity: '$HOME/key'}\n", r"hosts\[0\]\.identity '\$HOME/key' is not allowed"),
    ("- {host: x, port: '22'}\n", r"hosts\[0\]\.port '22' must be a whole number"),
    ("- {host: x, colour: red}\n", r"hosts\[0\]: unknown key 'colour'"),
    ("- {name: lab1}\n", r"hosts\[0\] needs at least 'host'"),
    ("- x\n- {name: x, host: 10.0.0.2}\n", r"hosts\[1\]: name 'x' is also hosts\[0\]'s"),
    ("hosts: []\n", "expected a list of hosts"),
    ("nodes: [x]\n", "unknown key"),
    ("ssh_config: missing_config\nhosts: [x]\n", "ssh_config 'missing_config'"),
    ("hosts: [x\n", "malformed YAML at line"),
])
def test_bad_hosts_files_are_one_line_naming_file_and_field(tmp_path, text, message):
    p = hosts_file(tmp_path, text)
    with pytest.raises(UsageError, match=message) as e:
        load_hosts_file(p)
    assert str(e.value).startswith(str(p)) and "\n" not in str(e.value)
    r = invoke("plan", "--hosts", p, SELECTIVITY)      # the same line from sae plan, exit 2
    assert r.exit_code == 2 and str(p) in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_good_hosts_file_forms(tmp_path):
    """A bare name, a mapping with every field, and ssh_config relative to the file."""
    (tmp_path / "my_ssh_config").write_text("Host *\n  StrictHostKeyChecking accept-new\n")
    p = hosts_file(tmp_path, ["lab1", {"name": "lab2", "host": "10.0.0.2", "port": 2222, "user": "ubuntu",
                                       "identity": "~/.ssh/id_ed25519", "address": "192.168.1.2",
                                       "python": "/usr/bin/python3", "labels": {"rack": "a"}}],
                   ssh_config="my_ssh_config")
    entries, config = load_hosts_file(p)
    assert [e["name"] for e in entries] == ["lab1", "lab2"] and config == str(tmp_path / "my_ssh_config")
    res = hosts_mod.load(p)
    assert res.provider == "ssh" and res.ssh_config == str(tmp_path / "my_ssh_config")
    assert res.nodes[0].user == "root" and res.nodes[1].cluster_address == "192.168.1.2"


def test_plan_prints_each_hosts_roles_and_unused_hosts(tmp_path):
    p = four(tmp_path)
    r = invoke("plan", "--hosts", p, SELECTIVITY)     # tiny: 3 hosts used, the fourth left over
    assert r.exit_code == 0, r.output
    assert "lab1 (root@10.0.0.1, address 10.0.0.1): storage: ceph-mon, ceph-mgr, ceph-mds, ceph-osd" in r.output
    assert "lab2 (root@10.0.0.2, address 10.0.0.2): compute: spark-master, driver, spark-worker" in r.output
    assert "unused: lab4" in r.output
    r = invoke("plan", "--hosts", p, "--json", SELECTIVITY)
    data = json.loads(r.output)
    (roles,) = data["hosts"].values()
    assert roles["lab3"] == ["spark-worker", "ceph-client"] and "lab4" not in roles


def test_paper_profile_needs_its_hosts_or_a_smaller_cluster(tmp_path):
    """17 hosts wanted, 4 given: refused naming both and the --set that plans on 4; with it,
    2 storage hosts and 2 compute hosts (the driver beside a worker)."""
    p = four(tmp_path)
    r = invoke("plan", "--hosts", p, "--profile", "paper", SELECTIVITY)
    assert r.exit_code == 2 and "4 hosts but point" in r.output and "needs 17" in r.output
    assert "--set cluster.nodes=4" in r.output
    r = invoke("plan", "--hosts", p, "--profile", "paper", "--set", "cluster.nodes=4", SELECTIVITY)
    assert r.exit_code == 0, r.output
    assert "lab2 (root@10.0.0.2, address 10.0.0.2): storage: ceph-osd, ceph-client" in r.output
    assert "lab3 (root@10.0.0.3, address 10.0.0.3): compute: spark-master, driver, spark-worker" in r.output
    assert "lab4 (root@10.0.0.4, address 10.0.0.4): compute: spark-worker, ceph-client" in r.output


def test_layouts_name_the_hosts_of_the_file(tmp_path):
    f = tmp_path / "named.py"
    f.write_text(textwrap.dedent("""
        from sae import ClusterSpec, Experiment
        roles = {'ceph-mon': ['lab1'], 'ceph-mgr': ['lab1'], 'ceph-mds': ['lab1'], 'ceph-osd': ['lab1'],
                 'spark-master': ['lab2'], 'driver': ['lab2'], 'spark-worker': ['lab3']}
        experiment = Experiment(name='named', cluster=ClusterSpec(nodes=3, layout=roles))
    """))
    p = four(tmp_path)
    _, plan = prepare(f, profile=None, options=RunOptions(hosts=str(p)))
    text = hosts_mod.mapping_text(plan, hosts_mod.load(p), str(p))
    assert "lab3 (root@10.0.0.3, address 10.0.0.3): compute: spark-worker" in text and "unused: lab4" in text
    f.write_text(f.read_text().replace("['lab3']", "['lab9']"))
    with pytest.raises(UsageError, match="lab9"):
        prepare(f, profile=None, options=RunOptions(hosts=str(p)))


def test_capacities_are_refused_on_own_hosts(tmp_path):
    r = invoke("plan", "--hosts", four(tmp_path), "--set", "cluster.link_rate=100mbit", SELECTIVITY)
    assert r.exit_code == 2 and "can only be emulated on the local provider" in r.output


def test_run_options_hosts_imply_ssh_and_refuse_the_rest(tmp_path, monkeypatch):
    p = four(tmp_path)
    monkeypatch.chdir(tmp_path)
    o = RunOptions(hosts="hosts.yaml")       # kept absolute: sae resume reads it from anywhere
    assert o.provider == "ssh" and o.hosts == str(p)
    assert RunOptions().provider == "local" and RunOptions(provider="cloudlab").provider == "cloudlab"
    with pytest.raises(UsageError, match="give one"):
        RunOptions(hosts=str(p), reservation="r.yaml")
    with pytest.raises(UsageError, match="drop --provider"):
        RunOptions(hosts=str(p), provider="local")
    with pytest.raises(UsageError, match="--provider ssh needs your hosts"):
        RunOptions(provider="ssh")
    assert RunOptions(provider="ssh", reservation="r.yaml").provider == "ssh"


@pytest.mark.parametrize("args, message", [
    (["--reservation", "r.yaml"], "give one"),
    (["--provider", "local"], "drop --provider"),
    (["--provider", "cloudlab"], "drop --provider"),
])
def test_sae_run_refuses_hosts_with_reservation_or_another_provider(tmp_path, args, message):
    """Refused in one line, exit 2, before any run directory is made."""
    r = invoke("run", "--hosts", four(tmp_path), *args, "--out", tmp_path / "out", SELECTIVITY)
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "out").exists()


def test_sae_run_provider_ssh_without_hosts_is_refused(tmp_path):
    r = invoke("run", "--provider", "ssh", "--out", tmp_path / "out", SELECTIVITY)
    assert r.exit_code == 2 and "--hosts FILE" in r.output and not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def lab(own_local_cluster):
    """(directory, the local cluster, a hosts file naming its hosts as a user names their own
    machines: names of their own, addresses, the key, an ssh_config of their own beside the file)."""
    with own_local_cluster("ssh") as (root, local):
        key = local.nodes[0].identity
        (root / "my_ssh_config").write_text(textwrap.dedent(f"""\
            Host *
              IdentityFile {key}
              IdentitiesOnly yes
              UserKnownHostsFile {root / 'my_known_hosts'}
              StrictHostKeyChecking accept-new
        """))
        path = root / "hosts.yaml"
        path.write_text(yaml.safe_dump({"ssh_config": "my_ssh_config", "hosts": [
            {"name": f"lab{i}", "host": n.host, "user": "root", "identity": key, "address": n.cluster_address}
            for i, n in enumerate(local.nodes, 1)]}))
        yield root, local, path


def test_own_local_cluster_hosts_through_the_ssh_provider(lab):
    """The ssh provider reserves the hosts of the file, they pass the health gate, a command runs
    on each, release leaves them alone, and ``sae plan --hosts`` plans on them."""
    root, local, path = lab
    res = metareserve.reserve(provider="ssh", name=f"{local.name}-own", hosts_file=path, out=root / "own.yaml")
    try:
        assert res.provider == "ssh" and [n.name for n in res.nodes] == ["lab1", "lab2", "lab3"]
        assert res.ssh_config == str(root / "my_ssh_config")
        assert metareserve.load_reservation(root / "own.yaml").nodes == res.nodes
        bad = [(h.node, h.reason) for h in metareserve.check(res) if not h.ok]
        assert not bad, bad
        with metareserve.Cluster(res) as c:
            own = c.run(["hostname"], stage="probe")
        with metareserve.Cluster(local) as c:
            expected = c.run(["hostname"], stage="probe")
        assert {name: out["stdout"].strip() for name, out in own.items()} == {
            f"lab{i}": expected[n.name]["stdout"].strip() for i, n in enumerate(local.nodes, 1)}
    finally:
        message = metareserve.release(res)
    assert "nothing to release" in message
    with metareserve.Cluster(local) as c:      # the hosts are untouched by the release
        assert all(out["rc"] == 0 for out in c.run(["true"], stage="probe").values())
    r = invoke("plan", "--hosts", path, SELECTIVITY)
    assert r.exit_code == 0, r.output
    first = local.nodes[0]
    assert f"lab1 (root@{first.host}, address {first.cluster_address}): storage: ceph-mon" in r.output
    assert "lab3" in r.output and "unused" not in r.output


PAPER_ON_THE_LAB = ["cluster.nodes=3", "spark.worker_cores=1", "spark.worker_memory=2g", "spark.executor_memory=1g",
                    "ceph.osd_size=4GiB", "data.rows=1000000", "data.object_size=16MiB", "data.link_multiplier=4",
                    "pause=2"]
"""The paper profile's sizes set down to the local cluster's hosts, as docs/ssh.md says to for
hosts smaller than m510 nodes (its store, bluestore, and its scrapes kept)."""


def _packages_of_a_run() -> list[str]:
    """The Debian packages sae's deployers install on a run's hosts."""
    from monitor_deploy.deploy import PACKAGES as MONITOR
    from rados_deploy.options import CephOptions
    from sae.connector import SYSTEM_PACKAGES
    from spark_deploy.software import JAVA_PACKAGES
    ceph = CephOptions()
    return [*ceph.packages, *ceph.client_packages, *ceph.class_build_packages, *ceph.library_build_packages,
            *JAVA_PACKAGES, *SYSTEM_PACKAGES, *MONITOR.values(), "python3-venv", "rsync"]


def test_sae_run_on_own_hosts_end_to_end(lab):
    """``sae run --hosts FILE`` with the paper profile on fewer, smaller hosts, as docs/ssh.md tells
    a user (``cluster.nodes`` and the sizes set down): every stage on the hosts of the file over
    SSH (install, start, data, build, two readers' queries, metric windows, --teardown), the
    paper's roles on the file's 3 hosts as docs/ssh.md maps them (one storage host with the OSD,
    bluestore; the driver beside a worker), the run recorded under the file's host names, both
    readers exact. Own hosts reach their mirrors; these namespaces do not, so what sae would
    install there goes on the package database they share with this machine first (nothing,
    after the session's other stacks)."""
    from metareserve.remote import node_agent
    root, local, path = lab
    missing = node_agent.missing_packages(_packages_of_a_run())
    if missing:
        node_agent.apt_install(missing)
    r = subprocess.run([SAE, "run", SELECTIVITY, "--hosts", path, "--out", root / "out", "--teardown",
                        "--profile", "paper", *(f"--set={s}" for s in PAPER_ON_THE_LAB),
                        "--set", "sweep.cartesian.selectivity=[10]",
                        "--set", "sweep.cartesian.reader=[offload, vanilla]",
                        "--set", "repetitions=1", "--set", "warmup=0", "--set", "drift=false",
                        "--set", "spark.jit=quick"],
                       capture_output=True, text=True, cwd=root, env=dict(os.environ, SAE_HOME=str(root / "home")))
    assert r.returncode == 0, r.stderr[-3000:]
    run = Path(r.stdout.strip().splitlines()[-1])
    res = metareserve.load_reservation(run / "reservation.yaml")
    assert res.provider == "ssh" and [n.name for n in res.nodes] == ["lab1", "lab2", "lab3"]
    layout = Layout.load(run / "layout.yaml")
    assert layout.host_roles() == {"lab1": "storage", "lab2": "compute", "lab3": "compute"}
    assert layout.names("ceph-osd") == ["lab1"] and layout.names("driver") == ["lab2"]
    assert layout.names("spark-worker") == ["lab2", "lab3"]
    df = sae.load_results(run)
    assert sorted(df.reader) == ["offload", "vanilla"] and not df.warmup.any()
    plan = yaml.safe_load((run / "plan.yaml").read_text())
    assert plan["profile"] == "paper" and {p["params"]["ceph"]["store"] for p in plan["points"]} == {"bluestore"}
    assert (df.hosts == 3).all() and (df.storage_hosts == "lab1").all() and (df.compute_hosts == "lab2,lab3").all()
    assert df.rows_out.nunique() == 1 and df.checksum.nunique() == 1
    scanned = df.rows.iloc[0] * df.link_multiplier.iloc[0]
    assert 0.05 * scanned < df.rows_out.iloc[0] < 0.15 * scanned
    by = df.set_index("reader")
    assert 0 < by.compute_rx_bytes["offload"] < by.compute_rx_bytes["vanilla"] / 3
    for point in df.point:
        window = read_frame(run / "metrics" / point / "rep0" / "metrics.parquet")
        assert {"lab1", "lab2", "lab3"} <= set(window.node) and len(window) > 0
    stages = {s["stage"]: s for s in yaml.safe_load((run / "stages.yaml").read_text())}
    assert "stop" in stages and all(n["changed"] for n in stages["stop"]["nodes"].values())


def test_one_reservation_name_per_set_of_hosts(tmp_path):
    """Every experiment on the same hosts records them under one ``sae-*`` name (the stack
    deployed there is shared and ``sae clean`` stops it); other hosts get another."""
    a = hosts_mod.load(four(tmp_path))
    renamed = hosts_mod.load(hosts_file(tmp_path, [{"name": f"x{i}", "host": f"10.0.0.{i}"} for i in range(1, 5)]))
    other = hosts_mod.load(hosts_file(tmp_path, [{"name": "lab1", "host": "10.0.0.9"}]))
    name = hosts_mod.reservation_name(a)
    assert name.startswith("sae-own-") and name == hosts_mod.reservation_name(renamed)
    assert name != hosts_mod.reservation_name(other)
    metareserve.validate.name(name, "reservation name")
