"""Make the shared stack fixtures available to these tests until tests/conftest.py lists them.

Registered under the same plugin names ``pytest_plugins`` would use, so each session fixture
still exists once per session.
"""
import importlib.util


def pytest_configure(config):
    for plugin in ("fixtures.monitor", "fixtures.ceph", "fixtures.spark"):
        if not config.pluginmanager.has_plugin(plugin) and importlib.util.find_spec(plugin):
            config.pluginmanager.import_plugin(plugin)
