"""``spark-deploy``: Spark standalone clusters: install, start, status, submit, stop, uninstall."""
from __future__ import annotations

import dataclasses
import sys

import click
import yaml

from metareserve.cli_support import (INT, Group, handle_errors, load_target, reservation_option, verbose_option,
                                     with_layout, writable_dir)
from metareserve.errors import UsageError

from .cluster import SparkCluster
from .options import JIT_MODES, SparkOptions
from .submit import split_submit_args

_OPTION_FLAGS = [
    click.option("--options", "options_file", metavar="FILE", help="YAML file of Spark options (SparkOptions fields)."),
    click.option("--spark-source", help="Spark tarball path or URL (default: pyspark from PyPI)."),
    click.option("--spark-version", "spark_version", help="pyspark version from PyPI (default 4.3.0)."),
    click.option("--pyarrow", help="pyarrow release of the nodes' Python env (default 26.0.1)."),
    click.option("--worker-cores", type=INT, help="Cores each worker offers."),
    click.option("--worker-memory", help="Memory each worker offers (e.g. 2g)."),
    click.option("--executor-memory", help="spark.executor.memory (e.g. 1g)."),
    click.option("--master-port", type=INT, help="Master RPC port (default 7077)."),
    click.option("--master-ui-port", type=INT, help="Master web UI port (default 8080)."),
    click.option("--worker-port", type=INT, help="Worker RPC port (default 7078)."),
    click.option("--worker-ui-port", type=INT, help="Worker web UI port (default 8081)."),
    click.option("--metrics-namespace", help="spark.metrics.namespace (default sae)."),
    click.option("--prefix", help="Per-node state directory ({node} = node name)."),
    click.option("--class-sharing/--no-class-sharing", "class_sharing", default=None,
                 help="Let client-mode JVMs map the classes an earlier driver loaded (default on)."),
    click.option("--jit", type=click.Choice(JIT_MODES),
                 help="Applications' JIT: full (default) or quick (C1 only: cheaper cold starts, slower peak)."),
    click.option("--python-package", "python_packages", multiple=True, help="Extra PyPI requirement for the node venv."),
    click.option("--maven-jar", "maven_jars", multiple=True, metavar="GROUP:ARTIFACT:VERSION",
                 help="A jar from Maven Central placed on every node (its path: SparkCluster.classpath_conf)."),
    click.option("--spark-conf", "conf", multiple=True, metavar="KEY=VALUE", help="Extra spark-defaults entry."),
    click.option("--spark-env", "env", multiple=True, metavar="KEY=VALUE",
                 help="Environment for daemons, executors and the driver."),
]


def spark_options(fn):
    """Add the SparkOptions flags (and --verbose) to a command."""
    for opt in reversed(_OPTION_FLAGS):
        fn = opt(fn)
    return verbose_option(fn)


def cluster_options(fn):
    """--reservation, --layout/--role and the Spark options."""
    return reservation_option(with_layout(spark_options(fn)))


def _pairs(items, flag: str) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def build_options(options_file=None, spark_version=None, python_packages=(), maven_jars=(), conf=(), env=(),
                  **flags) -> SparkOptions:
    """SparkOptions from an optional YAML file, overridden by the flags that were given."""
    base = SparkOptions.load(options_file) if options_file else SparkOptions()
    data = dataclasses.asdict(base)
    data.update({k: v for k, v in flags.items() if v is not None})
    if spark_version is not None:
        data["version"] = spark_version
    data["python_packages"] = data["python_packages"] + list(python_packages)
    data["maven_jars"] = list(dict.fromkeys([*data["maven_jars"], *maven_jars]))
    data["conf"] = {**data["conf"], **_pairs(conf, "--spark-conf")}
    data["env"] = {**data["env"], **_pairs(env, "--spark-env")}
    return SparkOptions.from_dict(data, options_file or "options")


def _spark(reservation, layout_file, role_specs, **flags) -> SparkCluster:
    res, layout = load_target(reservation, layout_file, role_specs)
    return SparkCluster(res, layout, build_options(**flags))


@click.group(cls=Group)
def main():
    """Spark standalone clusters: install, start, status, submit, stop, uninstall."""


def _stage(name: str, help_text: str, run):
    @main.command(name, help=help_text)
    @cluster_options
    @handle_errors
    def command(reservation, layout_file, role_specs, **flags):
        with _spark(reservation, layout_file, role_specs, **flags) as spark:
            click.echo(run(spark))
    return command


def _start(spark: SparkCluster) -> str:
    report = spark.start()
    return (f"{report.summary()}; {report.details['alive_workers']} workers ALIVE at {spark.master_url} "
            f"(UI {spark.master_ui_url}) after {report.details['seconds']:.1f}s")


_stage("install", "Install Java 17 and Spark on every node of the layout.", lambda s: s.install().summary())
_stage("start", "Start the master and workers; wait until every worker is ALIVE.", _start)
_stage("stop", "Stop workers, then the master.", lambda s: s.stop().summary())


@main.command()
@cluster_options
@click.option("--purge", is_flag=True, help="Also remove the shared Spark software (node venv or tarball copy).")
@handle_errors
def uninstall(reservation, layout_file, role_specs, purge, **flags):
    """Stop the daemons and remove every node's Spark state."""
    with _spark(reservation, layout_file, role_specs, **flags) as spark:
        click.echo(spark.uninstall(purge=purge).summary())


@main.command()
@cluster_options
@handle_errors
def status(reservation, layout_file, role_specs, **flags):
    """Show which daemons run and how many workers are ALIVE."""
    with _spark(reservation, layout_file, role_specs, **flags) as spark:
        st = spark.status()
        for d in [st.master, *st.workers]:
            state = f"running (pid {d.pid})" if d.alive else "not running"
            click.echo(f"[{d.node} spark status] {d.role} {state} on {d.address}")
        alive = "master down" if st.alive_workers is None else f"{st.alive_workers} of {len(st.workers)} workers ALIVE"
        click.echo(f"{st.master_url}: {alive}" + (f", {st.active_apps} active apps" if st.active_apps else ""))


@main.command()
@cluster_options
@handle_errors
def targets(reservation, layout_file, role_specs, **flags):
    """Print the Prometheus scrape targets of the Spark daemons.

    YAML: job → metrics_path, targets, nodes."""
    with _spark(reservation, layout_file, role_specs, **flags) as spark:
        click.echo(yaml.safe_dump(spark.metrics_targets(), sort_keys=False), nl=False)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@cluster_options
@click.option("--log-dir", metavar="DIR", callback=writable_dir,
              help="Local directory for the driver log and event log (default: $SAE_HOME/spark-submits, "
                   "never the working directory).")
@click.option("--driver-env", multiple=True, metavar="KEY=VALUE", help="Extra environment for spark-submit.")
@click.option("--quiet", "-q", is_flag=True, help="Do not stream the driver output.")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True)
@handle_errors
def submit(reservation, layout_file, role_specs, log_dir, driver_env, quiet, argv, **flags):
    """Run an application from the driver node.

    Exits with the application's exit status. ARGV is [SPARK-SUBMIT OPTIONS] APP [APP ARGS]:
    spark-deploy's own options come first, every other option up to the application (.jar or
    .py) goes to spark-submit.
    """
    parsed = split_submit_args(list(argv))
    env = _pairs(driver_env, "--driver-env")
    bad = [k for k, v in env.items() if any(ord(c) < 32 for c in k + v)]
    if bad:
        raise UsageError(f"--driver-env {bad[0]!r}: a value must be one line of text")
    with _spark(reservation, layout_file, role_specs, **flags) as spark:
        result = spark.submit(parsed.pop("app"), env=env, log_dir=log_dir,
                              stream=not quiet, **parsed)
        click.echo(f"exit {result.exit_code}; driver log {result.driver_log}; event log {result.event_log}")


if __name__ == "__main__":
    sys.exit(main())
