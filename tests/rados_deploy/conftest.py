"""Register the shared Ceph fixture (fixtures.ceph) until tests/conftest.py lists it in
``pytest_plugins``; registered under that same plugin name, so it exists once per session."""
import importlib.util


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("fixtures.ceph") and importlib.util.find_spec("fixtures.ceph"):
        config.pluginmanager.import_plugin("fixtures.ceph")
