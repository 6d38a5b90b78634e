"""One recording per session: the approvals app run with the real SDK (see ``azure_kit``), its rows written
to an Azurite table service on 127.0.0.1, and imported from there with ``replaytest import azure-durable``;
the tests replay those histories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure_kit import Imported, record_approvals


@pytest.fixture(scope="session")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Imported]:
    with record_approvals(tmp_path_factory.mktemp("azure-durable")) as recording:
        yield recording
