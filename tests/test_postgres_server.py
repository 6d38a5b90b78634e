"""The test Postgres server (``postgres_server`` and the ``postgres`` fixture): it really serves on
127.0.0.1, stopping it ends the server and removes its folder, and without Postgres a test using it fails."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from postgres_server import ROLE, start_postgres


def test_the_server_answers_and_is_gone_after_stop() -> None:
    server = start_postgres()
    try:
        with psycopg.connect(host="127.0.0.1", port=server.port, user=ROLE, dbname="postgres") as connection:
            assert connection.execute("SELECT current_user, inet_server_addr()::text").fetchone() == (ROLE, "127.0.0.1/32")
        assert (server.data / "postmaster.pid").is_file()
    finally:
        server.stop()
    assert not server.folder.exists()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", server.port)) != 0  # nothing listens there any more


def test_without_postgres_a_test_using_it_fails_and_says_what_to_install(pytester: pytest.Pytester) -> None:
    """Not a skip: a skipped test would count as passing on a machine that cannot run it."""
    here = Path(__file__).resolve().parent
    conftest = (here / "conftest.py").read_text()
    # No Debian folder and nothing on PATH: the binaries are missing, as on a machine without the package.
    pytester.makeconftest(
        conftest + "\n\nimport postgres_server\n\npostgres_server.DEBIAN_VERSIONS = Path('no-postgresql')\n"
        "os.environ['PATH'] = str(Path('no-bin').resolve())\n"
    )
    pytester.makepyfile(test_needs_postgres="def test_orders_on_postgres(postgres):\n    assert postgres.port\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(here))
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the Postgres tests (DBOS, LangGraph) need a Postgres server*apt-get install -y --no-install-recommends postgresql*"])
