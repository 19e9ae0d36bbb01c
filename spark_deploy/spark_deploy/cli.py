"""``spark-deploy``: Spark standalone clusters: install, start, status, submit, stop, uninstall."""
import click


@click.group()
def main():
    """Spark standalone clusters: install, start, status, submit, stop, uninstall."""
