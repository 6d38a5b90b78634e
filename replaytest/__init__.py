"""replaytest: keep durable-workflow orchestration code replay-safe.

Two halves share this package: ``replaytest.lint`` (a static determinism analyzer) and
``replaytest.replay`` (re-running current code against recorded histories). ``replaytest.cli`` and
``replaytest.pytest_plugin`` are the faces users touch.
"""

# The one place the version is written: pyproject.toml reads it from here, releases are tagged v<it>.
__version__ = "0.1.0"
