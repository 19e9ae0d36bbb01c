"""``sae``: plan, run, resume and report offloading experiments (a thin layer over the API)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from metareserve.cli_support import FLOAT, INT, FloatRange, Group, IntRange, handle_errors, verbose_option, writable_dir
from metareserve.errors import UsageError

from .running import runner
profile_option = click.option("--profile", metavar="NAME",
                              help="Profile of the experiment file: tiny (local cluster; the default "
                                   "when defined) or paper (the paper's parameters, CloudLab).")
set_option = click.option("--set", "settings", multiple=True, metavar="PATH=VALUE",
                          help="Change the experiment without editing it (repeatable), after the profile, "
                               "validated like the file: workload.selectivity=5, repetitions=5, "
                               "sweep.cartesian.selectivity=[1,10]; values are YAML.")

exclude_option = click.option("--exclude", multiple=True, metavar="NAME",
                              help="Given a directory: leave out the experiment of this name (repeatable).")
hosts_option = click.option("--hosts", metavar="FILE",
                            help="Your own SSH hosts: a hosts file (docs/ssh.md); implies --provider ssh, "
                                 "excludes --reservation. 'sae plan --hosts' prints each host's roles.")


@click.group(cls=Group)
def main():
    """sae: compute-to-storage offloading experiments, from reservation to plot.

    An experiment file (a Python module defining 'experiment = Experiment(...)', such as
    experiments/selectivity.py) names a sweep of queries over Spark, Ceph and Arrow. 'sae run'
    reserves hosts (a local cluster of network-namespace hosts by default, your SSH hosts with
    --hosts, or CloudLab), installs and starts Ceph, Spark and monitoring, deploys the data, runs
    every point and repetition and writes the results and a report into a new run directory
    (results/NAME/latest). 'sae plan' shows what a run would do; 'sae resume' finishes an
    interrupted run; 'sae report', 'compare', 'history' and 'advise' read run directories; 'sae
    clean' stops everything and releases the hosts.

    \b
    Examples:
      sae plan experiments/selectivity.py      what would run, and an ETA
      sae run experiments/selectivity.py       the selectivity sweep on a 3-host local cluster
      sae compare results/selectivity/RUN_A results/selectivity/latest
    """


@main.command()
@click.argument("file", type=click.Path(exists=True))
@click.option("--provider", default=None, metavar="NAME", callback=lambda ctx, param, value: _provider(value),
              help="Where sae reserves nodes when no --reservation is given: a metareserve provider "
                   "(default: local; ssh with --hosts).")
@hosts_option
@click.option("--reservation", "-r", envvar="SAE_RESERVATION", metavar="FILE",
              help="Use these reserved nodes instead of reserving (default: $SAE_RESERVATION).")
@profile_option
@click.option("--out", default="results", show_default=True, metavar="DIR", callback=writable_dir,
              help="Results root directory.")
@click.option("--teardown", is_flag=True, help="Stop the stack (and release nodes sae reserved) at the end.")
@click.option("--skip", multiple=True, metavar="STAGE", help="Skip a stage (repeatable), e.g. install.")
@click.option("--wait-lease", type=FLOAT, default=0, show_default=True, metavar="SECONDS",
              help="Wait this long for another run holding the nodes; then refuse, naming it.")
@set_option
@exclude_option
@verbose_option
@handle_errors
def run(file, provider, hosts, reservation, profile, out, teardown, skip, wait_lease, settings, exclude):
    """Run an experiment file (or a directory of them) end to end.

    FILE runs into a new run directory, OUT/NAME/<date-time>-<profile>, linked as
    OUT/NAME/latest; the summary is printed at the end and the run directory is stdout's last
    line. Given a directory (e.g. experiments/), every experiment file in it runs, one after
    another on one cluster, and one index page links every report
    (OUT/catalogue/latest/index.html)."""
    options = runner.RunOptions(provider=provider, reservation=reservation, teardown=teardown, skip=skip,
                                wait_lease=wait_lease, hosts=hosts)
    if Path(file).is_dir():
        from .running.catalogue import run_catalogue
        index = run_catalogue(file, profile=profile, out=out, options=options, set=settings, exclude=exclude)
        click.echo(f"index: {index}", err=True)
        click.echo(str(index))
        return
    _no_exclude(file, exclude)
    _finished(runner.run(file, profile=profile, out=out, options=options, set=settings).root)


def _provider(name: str | None) -> str | None:
    """``name`` if metareserve has a provider of that name (its entry points), else UsageError."""
    if name is not None:
        from metareserve import providers
        try:
            providers.get(name)
        except UsageError as e:
            raise click.BadParameter(str(e)) from None
    return name


def _no_exclude(file, exclude) -> None:
    """--exclude picks among a directory's experiments: given one file, refuse it."""
    if exclude:
        raise UsageError(f"--exclude {', '.join(exclude)}: {file} is one experiment file; --exclude leaves "
                         f"experiments of a directory out (sae run experiments/ --exclude NAME)")


@main.command()
@click.argument("file", type=click.Path())
@profile_option
@click.option("--teardown", is_flag=True, help="Plan the stop/release steps too.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@hosts_option
@set_option
@exclude_option
@handle_errors
def plan(file, profile, teardown, as_json, hosts, settings, exclude):
    """Show what 'sae run' would do, and an ETA; runs nothing.

    Prints the sweep points, the steps in execution order and a rough ETA. Given a directory,
    plans every experiment file in it as 'sae run DIR' runs them. With --hosts, also which
    roles each of your hosts plays."""
    options = runner.RunOptions(teardown=teardown, hosts=hosts)
    if Path(file).is_dir():
        from .running.catalogue import plan_catalogue
        plans = plan_catalogue(file, profile=profile, options=options, set=settings, exclude=exclude)
        if as_json:
            click.echo(json.dumps({str(f): p.to_dict() for f, p in plans}, indent=1, default=str))
            return
        for f, p in plans:
            click.echo(f"== {f}\n{p.text()}\n{_hosts_text(p, hosts)}")
        eta = sum(p.eta_seconds for _, p in plans)
        click.echo(f"catalogue {file}: {len(plans)} experiments, ETA ~{int(eta) // 60}m{int(eta) % 60:02d}s in all "
                   f"(each experiment's ETA counts its own install; on one cluster later ones reuse the stack)")
        return
    _no_exclude(file, exclude)
    _, p = runner.prepare(file, profile=profile, options=options, settings=settings)
    if as_json:
        data = p.to_dict()
        if hosts:
            from .running import hosts as hosts_mod
            data["hosts"] = hosts_mod.mapping_dict(p, hosts_mod.load(hosts))
        click.echo(json.dumps(data, indent=1, default=str))
        return
    click.echo(p.text() + (f"\n{_hosts_text(p, hosts)}" if hosts else f"\n{_machine_text(p)}"))


def _machine_text(p) -> str:
    """What the local cluster needs of this machine, one line per requirement (all met: a plan
    that needed one this machine lacks was refused before)."""
    from .planning import machine
    return "this machine, for a local cluster:\n" + "\n".join("  " + r.line() for r in machine.check(p.points))


def _hosts_text(p, hosts) -> str:
    """Which roles each host of the hosts file plays in plan ``p`` ('' without --hosts)."""
    if not hosts:
        return ""
    from .running import hosts as hosts_mod
    return hosts_mod.mapping_text(p, hosts_mod.load(hosts), hosts) + "\n"


@main.command()
@click.argument("directory", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@handle_errors
def status(directory, as_json):
    """Show a run's progress, point by point.

    One letter per repetition: D done, F failed, R running, T todo."""
    info = runner.status(directory)
    click.echo(json.dumps(info, indent=1) if as_json else runner.status_text(info))


@main.command()
@click.argument("directory", type=click.Path())
@click.option("--allow-changes", is_flag=True,
              help="Resume although sae's commit, a package or a node's software changed since the run "
                   "started (recorded in versions.lock).")
@verbose_option
@handle_errors
def resume(directory, allow_changes):
    """Continue an interrupted run where it stopped.

    Skips what is done and retries what failed or was interrupted. Refused, naming what changed, when sae's commit or the software differs from the run's
    versions.lock (unless --allow-changes)."""
    _finished(runner.resume(directory, allow_changes=allow_changes).root)


def _finished(root) -> None:
    """The report's summary and where the report is (stderr, for the person), then the run
    directory (stdout's last line, for scripts)."""
    from .results.drawing.report import summary_of
    report = root / "report" / "index.html"
    if report.exists():
        click.echo(f"{summary_of(root)}\nreport: {report}", err=True)
    click.echo(str(root))


@main.command()
@click.argument("directory", type=click.Path())
@handle_errors
def report(directory):
    """Rewrite a run's results.parquet and report; print the summary.

    The report is DIRECTORY/report/index.html: the summary, the figures, per-point
    percentiles, hosts, plan and versions."""
    from .results.drawing.report import make_report, summary_of
    from .results.run.directory import RunDir, write_results
    rd = RunDir.find(directory)
    write_results(rd)
    for path in make_report(rd.root):
        click.echo(str(path))
    click.echo(summary_of(rd.root))


@main.command()
@click.argument("sides", nargs=-1, metavar="SIDE_A SIDE_B [SIDE]...")
@click.option("--fail-on", "rules", multiple=True, metavar="RULE",
              help="Exit 1 when a side reads 'worse' against the baseline at some point and its ratio lies wholly "
                   "beyond the rule (repeatable): time>5% (its 95 % interval above 1.05), bytes<50% ('better', "
                   "below 0.50); metrics time, bytes, cpu, storage_cpu or a results column.")
@click.option("--html", "html_dir", type=click.Path(file_okay=False), metavar="DIR", callback=writable_dir,
              help="Also write the comparison as DIR/index.html with a figure per metric.")
@click.option("--same-within", type=FloatRange(0, 100, max_open=True), default=5.0, show_default=True,
              metavar="PCT", help="A ratio within PCT % of 1 reads 'same' whatever the test says.")
@click.option("--calibration", metavar="FILE|none",
              help="The A/A calibration the runs are judged by (default: the one 'sae calibrate' recorded for "
                   "the baseline's machine, stack and experiment, if any); none: judge without one.")
@click.option("--uncalibrated-ok", is_flag=True,
              help="Let rules fail on uncalibrated verdicts (worse?, better?: nothing measured the spread "
                   "between runs).")
@click.option("--axis", metavar="PARAM",
              help="Compare the points of one run along this parameter (its first value the baseline), inside "
                   "the run, instead of runs.")
@click.option("--multiplicity", type=click.Choice(["fdr", "holm"]), default="fdr", show_default=True,
              help="How the p-values of the judged point-metrics are adjusted together: Benjamini-Hochberg's "
                   "false discovery rate, or Holm's step-down.")
@handle_errors
def compare(sides, rules, html_dir, same_within, calibration, uncalibrated_ok, axis, multiplicity):
    """Compare runs point by point against the first (the baseline).

    SIDE_A SIDE_B [SIDE ...]: at every point they share, medians, the ratio to the baseline with
    its intervals, and a verdict (better, worse or same). A side is a run directory, or
    RUN,RUN,... (runs of one code, judged across runs); with --axis, give one run."""
    from .results.analysis.compare import Rule, compare as compare_sides
    result = compare_sides([[p for p in s.split(",") if p] if "," in s else s for s in sides],
                           rules=[Rule.parse(r) for r in rules],
                           same_within=same_within / 100, calibration=calibration or "auto", axis=axis,
                           multiplicity=multiplicity, uncalibrated_ok=uncalibrated_ok)
    click.echo(result.text())
    if html_dir:
        from .results.drawing.pages import comparison_page
        click.echo(f"page: {comparison_page(result, html_dir)}", err=True)
    return 1 if result.failures else 0


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(), metavar="RUN...")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="The record to add the runs to (default: the one of their machine, stack and experiment "
                   "under $SAE_HOME/calibrations).")
@handle_errors
def calibrate(runs, out_file):
    """Record runs of one experiment as this machine's A/A calibration.

    How far each point's median moves from one run to the next on this machine and stack, which
    'sae compare' then requires a difference to exceed. RUN is a run directory, or an experiment's
    directory (every run in it); 3 runs of one commit at least."""
    from .results.analysis.statistics import fixed_width
    from .results.analysis.history import calibrate as calibrate_runs
    record, skipped = calibrate_runs(runs, out=out_file)
    click.echo("\n".join([f"calibration: {record.describe()}", *(f"skipped {s}" for s in skipped),
                          *fixed_width(["point", "metric", "one run's median, 95 %", "df"], record.bands())]))
    click.echo(f"record: {record.path}", err=True)


@main.command()
@click.argument("experiment")
@click.option("--out", default="results", show_default=True, metavar="DIR", help="Results root directory.")
@click.option("--lookback", type=INT, default=10, show_default=True, metavar="N",
              help="Earlier runs each run's median is compared with (5 or more).")
@click.option("--threshold", type=FLOAT, default=5.0, show_default=True, metavar="Z",
              help="Flag a run whose |z| against the earlier runs exceeds this.")
@click.option("--html", "html_dir", type=click.Path(file_okay=False), metavar="DIR", callback=writable_dir,
              help="Also write the history as DIR/index.html with a series figure per metric.")
@handle_errors
def history(experiment, out, lookback, threshold, html_dir):
    """List an experiment's runs, flagging those that stray.

    Every run of EXPERIMENT under --out, oldest first: each point's medians per run and their
    z-score against the --lookback runs before."""
    from .results.analysis.history import history as history_of
    result = history_of(out, experiment, lookback=lookback, threshold=threshold)
    click.echo(result.text())
    if html_dir:
        from .results.drawing.pages import history_page
        click.echo(f"page: {history_page(result, html_dir)}", err=True)


@main.command()
@click.argument("runs", nargs=-1, type=click.Path(), metavar="RUN_DIR...")
@click.option("--validate-on", multiple=True, type=click.Path(), metavar="RUN_DIR",
              help="Also predict these runs (not fitted on) and print the errors (repeatable).")
@click.option("--selectivity", "selectivities", multiple=True, type=FLOAT, metavar="PCT",
              help="Predict at this selectivity (repeatable; default 1, 10, 50, 100).")
@click.option("--object-size", metavar="SIZE", help="Object size, e.g. 64MiB (default: the first fitted point's).")
@click.option("--rows", type=FLOAT, metavar="N", help="Rows each query scans (default: the first fitted point's).")
@click.option("--data", metavar="SIZE", help="Or the stored size each query scans, e.g. 512GiB.")
@click.option("--link-rate", metavar="RATE", help="Link between the sides, e.g. 10gbit or unlimited.")
@click.option("--storage-cores", type=FLOAT, metavar="N", help="Cores of the storage side.")
@click.option("--compute-cores", type=FLOAT, metavar="N", help="Cores of the compute side.")
@click.option("--storage-hosts", type=IntRange(min=1), metavar="N", help="Hosts of the storage side.")
@click.option("--compute-hosts", type=IntRange(min=1), metavar="N",
              help="Hosts of the compute side (the driver's included).")
@click.option("--compression", metavar="CODEC", help="Reply compression (one the fitted runs used).")
@click.option("--shared-cores/--separate-cores", default=None, help="Whether both sides run on the same cores.")
@click.option("--cluster", metavar="NAME", help="A what-if cluster to start from: thesis (8 + 8 m510 hosts, 10 GbE).")
@click.option("--json", "as_json", is_flag=True, help="Print the advice as JSON.")
@handle_errors
def advise(runs, validate_on, selectivities, as_json, **options):
    """Predict where offloading pays, from a model fitted on runs.

    Fits the model on RUN_DIR... and predicts each reader's time at a configuration, the
    selectivity where offloading stops paying, and (--validate-on) how well it predicts other
    runs (docs/advice.md)."""
    from .results.analysis.advice import advise as advise_on
    result = advise_on(runs, validate_on=validate_on, selectivities=selectivities, **options)
    click.echo(json.dumps(result.to_dict(), indent=1, default=str) if as_json else result.text())


@main.command()
@click.option("--runs", default="docs/runs", show_default=True, metavar="DIR",
              help="The recorded runs, one directory per experiment.")
@click.option("--out", default="docs", show_default=True, metavar="DIR",
              help="Where measurements.md and gallery/ are written.")
@click.option("--experiments", "experiments_dir", default="experiments", show_default=True, metavar="DIR",
              help="The experiment files: the page names those without a recorded run.")
@click.option("--record", "record_dirs", multiple=True, metavar="RUN_DIR",
              help="First trim this finished run into --runs/<experiment>/, replacing that experiment's "
                   "recorded run (repeatable).")
@click.option("--check", is_flag=True,
              help="Write nothing: exit 1 naming what in OUT is not what the recorded runs give (the page's "
                   "text, figures missing or left over; figures are not rendered, so pixels are not compared).")
@handle_errors
def gallery(runs, out, experiments_dir, record_dirs, check):
    """Regenerate the results page and its figures from recorded runs.

    Writes OUT/measurements.md and OUT/gallery/, each figure and table stamped with its run and
    commit."""
    from .results.drawing import gallery as page
    if check:
        if record_dirs:
            raise click.UsageError("--check writes nothing: record with --record first, then check")
        stale = page.check(runs, out, experiments_dir)
        for line in stale:
            click.echo(line)
        click.echo(f"{out}: " + ("stale: run 'sae gallery' and commit what it writes" if stale else "up to date"))
        click.get_current_context().exit(1 if stale else 0)
    for run_dir in record_dirs:
        target = page.record(run_dir, runs)
        size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
        click.echo(f"recorded {target} ({size / 1e3:.0f} kB)")
    paths = page.generate(runs, out, experiments_dir)
    click.echo(f"{paths[0]}: {len(paths) - 1} figures")


@main.command()
@click.option("--reservation", "-r", envvar="SAE_RESERVATION", metavar="FILE",
              help="Stop the stack on these nodes (default: every cluster sae reserved).")
@click.option("--keep-nodes", is_flag=True, help="Stop the stack but do not release the nodes.")
@click.option("--cache", is_flag=True, help="Also delete the controller's dataset cache.")
@handle_errors
def clean(reservation, keep_nodes, cache):
    """Stop the stack and release the hosts sae reserved.

    On every reservation sae made (named sae-*), or on --reservation's nodes: removes what write
    jobs left where sae's writers write (the CephFS directories and S3 buckets the build recorded),
    stops Ceph, Spark and monitoring, and releases the nodes (unless --keep-nodes)."""
    from .running.clean import clean as do_clean
    for line in do_clean(reservation=reservation, release=not keep_nodes, cache=cache):
        click.echo(line)
