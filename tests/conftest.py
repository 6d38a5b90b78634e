"""Shared test helpers: paths to the repository's fixtures and the shared recorded histories, a counter
of file opens (``file_opens``) and a real Postgres server (``postgres``, one per pytest-xdist worker)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import PostgresMissing, PostgresServer, start_postgres

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


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A Postgres server of this test session (so of this xdist worker), stopped when the session ends.
    Without Postgres the tests using it fail, saying what to install: a skipped test would read as passed."""
    try:
        server = start_postgres()
    except PostgresMissing as missing:
        pytest.fail(str(missing), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


class FileOpens:
    """How often each file below the watched folders was opened while a test ran, seen by an audit hook
    (``open()``, ``io.open`` and ``os.open`` all raise the ``open`` event), so a reader cannot go unseen."""

    def __init__(self) -> None:
        self.folders: list[str] = []
        self.counts: dict[str, int] = {}

    def watch(self, folder: Path) -> None:
        self.folders.append(str(folder.resolve()))

    def seen(self, name: str) -> None:
        if any(name.startswith(folder) for folder in self.folders):
            self.counts[name] = self.counts.get(name, 0) + 1

    def of(self, path: Path) -> int:
        return self.counts.get(str(path.resolve()), 0)

    def clear(self) -> None:
        self.counts.clear()


_ACTIVE_OPENS: list[FileOpens] = []
_HOOKED = False


def _count_open(event: str, args: tuple) -> None:
    if event == "open" and _ACTIVE_OPENS and isinstance(args[0], (str, bytes, os.PathLike)):
        name = os.path.abspath(os.fsdecode(args[0]))
        _ACTIVE_OPENS[-1].seen(name)


@pytest.fixture
def file_opens() -> Iterator[FileOpens]:
    """Counts opens of files below the folders given to ``watch`` until the test ends."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_count_open)  # a hook cannot be removed: one for the session, active only here
        _HOOKED = True
    opens = FileOpens()
    _ACTIVE_OPENS.append(opens)
    try:
        yield opens
    finally:
        _ACTIVE_OPENS.remove(opens)
