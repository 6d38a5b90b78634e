"""replaytest: keep durable-workflow orchestration code replay-safe.

Two halves share this package: ``replaytest.lint`` (a static determinism analyzer) and
``replaytest.replay`` (re-running current code against recorded histories). ``replaytest.cli`` and
``replaytest.pytest_plugin`` are the faces users touch. ``__version__`` is the installed distribution's
version; the one place it is written is ``[project] version`` in pyproject.toml.
"""


def _version_of_this_checkout() -> str:
    """``[project] version`` of the pyproject.toml beside this package, for a checkout that is imported
    without being installed (``PYTHONPATH=.``): there is no distribution metadata to ask then."""
    import sys
    from pathlib import Path

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    try:
        with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as handle:
            project = tomllib.load(handle).get("project", {})
    except (OSError, ValueError):
        return "0+unknown"
    version = project.get("version") if project.get("name") == "replaytest" else None
    return version if isinstance(version, str) else "0+unknown"


def _installed_version() -> str:
    # What importlib.metadata.version answers, read without importing it where the metadata folders can be
    # read exactly (entry_points.version; importing importlib.metadata costs every run about 15 ms).
    from replaytest.entry_points import version

    return version("replaytest") or _version_of_this_checkout()


__version__ = _installed_version()
