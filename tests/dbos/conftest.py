"""Records the shop application for real once per session (pickle and portable JSON system databases on
SQLite, pickle on Postgres) and imports its runs with ``replaytest import dbos``; the tests replay those
histories."""

from __future__ import annotations

import pytest
from dbos_kit import Recording, record
from postgres_server import PostgresServer


@pytest.fixture(scope="session")
def pickled(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("dbos-pickle"), portable=False)


@pytest.fixture(scope="session")
def portable(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("dbos-portable"), portable=True)


@pytest.fixture(scope="session")
def pickled_on_postgres(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> Recording:
    """The same shop recording as ``pickled``, its system database (schema ``dbos``) and its orders database
    on the test Postgres."""
    directory = tmp_path_factory.mktemp("dbos-postgres")
    return record(directory, portable=False, database_url=postgres.url("shop_system"), app_database_url=postgres.create_database("shop_orders"))
