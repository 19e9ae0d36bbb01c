"""Deploy plugins, registered under the entry-point group ``data_deploy.plugins``.

A plugin says where a dataset goes (which nodes write it, which node-side backend of
:mod:`data_deploy.backends` does the writing, by its registered name) and what those nodes need
installed.
"""
from __future__ import annotations

from importlib.metadata import entry_points

from metareserve import Layout, Reservation
from metareserve.errors import UsageError

from ..backends import BACKENDS

GROUP = "data_deploy.plugins"


class Plugin:
    """Base of deploy plugins. Subclasses set ``name``, ``backend`` (a name in
    :data:`data_deploy.backends.BACKENDS`) and ``apt_packages``."""

    name = ""
    backend = ""
    apt_packages: tuple[str, ...] = ()
    needs_ceph = False

    def nodes(self, reservation: Reservation, layout: Layout, node) -> list[str]:
        """Names of the nodes that write the dataset (``node``: a name or list chosen by the user)."""
        raise NotImplementedError


def known() -> list[str]:
    """Names of the registered plugins."""
    return sorted(ep.name for ep in entry_points(group=GROUP))


def get_plugin(name: str) -> Plugin:
    """An instance of the plugin registered as ``name``; UsageError naming the known ones."""
    found = [ep for ep in entry_points(group=GROUP) if ep.name == name]
    if not found:
        raise UsageError(f"unknown deploy plugin {name!r} (known: {', '.join(known()) or 'none'})")
    try:
        plugin = found[0].load()()
    except Exception as e:  # a broken plugin must fail loudly, naming itself
        raise UsageError(f"deploy plugin {name!r} ({found[0].value}) failed to load: "
                         f"{type(e).__name__}: {e}") from None
    check_backend(plugin, found[0].value)
    return plugin


def check_backend(plugin: Plugin, where: str) -> None:
    """The plugin's ``backend`` names a registered node-side backend; UsageError naming the field."""
    if plugin.backend not in BACKENDS:
        raise UsageError(f"deploy plugin {plugin.name!r} ({where}): backend {plugin.backend!r} is not a "
                         f"registered backend (known: {', '.join(sorted(BACKENDS))})")


def _names(node) -> list[str]:
    return [node] if isinstance(node, str) else list(node)
