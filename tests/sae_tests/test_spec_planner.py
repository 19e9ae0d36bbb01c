"""Pure layer: experiment validation, profiles, sweeps and the planner's order (no nodes)."""

import pytest

import sae
from metareserve import parse_size
from metareserve.errors import UsageError
from sae.connector import SubmitSpec
from sae.running.context import dataset_dirs, dataset_path
from sae.planning.planner import plan
from sae.planning.spec import CephSpec, DataSpec, Experiment, SparkSpec, Sweep, Workload, validate


def exp(**kw):
    base = dict(name="t", sweep=Sweep(cartesian={"selectivity": [10, 100]}), repetitions=3, warmup=1)
    base.update(kw)
    return Experiment(**base)


@pytest.mark.parametrize("kw, message", [
    (dict(sweep=Sweep(cartesian={"selectivity": [0, 50]})), "outside (0, 100]"),
    (dict(sweep=Sweep(cartesian={"selectivity": [101]})), "outside (0, 100]"),
    (dict(sweep=Sweep(cartesian={"selectivity": []})), "has no values"),
    (dict(sweep=Sweep(cartesian={"selectivity": [1, 2]}, where=lambda p: False)), "sweep is empty"),
    (dict(sweep=Sweep(cartesian={"colour": [1]})), "unknown axis 'colour'"),
    (dict(sweep=Sweep(zipped={"selectivity": [1, 2], "reader": ["offload"]})), "differ in length"),
    (dict(sweep=Sweep(cartesian={"offload": [True, False]})), "use reader='offload' or 'no-offload'"),
    (dict(workload=Workload(reader="connector")), "reader 'connector' is not one of offload, offload-index, auto, no-offload, vanilla"),
    (dict(profiles={"tiny": {"workload": {"offload": False}}}), "folded into workload.reader"),
    (dict(stages={"warmup": lambda given: None}), "unknown stage 'warmup'"),
    (dict(stages={"run": lambda session, point: None}),
     "stage 'run' must be a function taking one StageInput and returning a StageResult (sae.running), "
     "not <lambda>(session, point)"),
    (dict(stages={"run": "stage_run"}), "stage 'run' must be a function taking one StageInput"),
    (dict(warmup=3), "warmup must be"),
    (dict(repetitions=0), "repetitions must be"),
    (dict(workload=Workload(compression="gzip")), "compression 'gzip'"),
    (dict(workload=Workload(columns="VendorID")), "workload.columns must be a list"),
    (dict(workload=Workload(columns=("VendorID", "colour"))), "unknown column(s) 'colour'"),
    (dict(workload=Workload(column="fare")), "unknown column(s) 'fare'"),
    (dict(data=DataSpec(object_size="huge")), "data.object_size"),
    (dict(data=DataSpec(object_size="1MiB")), "outside 4MiB..256MiB"),
    (dict(data=DataSpec(object_size="16MB")), "16000000 bytes is not a multiple of 64KiB"),
    (dict(data=DataSpec(page_rows=0)), "data.page_rows 0 is not a whole number of rows in 1..1048576"),
    (dict(data=DataSpec(page_rows="1000")), "data.page_rows '1000' is not a whole number"),
    (dict(data=DataSpec(format="csv", page_rows=1000)), "data.page_rows 1000: only Parquet objects have pages"),
    (dict(ceph=CephSpec(osd_size="8 furlongs")), "ceph.osd_size: '8 furlongs' is not a size"),
    (dict(ceph=CephSpec(osd_size="0GiB")), "ceph.osd_size: '0GiB' is below the minimum"),
    (dict(ceph=CephSpec(pg_autoscale="on")), "ceph.pg_autoscale must be true or false, not 'on'"),
    (dict(cluster=sae.ClusterSpec(nodes=2, layout={"ceph-osd": [3]})), "names 3, not a node name"),
    (dict(workload=Workload(objects_per_partition=0)), "workload.objects_per_partition must be an integer >= 1"),
    (dict(workload=Workload(whole_objects="no")), "workload.whole_objects must be true or false, not 'no'"),
    (dict(spark=sae.SparkSpec(worker_memory="2 gigs")), "spark: worker_memory must look like 512m or 2g"),
    (dict(spark=sae.SparkSpec(executor_memory=4)), "spark: executor_memory must look like 512m or 2g"),
    (dict(spark=sae.SparkSpec(driver_memory="lots")), "spark: driver_memory must look like 512m or 2g"),
    (dict(spark=sae.SparkSpec(conf={"executor.cores": 2})), "spark: conf keys must be Spark properties"),
    (dict(monitor=sae.MonitorSpec(scrape_interval="2 parsecs")), "scrape_interval '2 parsecs' is not a Prometheus"),
])
def test_invalid_experiments_fail_in_one_line(kw, message):
    with pytest.raises(UsageError) as e:
        plan(exp(**kw).with_profile("tiny" if "profiles" in kw else None))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_old_offload_option_fails_in_one_line(tmp_path):
    f = tmp_path / "old.py"
    f.write_text("from sae import Experiment, Workload\n"
                 "experiment = Experiment(name='old', workload=Workload(offload=True))\n")
    with pytest.raises(UsageError) as e:
        sae.load_experiment(f)
    assert str(e.value).startswith(f"{f}:2: Workload(offload=True): workload.offload was folded into "
                                   "workload.reader") and "\n" not in str(e.value)


def test_reader_axis_picks_the_readers_source():
    readers = ["offload", "no-offload", "vanilla"]
    points = validate(exp(sweep=Sweep(cartesian={"selectivity": [1], "reader": readers})))
    assert [p.workload.reader for _, p in points] == readers
    build = SubmitSpec(py_files=[], jars=[], conf={}, env={}, options={"ceph_user": "sae-scan"})
    sources = [p.workload.read_source("/data/taxi", build=build, mount="/mnt/cephfs") for _, p in points]
    assert [s.options.get("mode") for s in sources] == ["offload", "no-offload", None]
    assert sources[0].options["ceph_user"] == "sae-scan" and sources[0].format == "sae-ceph"
    assert (sources[2].format, sources[2].path) == ("parquet", "file:///mnt/cephfs/data/taxi")
    assert "offload" not in points[0][1].params()["workload"]
    assert "whole_objects" not in points[0][1].workload.connector_options()   # the connector's default
    assert Workload(whole_objects=False).connector_options()["whole_objects"] == "false"


def test_auto_s_choice_can_be_forced_and_only_auto_s():
    """Workload.pushback forces the auto reader's per-object choice (the connector's option
    pushback, set only when not the default); an unknown value, or any but the default with
    another reader, is refused at plan time in one line."""
    build = SubmitSpec(py_files=[], jars=[], conf={}, env={}, options={"ceph_user": "sae-scan"})
    points = validate(exp(sweep=Sweep(cartesian={"selectivity": [1], "pushback": ["cost", "always", "half"]}),
                          workload=Workload(reader="auto")))
    sources = [p.workload.read_source("/data/taxi", build=build, mount=None) for _, p in points]
    assert ["pushback" in s.options for s in sources] == [False, True, True]
    assert [s.options["pushback"] for s in sources[1:]] == ["always", "half"]
    assert all(s.options["mode"] == "auto" for s in sources)
    for workload, text in (({"reader": "auto", "pushback": "sometimes"}, "workload.pushback 'sometimes' is not one of"),
                           ({"reader": "offload", "pushback": "never"}, "applies to reader auto only, not offload")):
        with pytest.raises(UsageError) as e:
            validate(exp(workload=Workload(**workload)))
        assert text in str(e.value) and "\n" not in str(e.value)


def test_csv_data_is_read_with_the_datas_schema_and_refused_where_it_cannot_be():
    """CSV objects store no schema: the connector and Spark's CSV reader are both given the
    data's own (the types Spark reads its Parquet as); auto plans too (it scans objects read
    whole with the class's own scan); a query joining the Parquet zones table is refused at plan
    time, in one line."""
    readers = ["offload", "no-offload", "vanilla", "auto"]
    points = validate(exp(data=DataSpec(format="csv"), sweep=Sweep(cartesian={"selectivity": [1], "reader": readers})))
    build = SubmitSpec(py_files=[], jars=[], conf={}, env={}, options={"ceph_user": "sae-scan"})
    sources = [p.workload.read_source("/data/taxi", build=build, mount="/mnt/cephfs", fmt=p.data.format)
               for _, p in points]
    ddl = ("`VendorID` INT, `tpep_pickup_datetime` TIMESTAMP_NTZ, `tpep_dropoff_datetime` TIMESTAMP_NTZ, "
           "`passenger_count` BIGINT, `trip_distance` DOUBLE")
    assert all(s.schema.startswith(ddl) and s.schema.count("`") == 2 * 19 for s in sources)
    assert (sources[2].format, sources[2].options, sources[2].app_config()["schema"]) == ("csv", {"header": "true"},
                                                                                          sources[2].schema)
    assert [s.format for s in (sources[0], sources[1], sources[3])] == ["sae-ceph"] * 3
    assert sources[3].schema == sources[0].schema and sources[3].options["mode"] == "auto"
    assert "schema" not in points[0][1].workload.read_source("/d", build=build, mount=None).app_config()
    for data, workload, text in (({"format": "csv"}, {"query": "join"}, "joins the zones table"),):
        with pytest.raises(UsageError) as e:
            validate(exp(data=DataSpec(**data), workload=Workload(**workload)))
        assert text in str(e.value) and "\n" not in str(e.value)


def test_spark_versions_share_one_stack_and_switch_at_a_start():
    """Spark versions and the object class's Arrow release as axes are one stack: one install,
    one build, and a start step where either changes (which installs the Spark version and
    builds the connector for it, or installs the class's build, restarting the OSDs); the values
    reach spark_deploy's and rados_deploy's options. Spark 3 with compressed replies (it ships no
    Arrow compression module), a version that is not pyspark's and an Arrow release before 21
    or not a release are refused at plan time in one line."""
    e = exp(workload=Workload(compression="none"),
            sweep=Sweep(cartesian={"reader": ["offload", "vanilla"]},
                        zipped={"spark.version": ["4.3.0", "3.5.3", "4.3.0"],
                                "spark.pyarrow": ["26.0.1", "26.0.1", "25.0.1"],
                                "ceph.class_arrow": ["26.0.1", "26.0.1", "25.0.1"]}))
    p = plan(e)
    assert len({pt.stack_key for pt in p.points}) == 1 and len({pt.start_key for pt in p.points}) == 3
    assert [s.stage for s in p.steps].count("install") == 1 and [s.stage for s in p.steps].count("build") == 1
    starts = [s for s in p.steps if s.stage == "start"]
    assert len(starts) == 3 and "version=3.5.3" in starts[1].reason and "class_arrow=25.0.1" in starts[2].reason
    assert "pyarrow=25.0.1" in starts[2].reason
    assert {pt.spec.spark_options.pyarrow for pt in p.points} == {"26.0.1", "25.0.1"}
    assert {tuple(pt.spec.spark_options.requirements[:2]) for pt in p.points} == {
        ("pyspark==4.3.0", "pyarrow==26.0.1"), ("pyspark==3.5.3", "pyarrow==26.0.1"), ("pyspark==4.3.0", "pyarrow==25.0.1")}
    assert {pt.spec.spark_options.version for pt in p.points} == {"4.3.0", "3.5.3"}
    assert {pt.spec.ceph_options.class_arrow for pt in p.points} == {"26.0.1", "25.0.1"}
    # the default release leaves the start key as plans before the axis had it
    assert plan(exp()).points[0].start_key == plan(exp(ceph=CephSpec(class_arrow="26.0.1"))).points[0].start_key
    for spark, ceph, text in (({"version": "3.5.3"}, {}, "workload.compression zstd needs Arrow's compression "
                               "module in Spark, which Spark 3.5.3 does not ship"),
                              ({"version": "4.0.1"}, {}, "which Spark 4.0.1 does not ship (Spark 4.1 and later do)"),
                              ({"version": "latest"}, {}, "version 'latest' is not a pyspark version"),
                              ({"pyarrow": "26.0.1 --index-url=http://x"}, {}, "is not a pyarrow release (e.g. 26.0.1)"),
                              ({}, {"class_arrow": "20.0.0"}, "class_arrow '20.0.0' is not a pyarrow release of 21.0.0"),
                              ({}, {"class_arrow": "26.0.1; rm -rf /"}, "is not a pyarrow release")):
        with pytest.raises(UsageError) as err:
            validate(exp(spark=SparkSpec(**spark), ceph=CephSpec(**ceph)))
        assert text in str(err.value) and "\n" not in str(err.value)
    validate(exp(spark=SparkSpec(version="3.5.3"), workload=Workload(reader="vanilla")))   # no replies to read
    validate(exp(spark=SparkSpec(version="4.1.0")))   # spark-sql 4.1.0 depends on arrow-compression


def test_profiles_override_sections_and_reject_unknown_options():
    from sae.planning.spec import Profile
    e = exp(profiles={"tiny": {"data": {"rows": 10}, "repetitions": 2},
                      "typed": Profile(data=DataSpec(rows=20), pause=4.0)})
    assert isinstance(e.profiles["tiny"], Profile) and dict(e.profiles["tiny"]) == {"data": {"rows": 10},
                                                                                   "repetitions": 2}
    assert e.with_profile("tiny").data.rows == 10 and e.with_profile("tiny").repetitions == 2
    assert e.with_profile("typed").data.rows == 20 and e.with_profile("typed").pause == 4.0
    with pytest.raises(UsageError, match="no profile 'nope'"):
        e.with_profile("nope")
    for profile, text in (({"data": {"colour": 1}}, "experiment 't' profile 'bad' data: unknown option colour"),
                          ({"flavour": 1}, "experiment 't' profile 'bad': unknown option 'flavour'"),
                          ({"sweep": {"selectivity": [1]}}, "experiment 't' profile 'bad': sweep must be a Sweep"),
                          ({"repetitions": "5"}, "experiment 't' profile 'bad': repetitions must be an integer"),
                          ({"data": 5}, "experiment 't' profile 'bad': data must be a dict of DataSpec"),
                          (5, "experiment 't' profile 'bad': a profile is a Profile")):
        with pytest.raises(UsageError) as err:
            exp(profiles={"bad": profile})
        assert text in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("kw, message", [
    (dict(sweep=Sweep(cartesian={"selectivity": [1]}), profiles={"tiny": {"sweep": Sweep()}, "paper": {"sweep": Sweep()}}),
     "sweep is set but every profile replaces it (tiny, paper)"),
    (dict(repetitions=21, profiles={"tiny": {"repetitions": 3}}), "repetitions is set but every profile replaces it (tiny)"),
    (dict(data=DataSpec(rows=10), profiles={"tiny": {"data": {"rows": 5}}, "paper": {"data": {"rows": 7}}}),
     "data.rows is set but every profile replaces it"),
    (dict(workload=Workload(selectivity=5), profiles={"tiny": {}, "paper": {}}),   # the sweep varies it
     "workload.selectivity is set but every profile replaces it"),
])
def test_a_setting_every_profile_replaces_is_refused_at_load(tmp_path, kw, message):
    from sae.planning.spec import check_every_setting_runs
    with pytest.raises(UsageError) as e:
        check_every_setting_runs(exp(**kw))
    assert message in str(e.value) and "\n" not in str(e.value)
    f = tmp_path / "never.py"   # the loader names the file
    f.write_text("from sae import *\nexperiment = Experiment(name='never', repetitions=21, "
                 "profiles={'tiny': {'repetitions': 3}})\n")
    with pytest.raises(UsageError, match=f"^{f}: experiment 'never': repetitions is set but every profile"):
        sae.load_experiment(f)


def test_a_setting_some_run_can_use_is_kept():
    from sae.planning.spec import check_every_setting_runs
    check_every_setting_runs(exp(repetitions=21, profiles={"tiny": {"repetitions": 3}, "paper": {}}))
    check_every_setting_runs(exp(repetitions=21, profiles={"paper": {"repetitions": 3}}))   # no tiny: as written
    check_every_setting_runs(exp(repetitions=3, profiles={"tiny": {"repetitions": 2}}))     # the default


def test_sweep_cartesian_zipped_and_filter():
    s = Sweep(cartesian={"selectivity": [1, 50, 100]}, zipped={"object_size": ["4MiB", "8MiB"],
                                                              "rows": [10, 20]},
              where=lambda p: not (p["selectivity"] == 1 and p["object_size"] == "8MiB"))
    pts = s.points()
    assert len(pts) == 5
    assert {"selectivity": 50, "object_size": "8MiB", "rows": 20} in pts
    points = validate(exp(sweep=s))
    assert points[0][1].workload.selectivity == 1 and points[0][1].data.rows == 10


def test_planner_groups_stack_and_data_changes():
    # Sweep order alternates object sizes and stores; the plan builds each store once and deploys
    # each (store, object size) dataset once.
    s = Sweep(cartesian={"selectivity": [10, 100], "object_size": ["4MiB", "8MiB"],
                         "store": ["memstore", "bluestore"]})
    p = plan(exp(sweep=s))
    stages = [st.stage for st in p.steps]
    assert stages.count("install") == 2 and stages.count("deploy") == 4 and stages.count("run") == 8
    stores = [pt.spec.ceph.store for pt in p.points]
    assert stores == ["memstore"] * 4 + ["bluestore"] * 4
    sizes = [pt.spec.data.object_size for pt in p.points]
    assert sizes[:4] == [4 << 20, 4 << 20, 8 << 20, 8 << 20]   # bytes
    runs = [st.point for st in p.steps if st.stage == "run"]
    assert runs == p.order
    # Plans are deterministic: same experiment, same ids and order.
    assert plan(exp(sweep=s)).to_dict() == p.to_dict()


def test_spark_change_restarts_spark_only():
    s = Sweep(cartesian={"worker_memory": ["1g", "2g"]})
    p = plan(exp(sweep=s))
    assert [st.stage for st in p.steps] == ["reserve", "distribute", "shape", "install", "start", "generate",
                                            "deploy", "build", "run", "start", "run", "aggregate"]


def test_autoscaler_is_switched_on_the_running_stack_and_back_for_the_drift_check():
    """The PG autoscaler is one stack's start setting, not a new stack: a start step puts each
    setting in force, the drift check's included (it measures the first setting again)."""
    p = plan(exp(sweep=Sweep(cartesian={"pg_autoscale": [False, True]}), drift=True))
    assert [(st.stage, p.point(st.point).spec.ceph.pg_autoscale if st.point else None) for st in p.steps][3:] == [
        ("install", False), ("start", False), ("generate", False), ("deploy", False), ("build", False),
        ("run", False), ("start", True), ("run", True), ("start", False), ("run", False), ("aggregate", None)]
    assert len({pt.stack_key for pt in p.points}) == 1 and len({pt.data_key for pt in p.points}) == 1
    off = plan(exp()).points[0]
    assert (off.stack_key, off.start_key) == (p.points[0].stack_key, p.points[0].start_key)


@pytest.mark.parametrize("osd_size, object_size", [("4G", "8M"), ("1.5GB", "0.25GiB"), (4 << 30, 4 << 20)])
def test_validate_accepts_sizes_in_every_unit_family(osd_size, object_size):
    (_, spec), *_ = validate(exp(ceph=CephSpec(osd_size=osd_size), data=DataSpec(object_size=object_size)))
    assert spec.ceph.osd_size == spec.ceph_options.osd_size == parse_size(osd_size, what="osd") > 0
    assert spec.data.object_size == parse_size(object_size, what="object") > 0


def test_a_size_is_its_bytes_not_its_spelling():
    """"4M", "4MiB" and 4194304 are one object size: one point id, one dataset, one CephFS path."""
    plans = [plan(exp(data=DataSpec(object_size=size))) for size in ("4M", "4MiB", 4 << 20)]
    assert len({p.points[0].id for p in plans}) == 1
    assert len({p.points[0].data_key for p in plans}) == 1
    assert len({dataset_path(p.points[0]) for p in plans}) == 1 and len({dataset_dirs(p.points[0]) for p in plans}) == 1
    with pytest.raises(UsageError, match=r"sweep points 0 \(object_size=4M\) and 1 \(object_size=4MiB\) are the "
                                         r"same point"):
        plan(exp(sweep=Sweep(cartesian={"object_size": ["4M", "4MiB"]})))


@pytest.mark.parametrize("name", ["selectivity", "objectsize", "objectsize_selectivity",
                                  "scalability", "alleviation"])
@pytest.mark.parametrize("profile", ["tiny", "paper"])
def test_shipped_experiments_plan(name, profile):
    e = sae.load_experiment(f"experiments/{name}.py").with_profile(profile)
    p = plan(e, profile=profile)
    assert p.points and p.eta_seconds > 0
    if profile == "tiny":   # small enough for a 2-core machine (link inflation makes data big cheaply)
        assert sum(pt.repetitions for pt in p.points if not pt.drift_of) <= 54 and e.data.rows <= 1_000_000


def test_selectivity_tiny_covers_the_papers_points_with_three_readers():
    e = sae.load_experiment("experiments/selectivity.py").with_profile("tiny")
    axes = [p.axes for p in plan(e, profile="tiny").points if not p.drift_of]   # not the drift check's
    assert sorted({a["selectivity"] for a in axes}) == [1, 10, 50, 100]
    assert {a["reader"] for a in axes} == {"offload", "no-offload", "vanilla"} and len(axes) == 12


def test_selectivity_tiny_gives_the_headline_points_five_measured_repetitions_per_reader(tmp_path):
    """statistics.MIN_N measured repetitions per reader at 1 % and 100 % (the headline ratios get
    an interval), 2 at 10 % and 50 %; one warm-up each; in the plan, plan.yaml and the ledger."""
    from sae.results.run.ledger import RunLedger
    from sae.results.run.directory import versions
    from sae.results.analysis.statistics import MIN_N
    from sae.planning.planner import Plan
    e = sae.load_experiment("experiments/selectivity.py").with_profile("tiny")
    p = plan(e, profile="tiny")
    measured = {(pt.axes["selectivity"], pt.axes["reader"]): pt.repetitions - p.warmup for pt in p.points
                if not pt.drift_of}
    assert {k: v for k, v in measured.items() if k[0] in (1, 100)} == {k: MIN_N for k in measured if k[0] in (1, 100)}
    assert {v for k, v in measured.items() if k[0] in (10, 50)} == {2} and sum(measured.values()) == 42
    assert "12 points x 3-6 repetitions" in p.text() and "6 repetitions in one Spark" in p.text()
    again = Plan.from_dict(p.to_dict())
    assert [pt.repetitions for pt in again.points] == [pt.repetitions for pt in p.points]
    ledger = RunLedger.create(tmp_path / "ledger.json", p, versions())
    assert len(ledger.entries) == 54 + 5   # and the drift check's
    assert {pt.id: len(ledger.pending(pt.id)) for pt in p.points} == {pt.id: pt.repetitions for pt in p.points}


@pytest.mark.parametrize("repetitions, message", [
    ({"reader": {"offload": 5}}, "sweep repetitions: 'reader' is not an axis of the sweep (axes: selectivity)"),
    ({"selectivity": {5: 5}}, "sweep repetitions: selectivity=5 is not a value of the axis (10, 100)"),
    ({"selectivity": {10: 1}}, "sweep repetitions selectivity=10 must be an integer >= 2"),
    ({"selectivity": {10: "5"}}, "sweep repetitions selectivity=10 must be an integer"),
    ({"selectivity": [10]}, "sweep repetitions: 'selectivity' must map values of the axis to repetitions"),
])
def test_bad_per_point_repetitions_fail_in_one_line(repetitions, message):
    with pytest.raises(UsageError) as e:
        plan(exp(sweep=Sweep(cartesian={"selectivity": [10, 100]}, repetitions=repetitions)))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_per_point_repetitions_take_the_largest_match_and_follow_a_set_axis():
    from sae.planning import settings
    e = exp(sweep=Sweep(cartesian={"selectivity": [10, 100], "reader": ["offload", "vanilla"]},
                        repetitions={"selectivity": {100: 4}, "reader": {"vanilla": 5}}))
    reps = {(pt.axes["selectivity"], pt.axes["reader"]): pt.repetitions for pt in plan(e).points}
    assert reps == {(10, "offload"): 3, (10, "vanilla"): 5, (100, "offload"): 4, (100, "vanilla"): 5}
    # --set replaces the axis: the counts of values it drops go with them, a kept value keeps its own
    kept = settings.apply(e, ["sweep.cartesian.selectivity=[100, 1]"])
    assert {(pt.axes["selectivity"], pt.repetitions) for pt in plan(kept).points} == {(100, 4), (100, 5), (1, 3), (1, 5)}
    e = settings.apply(e, ["sweep.cartesian.selectivity=[1]"])
    assert {pt.repetitions for pt in plan(e).points} == {3, 5}
    assert {pt.repetitions for pt in plan(settings.apply(e, ["repetitions=2"])).points} == {2}   # every point


def test_layout_node_names_are_checked_against_the_hosts_that_run_it(tmp_path):
    """An explicit layout may name an ssh reservation's hosts (db1, ...); without --reservation
    (sae reserves node1..nodeN itself) and against a given reservation, unknown names are refused
    by ``sae plan``/``sae run`` before anything is touched."""
    from metareserve import Node, Reservation
    from sae.running.runner import RunOptions, prepare
    f = tmp_path / "named.py"
    f.write_text("from sae import ClusterSpec, Experiment\n"
                 "roles = {'ceph-mon': ['db1'], 'ceph-mgr': ['db1'], 'ceph-mds': ['db1'], 'ceph-osd': ['db1'],\n"
                 "         'spark-master': ['db2'], 'driver': ['db2'], 'spark-worker': ['db2', 'db3']}\n"
                 "experiment = Experiment(name='named', cluster=ClusterSpec(nodes=3, layout=roles))\n")
    with pytest.raises(UsageError, match=r"role ceph-mon names 'db1', not one of node1..node3; .*--reservation"):
        prepare(f, profile=None, options=RunOptions())
    hosts = Reservation(name="mine", provider="ssh", nodes=[Node(name=f"db{i}", host=f"10.0.0.{i}") for i in (1, 2, 3)])
    hosts.save(tmp_path / "hosts.yaml")
    _, p = prepare(f, profile=None, options=RunOptions(reservation=str(tmp_path / "hosts.yaml")))
    assert p.points[0].spec.cluster.layout["spark-worker"] == ["db2", "db3"]
    f.write_text(f.read_text().replace("'db3']", "'db9']"))
    with pytest.raises(UsageError, match="db9"):
        prepare(f, profile=None, options=RunOptions(reservation=str(tmp_path / "hosts.yaml")))


def test_defaults_and_every_shipped_profile_keep_the_metric_window_rule():
    """pause >= scrape interval + 1 s (spec.WINDOW_MARGIN), checked at plan time for every point:
    the defaults keep it, and so does every profile of every shipped experiment."""
    from pathlib import Path
    from sae.planning.spec import WINDOW_MARGIN, MonitorSpec
    from monitor_deploy.options import duration_seconds
    assert Experiment.pause >= duration_seconds(MonitorSpec.scrape_interval) + WINDOW_MARGIN
    plan(Experiment(name="defaults"))
    for path in sorted(Path("experiments").glob("*.py")):
        e = sae.load_experiment(path)
        for profile in [None, *e.profiles]:
            plan(e.with_profile(profile), profile=profile)


def test_pause_below_the_metric_window_rule_names_experiment_point_and_values():
    with pytest.raises(UsageError) as e:
        plan(exp(pause=2.0, monitor=sae.MonitorSpec(scrape_interval="2s")))
    assert str(e.value).startswith("experiment 't' point 0 selectivity=10: pause 2 s is shorter than "
                                   "monitor.scrape_interval 2s plus 1 s") and "pause >= 3" in str(e.value)
