"""Providers make inventory (a :class:`Reservation`); they never run commands on nodes' behalf.

Providers register under the entry-point group ``metareserve.providers`` and are looked up by name.
"""
from __future__ import annotations

import abc
import functools
import sys
from importlib.metadata import entry_points

from ..capacity import Capacities
from .. import validate
from ..errors import UsageError
from ..model import Reservation

GROUP = "metareserve.providers"


class Provider(abc.ABC):
    """Reserve, reattach and release nodes of one kind."""

    name: str = ""
    gates_nodes = False  # True if reserve() already ran the health gate on every node
    max_nodes = 1000

    def check_request(self, *, name: str, nodes: int | None = None, **options) -> None:
        """Refuse a bad request before anything is reserved (UsageError naming the field);
        providers with options check those too."""
        validate.name(name, "reservation name")
        if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int)
                                  or not 1 <= nodes <= self.max_nodes):
            raise UsageError(f"{self.name} provider: --nodes must be a whole number from 1 to {self.max_nodes}, "
                             f"not {nodes!r}")

    @abc.abstractmethod
    def reserve(self, *, name: str, nodes: int | None = None, **options) -> Reservation:
        """Reserve (or reattach to) ``name`` and return the reservation."""

    @abc.abstractmethod
    def release(self, reservation: Reservation) -> str:
        """Give the nodes back; returns a one-line account of what was done (or found)."""

    def shape(self, reservation: Reservation, capacities: Capacities) -> bool:
        """Put declared host capacities in force; True if anything changed. Only providers whose
        hosts share one machine emulate capacities: elsewhere hosts have what they have."""
        if capacities.to_dict():
            raise UsageError(f"provider {self.name!r} cannot emulate host capacities (cores, memory, link "
                             f"rates): its hosts have their own; declare capacities on the local provider only")
        return False

    def extend(self, reservation: Reservation, **options) -> str:
        """Extend the reservation's lifetime (providers with expirations)."""
        raise UsageError(f"provider {self.name!r} has no expiration to extend")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@functools.lru_cache(maxsize=8)
def _registered(path: tuple[str, ...]) -> dict:
    """Name → entry point of the providers installed on ``path`` (``sys.path``: a distribution
    added to it is seen; reading every distribution's metadata takes milliseconds, and a
    reservation's provider is looked up each time one loads)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def _entry_points() -> dict:
    return _registered(tuple(sys.path))


def known() -> list[str]:
    return sorted(_entry_points())


def get(name: str) -> Provider:
    """The provider registered as ``name``; UsageError naming the known ones otherwise."""
    eps = _entry_points()
    if name not in eps:
        raise UsageError(f"unknown provider {name!r} (known: {', '.join(sorted(eps)) or 'none installed'})")
    try:
        cls = eps[name].load()
    except ImportError as e:
        raise UsageError(f"provider {name!r} cannot be loaded: {e}; install its dependencies") from None
    return cls()
