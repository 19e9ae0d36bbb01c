"""``metareserve``: reserve, list, show, check, extend and release nodes."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import click

from . import api, lease, providers
from .calibrate import calibrate
from .capacity import Capacities
from .cli_support import FLOAT, INT, Group, handle_errors, reservation_option
from .errors import OperationalError, SaeError, UsageError
from .model import load_reservation
from .providers.local import node_names
from .remote import Cluster


def capacity_options(fn):
    """The local provider's host and link capacities, each ``VALUE`` (every host) or
    ``NODE[,NODE]=VALUE`` (repeatable)."""
    for option in reversed([
            click.option("--cpus", multiple=True, metavar="[NODES=]CORES",
                         help="local provider: cores a host may run on (cpuset: 0, 1, 0-3)."),
            click.option("--cpu-limit", multiple=True, metavar="[NODES=]N",
                         help="local provider: CPU quota of a host, in cores (0.5, 2)."),
            click.option("--memory", multiple=True, metavar="[NODES=]SIZE",
                         help="local provider: memory limit of a host (4GiB)."),
            click.option("--link-rate", multiple=True, metavar="[NODES=]RATE",
                         help="local provider: rate of a host's link, both directions (100mbit, 1.25gbit, "
                              "10Gbit/s; a bare number is Mbit/s; unlimited)."),
            click.option("--delay", metavar="TIME",
                         help="local provider: link delay; refused in one line (the provider emulates link rates only, "
                              "and says whether the kernel has netem)."),
    ]):
        fn = option(fn)
    return fn


def _capacities(names: list[str], cpus, cpu_limit, memory, link_rate, delay) -> Capacities | None:
    if not (cpus or cpu_limit or memory or link_rate or delay):
        return None
    return Capacities.parse(names, cpus=cpus, cpu_quota=cpu_limit, memory=memory, link_rate=link_rate,
                            delay=delay)


@click.group(cls=Group)
def main():
    """Reserve nodes (local namespaces, your SSH hosts, CloudLab) and check them."""


@main.command()
@click.option("--provider", "-p", default="local", show_default=True,
              help=f"A provider: {', '.join(providers.known())} (the installed entry points).")
@click.option("--nodes", "-n", type=INT, default=None, help="Number of nodes (local: default 3).")
@click.option("--name", default="sae", show_default=True, help="Reservation name.")
@click.option("--out", "-o", metavar="FILE", help="Reservation file to write (default ./NAME.yaml).")
@click.option("--host", "hosts", multiple=True, help="ssh provider: an ~/.ssh/config alias (repeatable).")
@click.option("--hosts-file", metavar="FILE", help="ssh provider: a hosts file (YAML list of hosts; docs/ssh.md).")
@click.option("--ssh-config", metavar="FILE", help="ssh provider: ssh_config file to use instead of ~/.ssh/config.")
@capacity_options
@click.option("--option", "-O", "extra", multiple=True, metavar="KEY=VALUE",
              help="Provider option (e.g. cloudlab site=utah).")
@click.option("--check/--no-check", "gate", default=True, show_default=True,
              help="Run the health gate and calibration after.")
@handle_errors
def reserve(provider, nodes, name, out, hosts, hosts_file, ssh_config, cpus, cpu_limit, memory, link_rate, delay,
            extra, gate):
    """Reserve nodes and write a reservation file.

    Then, unless --no-check, every node passes the health gate (nodes that fail are given back)
    and its cores and links are measured."""
    bad = [kv for kv in extra if not kv.partition("=")[0] or "=" not in kv]
    if bad:
        raise UsageError(f"--option {bad[0]!r}: expected KEY=VALUE")
    options = dict(kv.split("=", 1) for kv in extra)
    if cpus or cpu_limit or memory or link_rate or delay:
        if provider != "local":
            raise UsageError(f"--cpus/--cpu-limit/--memory/--link-rate/--delay: host capacities are emulated by "
                             f"the local provider only, not {provider!r}")
        if nodes is not None and nodes < 1:
            raise UsageError(f"--nodes must be at least 1, not {nodes}")
        options["capacities"] = _capacities(node_names(3 if nodes is None else nodes), cpus, cpu_limit, memory,
                                            link_rate, delay)
    if hosts:
        options["hosts"] = list(hosts)
    if hosts_file:
        options["hosts_file"] = hosts_file
    if ssh_config:
        options["ssh_config"] = ssh_config
    registry = api.registry_dir()
    new_dirs = [d for d in (registry.parent, registry) if not os.path.isdir(d)]
    res = api.reserve(provider=provider, name=name, nodes=nodes, out=out, **options)
    click.echo(f"reserved {res.name!r} ({res.provider}): {len(res.nodes)} nodes -> {res.path}")
    if gate:
        if not providers.get(provider).gates_nodes:
            _gate_or_give_back(res, new_dirs)
        _calibrate(res)


def _gate_or_give_back(res, new_dirs: list[Path]) -> None:
    """The health gate after a reserve; nodes this reserve took that fail it are given back, and
    their reservation files and the registry directories it made removed (a reattached
    reservation stays as it was)."""
    try:
        _report(api.check(res))
    except OperationalError:
        if not res.reattached:
            api.release(res)
            Path(res.path).unlink(missing_ok=True)
            for d in reversed(new_dirs):
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
            click.echo(f"released {res.name!r} again and removed {res.path}: its nodes failed the health gate",
                       err=True)
        raise


@main.command()
@reservation_option
@capacity_options
@handle_errors
def shape(reservation, cpus, cpu_limit, memory, link_rate, delay):
    """Set a local cluster's capacities, then measure them.

    Host and link capacities as --cpus, --cpu-limit, --memory and --link-rate give them; hosts
    left out become unlimited."""
    res = load_reservation(reservation)
    caps = _capacities([n.name for n in res.nodes], cpus, cpu_limit, memory, link_rate, delay) or Capacities()
    changed = api.shape(res, caps)
    click.echo(f"{'shaped' if changed else 'no changes:'} {res.name!r}: " + "; ".join(
        f"{n.name} {caps.of(n.name).describe()}" for n in res.nodes))
    _calibrate(res)


def _calibrate(res, err: bool = False) -> None:
    """Measure cores and links, print them beside what was declared (on stderr with ``err``),
    warn where they differ."""
    measured = calibrate(res)
    click.echo("calibration (declared vs measured):\n" + measured.text(), err=err)
    for line in measured.warnings():
        click.echo(f"warning: {line}", err=True)


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
    """Print a reservation's nodes and who holds its lease."""
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
    """Remove a lease whose holder is gone for good.

    The lease a run holds on the reservation's nodes, left behind when the machine running it
    died; whatever holds it, it is removed."""
    with Cluster(load_reservation(reservation)) as cluster:
        click.echo(lease.break_lease(cluster))


@main.command()
@reservation_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the per-node results as JSON on stdout (the rest goes to stderr).")
@click.option("--calibrate/--no-calibrate", default=True, show_default=True,
              help="Measure usable cores and link throughput beside what was declared.")
@handle_errors
def check(reservation, as_json, calibrate):
    """Check every node, then measure its cores and links.

    The health gate: SSH, python3, root or sudo, free disk."""
    res = load_reservation(reservation)
    results = api.check(res)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in results], indent=1))
    _report(results, err=as_json)
    if calibrate:
        _calibrate(res, err=as_json)


def _report(results, err: bool = False):
    """Each node's health, one line each (on stderr with ``err``); OperationalError if one failed."""
    for h in results:
        status = "ok" if h.ok else f"FAILED: {h.reason}"
        click.echo(f"[{h.node} check] {status}", err=err)
    bad = [h.node for h in results if not h.ok]
    if bad:
        raise OperationalError(f"[check] {len(bad)} of {len(results)} nodes failed the health gate: {', '.join(bad)}")
    click.echo(f"all {len(results)} nodes healthy", err=err)


@main.command()
@reservation_option
@click.option("--hours", type=FLOAT, default=4, show_default=True, help="Hours to extend by (at most two weeks).")
@handle_errors
def renew(reservation, hours):
    """Extend a reservation's expiration (CloudLab)."""
    if not 0 < hours <= 24 * 14:   # NaN fails too
        raise UsageError(f"--hours {hours!r}: give hours above 0 and at most {24 * 14} (two weeks)")
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
