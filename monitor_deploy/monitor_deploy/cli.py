"""``monitor-deploy``: Prometheus, node_exporter, metric windows, dashboards."""
import click


@click.group()
def main():
    """Prometheus, node_exporter, metric windows, dashboards."""
