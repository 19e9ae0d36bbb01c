"""``rados-deploy``: a thin click layer over :class:`rados_deploy.CephCluster`."""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from metareserve.cli_support import INT, Group, handle_errors, load_target, reservation_option, with_layout

from .cluster import CephCluster
from .options import CephOptions


def _options(fn):
    opts = [
        click.option("--store", type=click.Choice(["bluestore", "memstore"]), default="bluestore", show_default=True,
                     help="OSD object store."),
        click.option("--osd-size", default="4GiB", show_default=True,
                     help="memstore bytes, or bluestore file size, per OSD."),
        click.option("--bluestore-device", metavar="PATH", help="Block device (or file) for bluestore."),
        click.option("--osds-per-node", type=INT, default=1, show_default=True, help="OSD daemons per ceph-osd node."),
        click.option("--cephx/--no-cephx", default=True, show_default=True,
                     help="Authenticate clients and daemons with cephx keys."),
        click.option("--op-timeout", type=INT, default=30, show_default=True,
                     help="Client rados_osd_op_timeout (s)."),
        click.option("--fs-name", default="cephfs", show_default=True, help="Name of the CephFS file system."),
        click.option("--pg-autoscale/--no-pg-autoscale", default=False, show_default=True,
                     help="Ceph's PG autoscaler on the CephFS pools (start puts it in force; off restores "
                          "the computed PG counts)."),
        click.option("--rgw/--no-rgw", default=False, show_default=True,
                     help="A RADOS Gateway (S3) on the first mon node when the layout has no ceph-rgw role."),
        click.option("--rgw-port", type=INT, default=7480, show_default=True,
                     help="Port the gateway serves S3 on, at each gateway node's cluster address."),
        click.option("--rgw-tls-port", type=INT, default=7443, show_default=True,
                     help="Port the gateway serves S3 over TLS on (its self-signed certificate: s3_certificate)."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


_OPTION_NAMES = ("store", "osd_size", "bluestore_device", "osds_per_node", "cephx", "op_timeout", "fs_name", "pg_autoscale",
                 "rgw", "rgw_port", "rgw_tls_port")


def _command(fn):
    """Reservation + layout + cluster options → a CephCluster handed to the command body."""
    @reservation_option
    @with_layout
    @_options
    @handle_errors
    @functools.wraps(fn)
    def wrapper(reservation, layout_file, role_specs, **kwargs):
        res, layout = load_target(reservation, layout_file, role_specs)
        options = CephOptions(**{k: kwargs.pop(k) for k in _OPTION_NAMES})
        with CephCluster(res, layout, options) as ceph:
            return fn(ceph, **kwargs)
    return wrapper


def _summary(report) -> None:
    click.echo(report.summary())


@click.group(cls=Group)
def main():
    """Ceph bootstrapped by hand, CephFS, and the Arrow scan object class."""


@main.command()
@_command
def install(ceph):
    """Install Ceph packages on the layout's nodes.

    With the headers the object class builds against."""
    _summary(ceph.install())


@main.command()
@_command
def start(ceph):
    """Bootstrap or restart the cluster; wait for health.

    Waits for HEALTH_OK, then prints each client node's ceph.conf and the client users."""
    report = ceph.start()
    _summary(report)
    click.echo(f"bring-up {report.details['bringup_seconds']} s; health {report.details.get('health')}")
    _client_confs(ceph)


def _client_confs(ceph) -> None:
    """Where each client node's ceph.conf is (what data-deploy --ceph-conf and CEPH_CONF take), and
    the least-privilege client users it names keyrings for (what --ceph-user / --id take)."""
    for node in ceph.topology.clients:
        click.echo(f"{node}: CEPH_CONF={ceph.client_conf(node)}")
    if ceph.options.cephx:
        u = ceph.users
        click.echo(f"client users: {u.scan.id} (read CephFS metadata, call the {ceph.class_name} class), "
                   f"{u.fs_read.id} (read CephFS), {u.fs_write.id} (write CephFS), {u.write.id} (the connector's writes), admin")
    if ceph.topology.rgws:
        s3 = ceph.s3_users
        click.echo(f"S3 at {ceph.s3_endpoint}: users {s3.writer.id} (create buckets, write), {s3.reader.id} (read); "
                   f"credentials in {ceph.s3_credentials_path(ceph.topology.rgws[0], s3.writer)} and beside it")


def _directory(value: str | None, flag: str) -> str | None:
    """``value`` if it is a directory (click's Path lets a FIFO or a device through file_okay=False)."""
    if value is not None and not Path(value).is_dir():
        raise click.BadParameter(f"{value!r} is not a directory", param_hint=flag)
    return value


@main.command("install-class")
@click.option("--source-dir", metavar="DIR", type=click.Path(exists=True, file_okay=False),
              callback=lambda ctx, param, value: _directory(value, "--source-dir"),
              help="Build these cls sources instead of the packaged ones.")
@_command
def install_class(ceph, source_dir=None):
    """Build and install the sae object class.

    Then verify it through every OSD (its version call)."""
    report = ceph.install_class(source_dir=source_dir)
    _summary(report)
    for where, reply in report.details["versions"].items():
        click.echo(f"{where}: {reply}")


@main.command("install-scan-library")
@click.option("--node", "nodes", multiple=True, metavar="NODE",
              help="A Ceph node or ceph-client to build on (repeatable; default: every ceph-client).")
@_command
def install_scan_library(ceph, nodes=()):
    """Build the class's scan as a client library.

    Prints its path: libsae_scan.so, which the auto reader's Spark tasks load to scan an object
    themselves."""
    report = ceph.install_scan_library(list(nodes) or ceph.topology.clients)
    _summary(report)
    click.echo(report.details["path"])


@main.command()
@click.option("--path", required=True, metavar="DIR", help="A CephFS directory of Parquet files, e.g. /data/taxi.")
@click.option("--column", required=True, metavar="NAME", help="The key column to index, e.g. tpep_pickup_datetime.")
@_command
def index(ceph, path, column):
    """Index a key column beside each object, in its omap.

    A scan with the index flag (the connector's offload-index mode) then answers an object holding
    none of a lookup's keys without reading it. An up-to-date object's index is left as it is."""
    click.echo(ceph.index(path, column).line())


@main.command()
@_command
def status(ceph):
    """Show each daemon's state and the cluster's health.

    Per daemon per host: running or not; then the health. Exit 1 unless all is well."""
    st = ceph.status()
    for line in st.lines():
        click.echo(line)
    _client_confs(ceph)
    if not st.ok:
        sys.exit(1)


@main.command()
@_command
def stop(ceph):
    """Stop every daemon by pid.

    memstore keeps its data only through a clean stop."""
    _summary(ceph.stop())


@main.command()
@_command
def uninstall(ceph):
    """Stop every daemon and remove the cluster's state.

    Packages stay installed."""
    _summary(ceph.uninstall())
