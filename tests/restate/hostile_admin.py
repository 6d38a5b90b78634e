"""A stand-in Restate admin API on 127.0.0.1 that answers as told, down to the bytes on the socket: valid rows of
three small invocations (``valid_answer``), or any hostile answer (a never-ending body, a lying Content-Length,
a trickle, a redirect, random bytes). Used by ``test_import_bounded.py``, ``tests/test_fuzz_hostile.py`` and
``benchmarks/fuzz_histories.py``.

An answer is a function ``answer(sql, out)`` that writes the whole HTTP response with ``out.write``; the
server counts what it wrote (``sent``) and what it was asked (``requests``), and stops writing when the
client goes away."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from replaytest.plugins.restate import values


class Gone(Exception):
    """The client closed the connection (or the server is stopping): stop writing."""


class Out:
    """The response stream of one request: counts the bytes written, raises ``Gone`` once the client left."""

    def __init__(self, sock: socket.socket, server: HostileAdmin) -> None:
        self.sock = sock
        self.server = server

    def write(self, data: bytes) -> None:
        if self.server.stopping.is_set():
            raise Gone()
        try:
            self.sock.sendall(data)
        except OSError:
            raise Gone() from None
        with self.server.lock:
            self.server.sent += len(data)

    def sleep(self, seconds: float) -> None:
        if self.server.stopping.wait(seconds):
            raise Gone()


Answer = Callable[[str, Out], None]


class HostileAdmin:
    """The server; ``answer`` is what it answers every request with (settable between requests)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[str] = []  # the SQL of each request, in order
        self.heads: list[str] = []  # the request line and headers of each request
        self.sent = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        admin = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                sock.settimeout(10)
                try:
                    head, sql = _read_request(sock)
                except (OSError, ValueError):
                    return
                with admin.lock:
                    admin.requests.append(sql)
                    admin.heads.append(head)
                try:
                    admin.answer(sql, Out(sock, admin))
                except Gone:
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> HostileAdmin:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.thread.join(timeout=10)
        self.server.server_close()


@contextmanager
def hostile_admin(answer: Answer) -> Iterator[HostileAdmin]:
    admin = HostileAdmin(answer).start()
    try:
        yield admin
    finally:
        admin.stop()


def _read_request(sock: socket.socket) -> tuple[str, str]:
    """The head (request line and headers) and the SQL of one ``POST /query``, the whole request read."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("no request")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    try:
        sql = str(json.loads(body).get("query", ""))
    except (ValueError, AttributeError):
        sql = ""
    return head.decode("latin-1"), sql


# --- answers ----------------------------------------------------------------------------------------------


def response(status: int, body: bytes, headers: dict[str, str] | None = None, *, length: bool = True) -> bytes:
    """The bytes of a whole HTTP/1.1 response (``Connection: close``; Content-Length unless ``length`` is
    False or ``headers`` gives one)."""
    given = {name.lower(): value for name, value in (headers or {}).items()}
    if length and "content-length" not in given:
        given["content-length"] = str(len(body))
    given.setdefault("content-type", "application/json")
    given["connection"] = "close"
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{name}: {value}\r\n" for name, value in given.items()) + "\r\n"
    return head.encode("latin-1") + body


def fixed(status: int, body: bytes, headers: dict[str, str] | None = None, *, length: bool = True) -> Answer:
    """The same response to every request."""
    return lambda sql, out: out.write(response(status, body, headers, length=length))


_ROWS = b'{"rows": ['
_ROW = b'{"id": "inv_1"}, ' * 4000


def never_ending(give_up_after: int | None = None) -> Answer:
    """A 200 without Content-Length whose body never ends: rows, one after another, until the client leaves
    (or, with ``give_up_after``, until that many bytes were written: a client without a limit then finds
    the answer is not JSON instead of running out of memory)."""

    def answer(sql: str, out: Out) -> None:
        out.write(response(200, b"", length=False))
        out.write(_ROWS)
        written = len(_ROWS)
        while give_up_after is None or written < give_up_after:
            out.write(_ROW)
            written += len(_ROW)

    return answer


def announced(length: int, body: bytes = b'{"rows": []}') -> Answer:
    """A Content-Length of ``length`` bytes whatever the body is; the connection stays open a while after it."""

    def answer(sql: str, out: Out) -> None:
        out.write(response(200, body, {"content-length": str(length)}))
        out.sleep(30)

    return answer


def trickle(body: bytes, every: float, *, head_at_once: bool = False) -> Answer:
    """A valid answer, one byte every ``every`` seconds (with ``head_at_once``, the status line and headers
    at once and then the body byte by byte)."""

    def answer(sql: str, out: Out) -> None:
        whole = response(200, body)
        start = len(whole) - len(body) if head_at_once else 0
        out.write(whole[:start])
        for byte in whole[start:]:
            out.write(bytes([byte]))
            out.sleep(every)

    return answer


def truncated(announced_length: int, body: bytes) -> Answer:
    """A Content-Length of ``announced_length`` and then only ``body``, the connection closed after it."""
    return fixed(200, body, {"content-length": str(announced_length)})


def redirect(status: int, location: str) -> Answer:
    return fixed(status, b"", {"location": location})


def invocation_rows() -> list[dict[str, Any]]:
    """Three completed invocations of ``orders/place``, as ``sys_invocation`` gives them."""
    return [
        {"id": f"inv_{number}", "target_service_name": "orders", "target_handler_name": "place", "target_service_key": None,
         "status": "completed", "completion_result": "success", "completion_failure": None, "journal_size": 4,
         "created_at": f"2026-03-01T09:00:0{number}Z", "pinned_deployment_id": "dp_1"}
        for number in (1, 2, 3)
    ]


def _value(number: int, payload: Any) -> bytes:
    return values.length_field(number, values.length_field(1, json.dumps(payload).encode("utf-8")))


def journal_rows() -> list[dict[str, Any]]:
    """Each invocation's journal as ``sys_journal`` gives it: input, one ``ctx.run`` and its result, output."""
    rows = []
    for invocation in invocation_rows():
        entries = [
            ("Command: Input", _value(14, {"item": "lamp"})),
            ("Command: Run", values.length_field(12, b"check_stock")),
            ("Notification: Run", _value(5, True)),
            ("Command: Output", _value(14, "shipped")),
        ]
        rows.extend({"id": invocation["id"], "index": index, "entry_type": kind, "raw": raw.hex()}
                    for index, (kind, raw) in enumerate(entries))
    return rows


def valid_rows(sql: str) -> list[dict[str, Any]]:
    """What the admin API answers ``sql`` with: the journal rows for a ``sys_journal`` query, else the invocations."""
    return journal_rows() if "sys_journal" in sql else invocation_rows()


def valid_answer(sql: str, out: Out) -> None:
    out.write(response(200, json.dumps({"rows": valid_rows(sql)}).encode("utf-8")))


def slow_start(seconds: float, then: Answer) -> Answer:
    """``then``, after ``seconds`` of silence."""

    def answer(sql: str, out: Out) -> None:
        out.sleep(seconds)
        then(sql, out)

    return answer
