"""``rados-deploy``: Ceph bootstrapped by hand, CephFS, and the Arrow scan object class."""
import click


@click.group()
def main():
    """Ceph bootstrapped by hand, CephFS, and the Arrow scan object class."""
