"""``metareserve``: reserve, list, show, check, extend and release nodes."""
from __future__ import annotations

import sys

import click
import yaml

from . import api, lease, providers
from .cli_support import Group, handle_errors, reservation_option
from .errors import OperationalError, SaeError
from .model import load_reservation
from .remote import Cluster


@click.group(cls=Group)
def main():
    """Reserve nodes (local namespaces, your SSH hosts, CloudLab) and check them."""


@main.command()
@click.option("--provider", "-p", default="local", show_default=True, help="local, ssh or cloudlab.")
@click.option("--nodes", "-n", type=int, default=None, help="Number of nodes.")
@click.option("--name", default="sae", show_default=True, help="Reservation name.")
@click.option("--out", "-o", metavar="FILE", help="Reservation file to write (default ./NAME.yaml).")
@click.option("--host", "hosts", multiple=True, help="ssh provider: an ~/.ssh/config alias (repeatable).")
@click.option("--hosts-file", help="ssh provider: YAML list of hosts.")
@click.option("--ssh-config", help="ssh provider: ssh_config file to use instead of ~/.ssh/config.")
@click.option("--cpu-limit", type=float, help="local provider: CPU cap per host, in cores.")
@click.option("--option", "-O", "extra", multiple=True, metavar="KEY=VALUE",
              help="Provider option (e.g. cloudlab site=utah).")
@click.option("--check/--no-check", "gate", default=True, show_default=True, help="Run the health gate after.")
@handle_errors
def reserve(provider, nodes, name, out, hosts, hosts_file, ssh_config, cpu_limit, extra, gate):
    """Reserve nodes and write a reservation file."""
    options = dict(kv.split("=", 1) for kv in extra)
    if hosts:
        options["hosts"] = list(hosts)
    if hosts_file:
        options["hosts_file"] = hosts_file
    if ssh_config:
        options["ssh_config"] = ssh_config
    if cpu_limit:
        options["cpu_limit"] = cpu_limit
    res = api.reserve(provider=provider, name=name, nodes=nodes, out=out, **options)
    click.echo(f"reserved {res.name!r} ({res.provider}): {len(res.nodes)} nodes -> {res.path}")
    if gate and not providers.get(provider).gates_nodes:
        _report(api.check(res))


@main.command("list")
@handle_errors
def list_cmd():
    """List recorded reservations."""
    rows = api.list_reservations()
    if not rows:
        click.echo("no reservations recorded")
    for r in rows:
        click.echo(f"{r.name}\t{r.provider}\t{len(r.nodes)} nodes\t{r.path}")


@main.command()
@reservation_option
@handle_errors
def show(reservation):
    """Print a reservation's nodes."""
    res = load_reservation(reservation)
    click.echo(f"{res.name} ({res.provider}), {len(res.nodes)} nodes")
    for n in res.nodes:
        click.echo(f"  {n.name}\t{n.user}@{n.host}:{n.port}\taddress {n.cluster_address}")
    try:
        with Cluster(res) as cluster:
            held = lease.holder(cluster)
        click.echo(f"leased by {held.describe()}" if held else "lease: free")
    except SaeError as e:
        click.echo(f"lease: unknown ({e})")


@main.command("break-lease")
@reservation_option
@handle_errors
def break_lease(reservation):
    """Remove a reservation's lease whose holder is gone for good (e.g. another machine died)."""
    with Cluster(load_reservation(reservation)) as cluster:
        click.echo(lease.break_lease(cluster))


@main.command()
@reservation_option
@click.option("--json", "as_json", is_flag=True, help="Print the per-node results as YAML/JSON.")
@handle_errors
def check(reservation, as_json):
    """Health gate on every node: SSH, python3, root/sudo, free disk."""
    res = load_reservation(reservation)
    results = api.check(res)
    if as_json:
        click.echo(yaml.safe_dump([r.__dict__ for r in results], sort_keys=False))
    _report(results)


def _report(results):
    for h in results:
        status = "ok" if h.ok else f"FAILED: {h.reason}"
        click.echo(f"[{h.node} check] {status}")
    bad = [h.node for h in results if not h.ok]
    if bad:
        raise OperationalError(f"[check] {len(bad)} of {len(results)} nodes failed the health gate: {', '.join(bad)}")
    click.echo(f"all {len(results)} nodes healthy")


@main.command()
@reservation_option
@click.option("--hours", type=float, default=4, show_default=True)
@handle_errors
def renew(reservation, hours):
    """Extend the reservation's expiration (CloudLab)."""
    click.echo(api.extend(load_reservation(reservation), hours=hours))


@main.command()
@reservation_option
@handle_errors
def release(reservation):
    """Release the nodes and remove what the provider created."""
    click.echo(api.release(load_reservation(reservation)))


@main.command("providers")
def providers_cmd():
    """List installed providers."""
    click.echo("\n".join(providers.known()))


if __name__ == "__main__":
    sys.exit(main())
