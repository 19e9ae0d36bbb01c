"""``data-deploy``: NYC-taxi data as fixed-size single-row-group Parquet objects in CephFS."""
import click


@click.group()
def main():
    """NYC-taxi data as fixed-size single-row-group Parquet objects in CephFS."""
