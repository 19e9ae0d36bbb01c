"""The ssh provider: hosts the user already has.

Hosts come as names from ``~/.ssh/config`` (``--host`` options) or as a YAML list
(``--hosts-file``) of mappings with name, host, port, user, identity, address, labels.
Connections honour ``~/.ssh/config`` and the SSH agent; nothing is created or removed.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from .. import validate
from ..errors import UsageError
from ..model import Reservation, read_yaml, reservation_from_dict
from . import Provider


def ssh_resolve(alias: str, ssh_config: str | None = None) -> dict:
    """What ``ssh -G alias`` resolves for an alias (hostname, port, user, identityfile)."""
    argv = ["ssh", *(["-F", ssh_config] if ssh_config else []), "-G", alias]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError(f"[{alias} ssh reserve] ssh -G failed: {r.stderr.strip()}")
    out = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(" ")
        out.setdefault(key, value)
    return out


class SshProvider(Provider):
    """Existing SSH hosts; reserve records them, release leaves them alone."""

    name = "ssh"

    def reserve(self, *, name: str, nodes: int | None = None, hosts=(), hosts_file=None,
                ssh_config=None, **options) -> Reservation:
        """Record ``hosts`` (ssh aliases) or the hosts in ``hosts_file`` as reservation ``name``.

        ``ssh_config`` replaces ``~/.ssh/config`` for every connection to these hosts.
        """
        if options:
            raise UsageError(f"ssh provider: unknown option(s) {', '.join(sorted(options))}")
        validate.name(name, "reservation name")
        if ssh_config:
            validate.path(str(ssh_config), "--ssh-config")
        for alias in hosts:
            validate.host(alias, "--host")
        if bool(hosts) == bool(hosts_file):
            raise UsageError("ssh provider: give either --host ALIAS (repeatable) or --hosts-file FILE")
        if hosts_file:
            entries = _load_hosts_file(hosts_file)
        else:
            entries = []
            for i, alias in enumerate(hosts, 1):
                resolved = ssh_resolve(alias, ssh_config)
                entries.append({"name": alias, "host": alias, "port": int(resolved.get("port", 22)),
                                "user": resolved.get("user", "root"),
                                "address": resolved.get("hostname", alias)})
        if nodes is not None and nodes != len(entries):
            raise UsageError(f"ssh provider: --nodes {nodes} but {len(entries)} hosts given")
        data = {"version": 1, "name": name, "provider": "ssh", "nodes": entries}
        if ssh_config:
            if not Path(ssh_config).is_file():
                raise UsageError(f"{ssh_config}: ssh config file not found")
            data["ssh_config"] = str(Path(ssh_config).resolve())
        return reservation_from_dict(data, str(hosts_file or "--host"))

    def release(self, reservation: Reservation) -> str:
        return (f"ssh reservation {reservation.name!r}: hosts are the user's own; "
                f"nothing to release on {len(reservation.nodes)} hosts")


def _load_hosts_file(path) -> list[dict]:
    p = Path(path)
    data = read_yaml(p, "hosts file")
    if isinstance(data, dict):
        data = data.get("hosts")
    if not isinstance(data, list) or not data:
        raise UsageError(f"{p}: expected a list of hosts (or 'hosts:' with a list)")
    out = []
    for i, h in enumerate(data):
        if isinstance(h, str):
            h = {"name": h, "host": h}
        if not isinstance(h, dict) or "host" not in h:
            raise UsageError(f"{p}: hosts[{i}] needs at least 'host'")
        h = dict(h)
        h.setdefault("name", h["host"])
        out.append(h)
    return out
