"""Deploy backends: one module each, registered by name; a plugin naming no registered backend
is refused when it loads (pure)."""
from __future__ import annotations

import pytest

from data_deploy import get_plugin
from data_deploy.backends import BACKENDS, DeployError, open_backend
from data_deploy.backends.cephfs import CephFSBackend
from data_deploy.backends.local import LocalBackend
from data_deploy.plugins import Plugin, check_backend
from metareserve.errors import UsageError


def test_backends_are_registered_by_name():
    assert BACKENDS == {"cephfs": CephFSBackend, "local": LocalBackend}
    for plugin in ("cephfs", "local"):
        assert get_plugin(plugin).backend in BACKENDS


def test_a_registered_backend_opens_and_an_unknown_name_is_refused():
    fs = open_backend("local", None)
    try:
        assert fs.stat("/") is not None
    finally:
        fs.close()
    with pytest.raises(DeployError, match="unknown backend 'nfs' \\(known: cephfs, local\\)"):
        open_backend("nfs", None)


def test_a_plugin_naming_an_unknown_backend_is_refused_naming_the_field():
    class NFSPlugin(Plugin):
        name, backend = "nfs", "nfs"

    with pytest.raises(UsageError) as e:
        check_backend(NFSPlugin(), "my_pkg:NFSPlugin")
    assert str(e.value) == ("deploy plugin 'nfs' (my_pkg:NFSPlugin): backend 'nfs' is not a registered backend "
                            "(known: cephfs, local)")
