"""The pytest plugin is tested with ``pytester``: each test builds a small project and runs pytest in it."""

pytest_plugins = ["pytester"]
