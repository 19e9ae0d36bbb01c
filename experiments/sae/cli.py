"""``sae``: run experiments."""
import click


@click.group()
def main():
    """Plan, run, resume and report offloading experiments."""
