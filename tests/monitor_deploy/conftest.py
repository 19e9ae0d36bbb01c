"""Make the shared stack fixtures available to these tests until tests/conftest.py lists them."""


def pytest_configure(config):
    for plugin in ("fixtures.monitor",):
        if not config.pluginmanager.has_plugin(plugin):
            config.pluginmanager.import_plugin(plugin)
