"""The shipped experiment files as a catalogue (pure: nothing runs): every tiny profile shares one
local stack, every paper profile is the thesis's cluster and repetitions, the thesis's grids, the
one layout rule in docs/cloudlab.md, which figures a run gets, and a bad file stopping the
catalogue before anything is reserved."""
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import sae
from metareserve import Layout, Node, Reservation
from sae.planning.loader import experiment_files
from sae.cli import main
from metareserve.errors import UsageError
from sae.results.drawing.report import figure_names
from sae.planning.figures import FIGURES

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"
SHIPPED = {"alleviation", "backend", "bandwidth", "batchsize", "objectsize", "objectsize_selectivity", "projection",
           "scalability", "selectivity", "storedcompression", "queries", "contention", "autoscaler", "formats",
           "versions", "scale", "indexed", "writes"}
LOCAL_ONLY = {"bandwidth"}   # emulated link rates: no testbed profile
HOST_AXIS = {"scale"}        # sweeps the number of hosts: a stack per size


def plans(profile: str) -> dict:
    """Every shipped experiment's plan in ``profile`` (those that define it)."""
    experiments = [sae.load_experiment(f) for f in experiment_files(EXPERIMENTS)]
    return {e.name: sae.plan(e.with_profile(profile), profile=profile) for e in experiments if profile in e.profiles}


def test_catalogue_lists_every_shipped_experiment():
    assert {f.stem for f in experiment_files(EXPERIMENTS)} == SHIPPED


def test_tiny_profiles_share_one_stack_and_their_datasets():
    tiny = plans("tiny")
    assert set(tiny) == SHIPPED
    scale = tiny.pop("scale")
    assert [p.spec.cluster.nodes for p in scale.points if p.stack_key != scale.points[0].stack_key][::6] == [5, 9, 17]
    assert len({p.stack_key for plan in tiny.values() for p in plan.points}) == 1
    assert {p.spec.cluster.nodes for plan in tiny.values() for p in plan.points} == {3}
    datasets = {p.data_key for plan in tiny.values() for p in plan.points}
    # 16 MiB x 4 links (shared by most), 4 and 64 MiB sizes, links 1 (bandwidth) and 2, three more
    # codecs, the same rows as Arrow IPC files and as CSV files, and in pages for lookups (indexed)
    assert len(datasets) == 11, datasets


def test_paper_profiles_are_the_thesis_cluster_and_runs():
    assert set(plans("paper")) == SHIPPED - LOCAL_ONLY
    for name, plan in plans("paper").items():
        assert {p.spec.cluster.nodes for p in plan.points} == ({5, 9, 17} if name in HOST_AXIS else {17}), name
        assert (plan.repetitions, plan.warmup) == (21, 1), name
        assert {p.spec.ceph.store for p in plan.points} == {"bluestore"}, name
    grid = plans("paper")["objectsize_selectivity"].points
    assert sorted({p.spec.data.object_size >> 20 for p in grid}) == [4, 8, 16, 32, 64, 128]
    assert sorted({p.spec.workload.selectivity for p in grid}) == [1, 10, 25, 50, 75, 90, 99, 100]
    scale = plans("paper")["scalability"].points
    assert sorted({p.spec.data.link_multiplier for p in scale}) == [16, 32, 64, 128, 256, 512]
    assert {p.spec.workload.reader for p in scale} == {"offload", "vanilla"}
    # the thesis's query (§5.1.3: every row, 8192-row batches, decoded in the OSD) and a filter
    assert sorted({p.spec.workload.selectivity for p in scale}) == [10, 100]
    assert {(p.spec.workload.batch_size, p.spec.workload.whole_objects) for p in scale} == {(8192, False)}
    codecs = {p.spec.data.stored_compression for p in plans("paper")["storedcompression"].points}
    assert codecs == {"none", "snappy", "gzip", "zstd"}
    widths = {len(p.spec.workload.columns) or 19 for p in plans("paper")["projection"].points}
    assert min(widths) == 1 and max(widths) == 19


def test_cloudlab_doc_shows_the_layout_rule():
    text = (ROOT / "docs" / "cloudlab.md").read_text()
    block = re.search(r"```yaml\n(version: 1\nroles:.*?)```", text, re.S).group(1)
    seventeen = Reservation("paper", "cloudlab", [Node(f"node{i}", f"h{i}") for i in range(1, 18)])
    documented = Layout.from_dict(yaml.safe_load(block))
    assert documented.roles == Layout.default(seventeen).roles
    assert len(documented.names("spark-worker")) == len(documented.names("ceph-osd")) == 8
    assert set(documented.names("driver")).isdisjoint(documented.names("spark-worker") + documented.names("ceph-osd"))


DECLARED = {"selectivity": ["selectivity", "compute-side"], "alleviation": ["points", "alleviation", "resources-disk"],
            "objectsize": ["objectsize"], "backend": ["backend"], "bandwidth": ["bandwidth"],
            "objectsize_selectivity": ["objectsize-selectivity", "compute-side", "objectsize"],
            "scalability": ["scalability"], "batchsize": ["batchsize"], "storedcompression": ["storedcompression"],
            "projection": ["projection"], "queries": ["queries"], "contention": ["contention"],
            "autoscaler": ["autoscaler"], "formats": ["formats"], "versions": ["versions"], "scale": ["scale"],
            "indexed": ["indexed-lookups", "indexed-joins", "indexed-append-reads", "indexed-appends",
                        "indexed-executor-loss"], "writes": ["writes"]}


def test_each_experiment_declares_its_figures_and_gets_the_standard_ones():
    for name, plan in plans("tiny").items():
        assert figure_names(plan) == DECLARED[name] + ["time-composition", "storage-phases", "storage-ops", "resources"], name
        assert type(plan).from_dict(plan.to_dict()).figures == plan.figures


def test_every_figure_entry_names_a_drawing_function():
    assert all(callable(f.function()) for f in FIGURES.values())


def test_an_unknown_figure_is_refused_at_load_in_one_line(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("from sae import Experiment\nexperiment = Experiment(name='bad', figures=('selectivty',))\n")
    with pytest.raises(UsageError) as e:
        sae.plan(sae.load_experiment(f))
    assert "figures: unknown figure 'selectivty'" in str(e.value) and "\n" not in str(e.value)


def test_a_bad_experiment_file_stops_the_catalogue_before_anything(tmp_path):
    (tmp_path / "good.py").write_text((EXPERIMENTS / "batchsize.py").read_text())
    (tmp_path / "bad.py").write_text("from sae import Experiment\nexperiment = Experiment(name='bad', repetitions=0)\n")
    r = CliRunner().invoke(main, ["run", str(tmp_path), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "bad.py" in r.output and "repetitions" in r.output, r.output
    assert not (tmp_path / "out").exists()


def test_exclude_leaves_experiments_out_and_refuses_a_name_it_cannot_leave_out(tmp_path):
    """``--exclude NAME`` plans and runs the catalogue without those experiments (a setting scoped
    to one left out is still accepted); an unknown name, leaving out everything, or a single
    file is refused in one line before anything is written."""
    from sae.running.catalogue import plan_catalogue
    kept = {f.stem for f, _ in plan_catalogue(EXPERIMENTS, exclude=("selectivity", "versions"),
                                               set=["selectivity:repetitions=2"])}
    assert kept == SHIPPED - {"selectivity", "versions"}
    out = tmp_path / "out"
    for args, says in (
            (["run", str(EXPERIMENTS), "--exclude", "selectivty"],
             "--exclude selectivty: no experiment of that name in "),
            (["run", str(EXPERIMENTS), *[a for name in sorted(SHIPPED) for a in ("--exclude", name)]],
             "--exclude leaves no experiment of "),
            (["run", str(EXPERIMENTS / "selectivity.py"), "--exclude", "versions"],
             "selectivity.py is one experiment file; --exclude leaves experiments of a directory out"),
            (["plan", str(EXPERIMENTS / "selectivity.py"), "--exclude", "versions"], "is one experiment file")):
        r = CliRunner().invoke(main, [*args, "--out", str(out)] if args[0] == "run" else args)
        assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not out.exists()
    r = CliRunner().invoke(main, ["plan", str(EXPERIMENTS), "--exclude", "versions"])
    assert r.exit_code == 0 and f"catalogue {EXPERIMENTS}: {len(SHIPPED) - 1} experiments" in r.output
    assert "== " + str(EXPERIMENTS / "versions.py") not in r.output
