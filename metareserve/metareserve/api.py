"""The metareserve Python API: reserve, list, show, check, release, extend."""
from __future__ import annotations

import os
from pathlib import Path

from . import providers
from .capacity import Capacities
from .errors import NothingToDo, UsageError
from .health import NodeHealth, check
from .log import node_log
from .model import Reservation, load_reservation
from .outputs import check_writable


def registry_dir() -> Path:
    """Where copies of live reservations are recorded (``$SAE_HOME/reservations``)."""
    return Path(os.environ.get("SAE_HOME", Path.home() / ".sae")) / "reservations"


def reserve(*, provider: str = "local", name: str = "sae", nodes: int | None = None, out=None,
            **options) -> Reservation:
    """Reserve nodes with ``provider`` (or reattach to ``name``); write the reservation file.

    The file goes to ``out`` (default ``./<name>.yaml``) and a copy to :func:`registry_dir`.
    """
    chosen = providers.get(provider)
    chosen.check_request(name=name, nodes=nodes, **options)
    out = Path(out or Path.cwd() / f"{name}.yaml")
    if out.is_dir() or not out.parent.is_dir():
        raise UsageError(f"--out {out}: give a file path in an existing directory for the reservation file")
    check_writable(out, "--out", directory=False)
    res = chosen.reserve(name=name, nodes=nodes, **options)
    path = res.save(out)
    registry_dir().mkdir(parents=True, exist_ok=True)
    Reservation.save(_copy(res), registry_dir() / f"{name}.yaml")
    res.path = path
    node_log(None, f"{provider} reserve", f"reservation {name!r}: {len(res.nodes)} nodes written to {path}")
    return res


def _copy(res: Reservation) -> Reservation:
    return Reservation(res.name, res.provider, list(res.nodes), dict(res.provider_state), res.ssh_config)


def list_reservations() -> list[Reservation]:
    """Reservations recorded in the registry (released ones are removed from it)."""
    out = []
    for f in sorted(registry_dir().glob("*.yaml")):
        try:
            out.append(load_reservation(f))
        except UsageError:
            continue
    return out


def release(reservation: Reservation | str) -> str:
    """Release a reservation (a Reservation or a file path); returns what was done."""
    res = load_reservation(reservation) if not isinstance(reservation, Reservation) else reservation
    entry = registry_dir() / f"{res.name}.yaml"
    try:
        message = providers.get(res.provider).release(res)
    except NothingToDo:
        entry.unlink(missing_ok=True)
        raise
    entry.unlink(missing_ok=True)
    return message


def shape(reservation: Reservation | str, capacities: Capacities) -> bool:
    """Put ``capacities`` in force on a reservation's hosts (the local provider emulates them;
    hosts not named become unlimited) and record them in its file and the registry's copy;
    True if anything changed."""
    res = load_reservation(reservation) if not isinstance(reservation, Reservation) else reservation
    changed = providers.get(res.provider).shape(res, capacities)
    for path in (res.path, registry_dir() / f"{res.name}.yaml"):
        if path is not None and Path(path).exists():
            Reservation.save(_copy(res), path)
    return changed


def extend(reservation: Reservation | str, **options) -> str:
    """Extend a reservation's expiration (providers that have one)."""
    res = load_reservation(reservation) if not isinstance(reservation, Reservation) else reservation
    return providers.get(res.provider).extend(res, **options)


__all__ = ["reserve", "release", "extend", "shape", "list_reservations", "check", "NodeHealth", "registry_dir"]
