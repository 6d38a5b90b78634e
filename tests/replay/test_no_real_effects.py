"""Acceptance: replay never performs a real effect. Steps call a real HTTP server on 127.0.0.1; a
diverging replay (and one whose orchestration code calls the network itself) makes 0 requests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
import replay_apps as apps
from replaykit import record, replay, tagged_line


class CountingServer:
    def __init__(self) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(self.path)
                body = self.path.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def server() -> Iterator[CountingServer]:
    counting = CountingServer()
    counting.thread.start()
    try:
        yield counting
    finally:
        counting.server.shutdown()
        counting.server.server_close()


@pytest.fixture
def fetcher_history(tmp_path: Path, server: CountingServer) -> Path:
    path = record(tmp_path, apps.fetcher_v1, server.url, name="fetcher")
    assert server.requests == ["/a", "/b"]  # recording really called the server
    server.requests.clear()
    return path


def test_a_matching_replay_makes_no_requests(fetcher_history: Path, server: CountingServer) -> None:
    result = replay(fetcher_history, apps.fetcher_v1)
    assert result.status == "passed"
    assert server.requests == []


def test_a_diverging_replay_makes_no_requests(fetcher_history: Path, server: CountingServer) -> None:
    result = replay(fetcher_history, apps.fetcher_v2_reordered)
    assert result.status == "diverged" and result.divergence.kind == "command-mismatch"
    assert server.requests == []


def test_orchestration_code_calling_the_network_is_stopped_before_connecting(
    fetcher_history: Path, server: CountingServer
) -> None:
    result = replay(fetcher_history, apps.fetcher_calls_network_directly)
    assert result.status == "diverged"
    assert result.divergence.kind == "nondeterministic-call"
    assert result.divergence.source.line == tagged_line(apps.fetcher_calls_network_directly, "network")
    # urllib raises its own audit event before it makes the socket: the guard names the request.
    assert result.divergence.message.startswith("stopped urllib.Request(), called from orchestration code")
    assert server.requests == []


def test_the_network_works_again_after_replay(fetcher_history: Path, server: CountingServer) -> None:
    replay(fetcher_history, apps.fetcher_calls_network_directly)
    assert apps.http_get(server.url + "/after") == "/after"
    assert server.requests == ["/after"]
