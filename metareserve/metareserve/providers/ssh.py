"""The ssh provider: hosts the user already has.

Hosts come as names from ``~/.ssh/config`` (``--host`` options) or as a hosts file
(``--hosts-file``; ``sae run --hosts``): a YAML list of hosts, or a mapping with ``hosts:`` (the
list) and optionally ``ssh_config:`` (a file replacing ``~/.ssh/config`` for these hosts; relative
to the hosts file). A host is a mapping with ``host`` and optionally name, port, user, identity,
address, python, labels (the fields of a reservation's node), or a bare host name. Every field is
checked when the file is loaded (:func:`load_hosts_file`), refused in one line naming the file and
the field. Connections honour ``~/.ssh/config`` and the SSH agent; nothing is created or removed.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from .. import validate
from ..errors import UsageError
from ..model import Reservation, read_yaml, reservation_from_dict, same_address
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

    def check_request(self, *, name: str, nodes: int | None = None, **options) -> None:
        super().check_request(name=name, nodes=nodes)
        self._data(name=name, nodes=nodes, **options)

    def reserve(self, *, name: str, nodes: int | None = None, **options) -> Reservation:
        """Record ``hosts`` (ssh aliases) or the hosts in ``hosts_file`` as reservation ``name``.

        ``ssh_config`` replaces ``~/.ssh/config`` for every connection to these hosts.
        """
        data, source = self._data(name=name, nodes=nodes, **options)
        return reservation_from_dict(data, source)

    def _data(self, *, name: str, nodes: int | None = None, hosts=(), hosts_file=None, ssh_config=None,
              **options) -> tuple[dict, str]:
        """The reservation's data and where its hosts came from, every field checked."""
        if options:
            raise UsageError(f"ssh provider: unknown option(s) {', '.join(sorted(options))}")
        validate.name(name, "reservation name")
        if ssh_config:
            validate.path(str(ssh_config), "--ssh-config")
            if not Path(ssh_config).is_file():
                raise UsageError(f"--ssh-config {ssh_config}: no such file; give the ssh_config file to use")
        for alias in hosts:
            validate.host(alias, "--host")
        if bool(hosts) == bool(hosts_file):
            raise UsageError("ssh provider: give either --host ALIAS (repeatable) or --hosts-file FILE")
        if hosts_file:
            entries, file_config = load_hosts_file(hosts_file)
            ssh_config = ssh_config or file_config
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
        return data, str(hosts_file or "--host")

    def release(self, reservation: Reservation) -> str:
        return (f"ssh reservation {reservation.name!r}: hosts are the user's own; "
                f"nothing to release on {len(reservation.nodes)} hosts")


HOST_KEYS = {"name": str, "host": str, "port": int, "user": str, "identity": str, "address": str,
             "python": str, "labels": dict}
"""The fields of one host in a hosts file (those of a reservation's node) and their types."""


def load_hosts_file(path) -> tuple[list[dict], str | None]:
    """(hosts, ssh_config or None) of a hosts file, every field checked; UsageError naming the
    file and the field (``hosts.yaml: hosts[1].port 70000 is not allowed: ...``) otherwise."""
    from ..model import Node
    p = Path(path)
    data = read_yaml(p, "hosts file")
    ssh_config = None
    if isinstance(data, dict):
        unknown = sorted(set(map(str, data)) - {"hosts", "ssh_config"})
        if unknown:
            raise UsageError(f"{p}: unknown key(s) {', '.join(unknown)}; a hosts file has 'hosts' (a list) "
                             f"and optionally 'ssh_config'")
        ssh_config = data.get("ssh_config")
        if ssh_config is not None:
            try:
                validate.path(ssh_config, "ssh_config")
            except UsageError as e:
                raise UsageError(f"{p}: {e}") from None
            config = Path(ssh_config).expanduser()
            config = config if config.is_absolute() else p.resolve().parent / config
            if not config.is_file():
                raise UsageError(f"{p}: ssh_config {ssh_config!r}: {config} is not a file")
            ssh_config = str(config)
        data = data.get("hosts")
    if not isinstance(data, list) or not data:
        raise UsageError(f"{p}: expected a list of hosts (or 'hosts:' with a list)")
    out, seen = [], {}
    for i, h in enumerate(data):
        where = f"{p}: hosts[{i}]"
        if isinstance(h, str):
            h = {"name": h, "host": h}
        if not isinstance(h, dict) or "host" not in h:
            raise UsageError(f"{where} needs at least 'host' (a host name or IP address)")
        for key, value in h.items():
            if key not in HOST_KEYS:
                raise UsageError(f"{where}: unknown key {key!r} (a host has {', '.join(HOST_KEYS)})")
            if not isinstance(value, HOST_KEYS[key]) or isinstance(value, bool):
                raise UsageError(f"{where}.{key} {value!r} must be a "
                                 f"{ {int: 'whole number', str: 'string', dict: 'mapping'}[HOST_KEYS[key]]}")
        h = dict(h)
        try:
            validate.host(h["host"])
            h.setdefault("name", h["host"])
            Node(**h)
        except UsageError as e:   # Node names the field: "port 70000 is not allowed: ..."
            msg = str(e)
            raise UsageError(f"{where}.{'name ' + msg[10:] if msg.startswith('node name ') else msg}") from None
        if h["name"] in seen:
            raise UsageError(f"{where}: name {h['name']!r} is also hosts[{seen[h['name']]}]'s; give each host "
                             f"its own name")
        seen[h["name"]] = i
        out.append(h)
    same = same_address([(h["host"], h.get("port", 22)) for h in out])
    if same:
        first, second = (out[i] for i in same)
        raise UsageError(f"{p}: hosts[{same[0]}] ({first['name']}) and hosts[{same[1]}] ({second['name']}) are both "
                         f"{first['host']}:{first.get('port', 22)}, one machine; list each host once")
    return out, ssh_config
