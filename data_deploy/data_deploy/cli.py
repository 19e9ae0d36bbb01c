"""``data-deploy``: NYC-taxi data as fixed-size single-row-group Parquet objects in CephFS."""
import click

from metareserve.cli_support import (FloatRange, Group, IntRange, handle_errors, load_target, one_line_path,
                                    reservation_option, with_layout)
from metareserve.errors import OperationalError

import data_deploy as dd

target_options = [
    reservation_option,
    click.option("--plugin", default="cephfs", show_default=True, help="Deploy plugin (cephfs, local)."),
    click.option("--node", "nodes", multiple=True, metavar="NODE",
                 help="Writing node (repeatable for local); default from the plugin and layout."),
    click.option("--ceph-conf", metavar="PATH",
                 help="Client ceph.conf on the node (cephfs; 'rados-deploy status' prints it; "
                      "default Ceph's own /etc/ceph/ceph.conf)."),
    click.option("--ceph-user", metavar="ID",
                 help="cephx client id (cephfs; e.g. fs-write for client.fs-write, whose keyring the conf "
                      "names); default admin."),
]


def with_target(fn):
    for opt in reversed(target_options):
        fn = opt(fn)
    return with_layout(fn)


@click.group(cls=Group)
def main():
    """NYC-taxi data as fixed-size single-row-group Parquet objects in CephFS."""


@main.command()
@click.option("--rows", type=IntRange(1, dd.MAX_ROWS), required=True, help="Number of trips.")
@click.option("--seed", type=IntRange(0, dd.MAX_SEED), default=0, show_default=True,
              help="Random seed (the same seed and rows give the same trips).")
@click.option("--out", required=True, type=click.Path(file_okay=False), callback=one_line_path,
              help="Output directory.")
@click.option("--rows-per-file", type=IntRange(min=1), default=1_000_000, show_default=True,
              help="Rows per output file.")
@handle_errors
def generate(rows, seed, out, rows_per_file):
    """Generate synthetic NYC yellow-taxi trips (TLC schema) as Parquet."""
    files = dd.generate(rows, seed=seed, out=out, rows_per_file=rows_per_file)
    click.echo(f"generated {rows} rows in {len(files)} files under {out}")


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--out", required=True, type=click.Path(file_okay=False), callback=one_line_path,
              help="Output directory.")
@handle_errors
def ingest(paths, out):
    """Convert real TLC yellow-taxi files to the generator's schema.

    PATHS are TLC Parquet or CSV files."""
    files = dd.ingest(list(paths), out)
    click.echo(f"ingested {len(paths)} input(s) into {len(files)} files under {out}")


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--object-size", required=True, help="Target object size, e.g. 16MiB.")
@click.option("--out", required=True, type=click.Path(file_okay=False), callback=one_line_path,
              help="Output directory.")
@click.option("--format", "fmt", type=click.Choice(dd.FORMATS), default="parquet", show_default=True,
              help="Stored format: Parquet files of one row group, Arrow IPC files of one record batch, "
                   "or CSV files with a header line.")
@click.option("--compression", type=click.Choice(dd.CODECS), default="none", show_default=True,
              help="Codec of the objects (none: uncompressed; IPC: zstd or lz4).")
@click.option("--page-rows", type=IntRange(1, dd.MAX_PAGE_ROWS), default=None,
              help="Parquet: data pages of at most this many rows, a page index, and dictionaries only for "
                   "columns whose values fit one dictionary page (default: the writer's pages, no page index).")
@handle_errors
def split(inputs, object_size, out, fmt, compression, page_rows):
    """Split Parquet INPUTS into files of one object each.

    Each output file holds one row group (or one IPC record batch, or CSV lines) and is at most
    --object-size."""
    click.echo(dd.split(list(inputs), out=out, object_size=object_size, compression=compression,
                        format=fmt, page_rows=page_rows).summary())


@main.command()
@click.argument("source", nargs=-1, required=True)
@click.option("--fraction", type=FloatRange(0, 1), required=True, help="Wanted selectivity (0.01 = 1%).")
@click.option("--column", default="total_amount", show_default=True, help="Column the predicate compares.")
@handle_errors
def threshold(source, fraction, column):
    """Print the threshold that selects a fraction of the rows.

    t such that 'COLUMN < t' selects FRACTION of the rows of SOURCE (Parquet)."""
    click.echo(repr(dd.selectivity_threshold(list(source), fraction, column=column)))


@main.command()
@with_target
@click.argument("src")
@click.option("--dest", default="/data/taxi", show_default=True, help="Dataset directory on the target.")
@click.option("--object-size", required=True, help="Object size, e.g. 16MiB (multiple of 64KiB).")
@click.option("--link-multiplier", type=IntRange(min=1), default=1, show_default=True,
              help="Names per file: hard links inflating the dataset without storing more.")
@click.option("--copy-multiplier", type=IntRange(min=1), default=1, show_default=True,
              help="Stored copies of every file.")
@handle_errors
def deploy(reservation, plugin, nodes, ceph_conf, ceph_user, layout_file, role_specs, src, dest, object_size,
           link_multiplier, copy_multiplier):
    """Deploy a split dataset onto the target.

    SRC is a directory of single-row-group files ('data-deploy split' makes them)."""
    res, layout = load_target(reservation, layout_file, role_specs)
    report = dd.deploy(res, src, plugin=plugin, dest=dest, object_size=object_size,
                        link_multiplier=link_multiplier, copy_multiplier=copy_multiplier,
                        node=list(nodes) or None, layout=layout, ceph_conf=ceph_conf,
                        ceph_user=ceph_user)
    click.echo(report.summary())


def _on_dataset(action, dest, reservation, layout_file, role_specs, nodes, **client):
    """``action`` (``dd.verify``, ``dd.clean``) on the dataset at DEST, checked before any node is
    reached (``client``: the plugin and its Ceph client options)."""
    dd.check_target(dest, what="DEST", ceph_conf=client["ceph_conf"], ceph_user=client["ceph_user"])
    res, layout = load_target(reservation, layout_file, role_specs)
    return action(res, dest, node=list(nodes) or None, layout=layout, **client)


@main.command()
@with_target
@click.argument("dest", default="/data/taxi")
@handle_errors
def verify(dest, **target):
    """Check a deployed dataset against its manifest.

    Exit 1 on any mismatch at DEST."""
    report = _on_dataset(dd.verify, dest, **target)
    if not report.ok:
        raise OperationalError(report.summary() + "; run 'data-deploy deploy' again to repair, or clean")
    click.echo(report.summary())


@main.command()
@with_target
@click.argument("dest", default="/data/taxi")
@handle_errors
def clean(dest, **target):
    """Remove the dataset at DEST and the nodes' staging copies."""
    click.echo(_on_dataset(dd.clean, dest, **target).summary())
