"""Reading one JSON answer from an HTTP server within bounds: ``request_json`` and ``HTTPReadError`` (with
``AnswerTooLargeError`` and ``DeadlineError``), for the importers that ask a server (``import restate`` reads
its admin API). Standard library only (``http.client``); of replaytest it uses only strict JSON and
``fileio``.

An answer is untrusted input, as a history file is: a proxy, another service on the port or a broken server
can send anything. Whatever it sends costs bounded memory and time, and ends in a result or in one line
(``HTTPReadError``) that starts with the URL and says what was wrong:

* **Bytes.** At most ``max_bytes`` of body (the importers pass ``max-history-bytes``, the history size
  limit). The body is read in chunks of 64 KiB; an announced ``Content-Length`` over the limit is refused
  before any of the body is read, and no buffer is ever sized from it. A body that ends before its
  ``Content-Length`` (or its last chunk) is a truncated answer.
* **Time.** One deadline for the whole exchange (connecting, sending, status line, headers, body; and the
  redirects followed), not one per read: a socket's timeout restarts at every read, so a server sending a
  byte a second would never trip it. A watchdog thread shuts the socket down when the deadline passes.
  Resolving the host name is the one step it cannot cut short.
* **Redirects.** Never to another origin (scheme, host and port): refused, naming both. On the same origin
  a 307 or 308 (which keep the method and body) is followed, a 301, 302 or 303 only for a GET (for a POST
  they would turn the request into a GET without its body, so they are refused); at most
  ``MAX_REDIRECTS`` in all.
* **JSON.** UTF-8, parsed by ``strict_json.loads_strict``: nesting depth bounded, no NaN, no duplicate keys.

Proxies are taken from the environment as ``urllib.request`` takes them (``http_proxy``, ``https_proxy``,
``no_proxy``); an ``https://`` URL goes through the proxy in a CONNECT tunnel.
"""

from __future__ import annotations

import base64
import http.client
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from replaytest.fileio import escape_controls
from replaytest.history.strict_json import StrictJSONError, loads_strict

DEFAULT_DEADLINE_SECONDS = 60.0
MAX_REDIRECTS = 5
_CHUNK = 64 * 1024
_DETAIL_BYTES = 500  # of an error status's body, quoted in the message
_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = (301, 302, 303, 307, 308)


class HTTPReadError(Exception):
    """The answer could not be read, or is not strict JSON: one line, starting with the URL."""


class AnswerTooLargeError(HTTPReadError):
    """The answer is (or announces itself as) larger than ``max_bytes``."""


class DeadlineError(HTTPReadError):
    """The answer was not complete within the deadline."""


class _DeadlinePassed(Exception):
    pass


def request_json(
    url: str,
    *,
    max_bytes: int,
    method: str = "GET",
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
) -> Any:
    """The JSON value of the answer to ``method url`` (a 2xx status), read within ``max_bytes`` and
    ``deadline_seconds``; ``HTTPReadError`` for anything else (see the module docstring)."""
    deadline = time.monotonic() + deadline_seconds
    try:
        start = _origin(url, url)
    except ValueError:
        raise HTTPReadError(f"{_shown(url)}: not a URL") from None
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        where = url if current == url else f"{url} (redirected to {current})"
        try:
            status, location, data = _exchange(current, where, method, body, headers or {}, max_bytes, deadline)
        except _DeadlinePassed as passed:
            raise DeadlineError(
                f"{where}: no complete answer within {deadline_seconds:g} s, the deadline for the whole answer{passed}"
            ) from None
        if location is None:
            return _parsed(where, data)
        try:
            target = urljoin(current, location)
            elsewhere = _origin(target, where)
        except ValueError:  # an IPv6 address without its closing bracket
            raise HTTPReadError(
                f"{where}: the server redirects (HTTP {status}) to {_shown(location)}, which is no URL; not followed"
            ) from None
        if elsewhere != start:
            raise HTTPReadError(
                f"{where}: the server redirects (HTTP {status}) to {_shown(target)}, another origin than "
                f"{_origin_text(start)}; not followed: an import reads only from the server it is given"
            )
        if status in (301, 302, 303) and method != "GET":
            raise HTTPReadError(
                f"{where}: the server redirects (HTTP {status}) to {_shown(target)}, which would turn the {method} into "
                "a GET without its body; not followed: give that URL if it is the right one"
            )
        current = target
    raise HTTPReadError(f"{url}: more than {MAX_REDIRECTS} redirects (the last to {_shown(current)}); not followed")


def _exchange(
    url: str, where: str, method: str, body: bytes | None, headers: Mapping[str, str], max_bytes: int, deadline: float
) -> tuple[int, str | None, bytearray]:
    """One request: (status, the redirect's Location or None, the body of a 2xx answer)."""
    parts = urlsplit(url)
    watchdog = _Watchdog(deadline)
    connection = None
    try:
        sock, target, proxy_headers = _connect(parts, watchdog)
        # The socket is ours (connected, and for https wrapped, under the watchdog); http.client only
        # speaks HTTP on it, so the host given here is never connected to (the Host header is set below).
        connection = http.client.HTTPConnection("localhost", timeout=watchdog.remaining())
        connection.sock = sock
        sent = {**headers, "Host": parts.netloc.rpartition("@")[2], **proxy_headers}
        connection.request(method, target, body=body, headers=sent)
        watchdog.check()
        response = connection.getresponse()
        watchdog.check()
        location = response.getheader("location")
        if response.status in _REDIRECTS and location:
            return response.status, location, bytearray()
        if not 200 <= response.status < 300:
            detail = response.read(_DETAIL_BYTES).decode("utf-8", "replace").strip()
            watchdog.check()
            said = f": {detail}" if detail else (f" {response.reason}" if response.reason else "")
            raise HTTPReadError(f"{where}: HTTP {response.status}{_one_line(said)}")
        return response.status, None, _read_body(response, where, max_bytes, watchdog)
    except (OSError, http.client.HTTPException, ValueError) as error:
        if isinstance(error, TimeoutError):  # each read's timeout is what was left of the deadline
            raise _DeadlinePassed(watchdog.progress()) from None
        watchdog.check()
        raise HTTPReadError(f"{where}: {_failure(error, parts.hostname)}{watchdog.progress()}") from None
    finally:
        watchdog.cancel()
        if connection is not None:
            connection.close()


def _read_body(response: http.client.HTTPResponse, where: str, max_bytes: int, watchdog: _Watchdog) -> bytearray:
    chunked = "chunked" in (response.getheader("transfer-encoding") or "").lower()
    announced_text = (response.getheader("content-length") or "").strip()
    announced = int(announced_text) if announced_text.isdigit() and not chunked else None
    if announced is not None and announced > max_bytes:
        raise AnswerTooLargeError(
            f"{where}: the answer announces {announced:,} bytes (Content-Length), more than the limit of "
            f"{max_bytes:,} bytes; not read"
        )
    data = bytearray()
    while True:
        # read1: what one receive gives, so the checks below run as the bytes come.
        chunk = response.read1(_CHUNK)
        watchdog.check()
        if not chunk:
            break
        data += chunk
        watchdog.received = len(data)
        if len(data) > max_bytes:
            raise AnswerTooLargeError(
                f"{where}: the answer is more than the limit of {max_bytes:,} bytes; reading stopped there"
            )
    if announced is not None and len(data) < announced:
        raise HTTPReadError(f"{where}: the answer ended after {len(data):,} of the {announced:,} bytes it announced (truncated)")
    return data


def _parsed(where: str, data: bytearray) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise HTTPReadError(f"{where}: the answer is not JSON: byte {error.start} is not UTF-8 ({error.reason})") from None
    data.clear()  # the bytes are text now; the parse needs room for the values
    try:
        return loads_strict(text)
    except StrictJSONError as error:
        at = f" at {error.json_path}" if error.json_path else ""
        raise HTTPReadError(f"{where}: the answer is not JSON replaytest accepts ({_one_line(error.message)}{at})") from None


# --- connecting ---------------------------------------------------------------------------------------


def _connect(parts: Any, watchdog: _Watchdog) -> tuple[socket.socket, str, dict[str, str]]:
    """A socket speaking to the URL's server (through the environment's proxy for its scheme, if any; TLS
    for https), watched from its first moment; the request target to send on it and the headers the proxy
    needs."""
    import urllib.request  # here: only a read of a server pays for it

    scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    if scheme not in _DEFAULT_PORTS or not host:
        raise ValueError("not an http:// or https:// URL with a host")
    port = port or _DEFAULT_PORTS[scheme]
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(f"{host}:{port}"):
        return _secured(watchdog.connect(host, port), scheme, host, watchdog), target, {}
    proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    proxy_headers = {}
    if proxy_parts.username is not None:
        credentials = f"{unquote(proxy_parts.username)}:{unquote(proxy_parts.password or '')}"
        proxy_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials.encode("utf-8")).decode("ascii")
    sock = watchdog.connect(proxy_parts.hostname or "", proxy_parts.port or 80)
    if scheme == "http":  # a plain HTTP proxy takes the whole URL as the request target
        return sock, f"{scheme}://{parts.netloc.rpartition('@')[2]}{target}", proxy_headers
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}", *(f"{k}: {v}" for k, v in proxy_headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    reply = http.client.HTTPResponse(sock, method="CONNECT")
    reply.begin()  # the proxy sends nothing after its reply until the TLS handshake starts
    watchdog.check()
    if reply.status != 200:
        raise ValueError(f"the proxy {proxy_parts.hostname}:{proxy_parts.port or 80} refused the tunnel: HTTP {reply.status} {reply.reason}")
    return _secured(sock, scheme, host, watchdog), target, {}


def _secured(sock: socket.socket, scheme: str, host: str, watchdog: _Watchdog) -> socket.socket:
    """The socket as it is for ``scheme``: wrapped in TLS (certificate and host name verified) for https."""
    if scheme != "https":
        return sock
    import ssl

    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    secured = context.wrap_socket(sock, server_hostname=host)
    watchdog.watch(secured)
    return secured


class _Watchdog:
    """Ends the exchange at the deadline: shuts the socket down then (a blocked read returns at once) and
    keeps each read's own timeout within what is left."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.received = 0  # bytes of the body so far, for the message
        self.passed = False
        self._socket: socket.socket | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed("")
        return left

    def connect(self, host: str, port: int) -> socket.socket:
        """A TCP connection to ``host:port``, bounded by what is left of the deadline and watched from now."""
        sock = socket.create_connection((host, port), timeout=self.remaining())
        self.watch(sock)
        return sock

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socket = sock
            if self._timer is None:
                self._timer = threading.Timer(max(self.deadline - time.monotonic(), 0), self._shut)
                self._timer.daemon = True
                self._timer.start()

    def _shut(self) -> None:
        with self._lock:
            self.passed = True
            if self._socket is not None:
                try:
                    self._socket.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def progress(self) -> str:
        """How far the body came, for a message."""
        return f" (after {self.received:,} bytes of the body)" if self.received else ""

    def check(self) -> None:
        """``_DeadlinePassed`` once the deadline has passed; else the next read's timeout is what is left."""
        left = self.deadline - time.monotonic()
        if self.passed or left <= 0:
            raise _DeadlinePassed(self.progress())
        if self._socket is not None:
            try:
                self._socket.settimeout(left)
            except OSError:
                pass

    def cancel(self) -> None:
        """Stop watching and close the socket (the exchange is over, whichever way it ended)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            if self._socket is not None:
                self._socket.close()
            self._socket = None


# --- messages -------------------------------------------------------------------------------------------


def _origin(url: str, where: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, the default port filled in; ``ValueError`` for a host that is no URL's."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise HTTPReadError(f"{where}: {_shown(url)} has no valid port") from None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme, 0)


def _origin_text(origin: tuple[str, str, int]) -> str:
    scheme, host, port = origin
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def _shown(url: str) -> str:
    return _one_line(url[:300])


def _one_line(text: str) -> str:
    return escape_controls(text)


def _failure(error: BaseException, host: str | None) -> str:
    """What went wrong, for one of the exceptions the exchange can raise."""
    if isinstance(error, http.client.IncompleteRead):  # also a chunk size that is no number
        return "the answer ended before its end (truncated, or its chunked encoding is broken)"
    if isinstance(error, http.client.RemoteDisconnected):
        return "the server closed the connection without an answer"
    if isinstance(error, http.client.BadStatusLine):
        return f"the answer is not HTTP (its first line is {_one_line(repr(str(error)[:80]))})"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve {host!r}: {error.strerror or error}"
    if isinstance(error, http.client.HTTPException):
        return f"the answer is not valid HTTP ({type(error).__name__}: {_one_line(str(error)[:200])})"
    if isinstance(error, OSError):
        return _one_line(str(error.strerror or error))
    return _one_line(str(error)[:200])
