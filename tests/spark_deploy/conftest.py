"""Make the shared ``spark_cluster`` fixture available even before tests/conftest.py lists it."""


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("fixtures.spark"):
        config.pluginmanager.import_plugin("fixtures.spark")
