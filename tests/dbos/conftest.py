"""Records the shop application for real once per session (pickle and portable JSON system databases)
and imports its runs with ``replaytest import dbos``; the tests replay those histories."""

from __future__ import annotations

import pytest
from dbos_kit import Recording, record


@pytest.fixture(scope="session")
def pickled(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("dbos-pickle"), portable=False)


@pytest.fixture(scope="session")
def portable(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("dbos-portable"), portable=True)
