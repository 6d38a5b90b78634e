"""Shared test helpers: paths to the repository's fixtures and the shared recorded histories."""

from __future__ import annotations

from pathlib import Path

import pytest

# pytester must be declared in the top-level conftest (pytest refuses it in nested ones); the
# pytest-plugin tests drive the plugin through it.
pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
