"""``import restate`` against an admin endpoint that answers badly (a stand-in HTTP server on 127.0.0.1, as a
proxy or another service on the port would): a clear error naming the URL and what is wrong, never a crash."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

_TIMEOUT = 60


@pytest.fixture
def admin_answering() -> Iterator[object]:
    answers: dict[str, tuple[int, bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            self.rfile.read(int(self.headers.get("content-length", "0")))
            status, body = answers["next"]
            self.send_response(status)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()

    def answer(status: int, body: bytes) -> str:
        answers["next"] = (status, body)
        return f"http://127.0.0.1:{server.server_address[1]}"

    try:
        yield answer
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


def _import(url: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "restate", "--admin-url", url, "--out", str(out)],
        capture_output=True, text=True, timeout=_TIMEOUT,
    )


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (200, b"<html>not the admin API</html>", "the answer is not JSON"),
        (200, b'{"rows": {"id": 1}}', "no list of rows at $.rows"),
        (500, b"query failed: no table sys_invocation", "HTTP 500: query failed: no table sys_invocation"),
    ],
)
def test_a_bad_answer_is_an_error_naming_the_endpoint(admin_answering, tmp_path: Path, status: int, body: bytes, said: str) -> None:  # type: ignore[no-untyped-def]
    url = admin_answering(status, body)
    completed = _import(url, tmp_path / "out")
    assert completed.returncode == 2, completed.stderr
    assert f"{url}/query" in completed.stderr and said in completed.stderr
    assert "Traceback" not in completed.stderr


def test_a_journal_row_whose_raw_entry_is_not_hex_refuses_that_invocation(admin_answering, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The same answer serves both queries: one invocation row that also reads as its own journal row.
    row = (
        b'{"rows": [{"id": "inv_1", "target_service_name": "orders", "target_handler_name": "place", "status": "completed",'
        b' "index": 0, "entry_type": "Command: Input", "raw": "zz"}]}'
    )
    url = admin_answering(200, row)
    completed = _import(url, tmp_path / "out")
    assert completed.returncode == 2
    assert "refused: invocation inv_1 (orders/place): journal entry 0 (Command: Input)" in completed.stderr
    assert list((tmp_path / "out").glob("*.json")) == []
