"""The test Postgres server (``postgres_server``): it really serves on 127.0.0.1, and stopping it ends the
server and removes its folder."""

from __future__ import annotations

import socket

import psycopg
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
