"""A real, throwaway Postgres server for the tests: ``start_postgres`` runs ``initdb`` into a temporary folder
and ``pg_ctl start`` on 127.0.0.1 on a free port (its unix socket in that folder, trust authentication for
the superuser role ``replaytest``); ``PostgresServer.stop`` stops it with ``pg_ctl stop`` and removes the
folder. ``find_postgres_binaries`` looks for Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``,
newest first) and then on PATH; ``PostgresMissing`` says what to install when there is none.

``initdb`` refuses to run as root, so as root every server command runs as the ``postgres`` system user
(which Debian's package creates) on a folder that user owns."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEBIAN_VERSIONS = Path("/usr/lib/postgresql")
ROLE = "replaytest"
SERVER_USER = "postgres"  # the system user Debian's postgresql package creates
INSTALL_HINT = (
    "install Debian's postgresql package (as root: DEBIAN_FRONTEND=noninteractive apt-get install -y "
    "--no-install-recommends postgresql); .ci/run installs it when initdb is missing"
)
_START_ATTEMPTS = 3  # a free port can be taken by another process between choosing it and the server binding it


class PostgresMissing(Exception):
    """No usable Postgres server binaries (or no system user to run them as root)."""


class PostgresFailed(Exception):
    """initdb or pg_ctl failed; the message holds its output and the server log."""


def _version_key(folder: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", folder.name)) or (0,)


def find_postgres_binaries() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``: Debian's newest version, else the ones on PATH."""
    if DEBIAN_VERSIONS.is_dir():
        for version in sorted(DEBIAN_VERSIONS.iterdir(), key=_version_key, reverse=True):
            binaries = version / "bin"
            if (binaries / "initdb").is_file() and (binaries / "pg_ctl").is_file():
                return binaries
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        # A link on PATH is followed to the folder the binaries live in, where pg_ctl must sit beside initdb.
        binaries = Path(initdb).resolve().parent
        if (binaries / "pg_ctl").is_file():
            return binaries
    raise PostgresMissing(
        f"the Postgres tests (DBOS, LangGraph) need a Postgres server: no initdb and pg_ctl in {DEBIAN_VERSIONS}/<version>/bin "
        f"nor on PATH; {INSTALL_HINT}"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    binaries: Path
    folder: Path  # data folder, socket folder and log inside; removed by stop()
    port: int
    as_server_user: bool  # True when running as root: commands run as the postgres system user

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def sockets(self) -> Path:
        return self.folder / "sockets"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def url(self, database: str) -> str:
        """A URL as a DBOS application (or ``replaytest import dbos``) is given it; the database need not
        exist yet (DBOS creates its system database)."""
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database (for an application's own data: DBOS creates only its system database); its URL."""
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE, name)
        return self.url(name)

    def command(self, program: str, *args: str) -> list[str]:
        command = [str(self.binaries / program), *args]
        return ["runuser", "-u", SERVER_USER, "--", *command] if self.as_server_user else command

    def run(self, program: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.command(program, *args), capture_output=True, text=True, timeout=timeout, cwd=self.folder)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else "(no server log)"
            output = result.stdout + result.stderr
            raise PostgresFailed(f"{program} {' '.join(args)} exited {result.returncode}:\n{output}\nserver log:\n{log}")
        return result

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -F"  # -F: no fsync, a test server
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def stop(self) -> None:
        """Stop the server (if it runs) and remove its folder."""
        try:
            if self.running():
                self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """A fresh cluster, started; the caller must ``stop()`` it. Raises PostgresMissing or PostgresFailed."""
    binaries = find_postgres_binaries()
    as_server_user = os.geteuid() == 0
    # Not below pytest's temporary folder: as root that one is private to root, and the server user must reach it.
    folder = Path(tempfile.mkdtemp(prefix="replaytest-postgres-"))
    if as_server_user:
        try:
            owner = pwd.getpwnam(SERVER_USER)
        except KeyError:
            shutil.rmtree(folder)
            raise PostgresMissing(
                f"initdb refuses to run as root and there is no {SERVER_USER!r} system user to run it as; {INSTALL_HINT}"
            ) from None
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    server = PostgresServer(binaries, folder, _free_port(), as_server_user)
    try:
        server.run("initdb", "-D", str(server.data), "-U", ROLE, "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync")
        if as_server_user:
            subprocess.run(["runuser", "-u", SERVER_USER, "--", "mkdir", str(server.sockets)], check=True)
        else:
            server.sockets.mkdir()
        for attempt in range(1, _START_ATTEMPTS + 1):
            try:
                server.start()
                break
            except PostgresFailed:
                if attempt == _START_ATTEMPTS or "could not bind" not in server.log.read_text(errors="replace"):
                    raise
                server.port = _free_port()
    except BaseException:
        server.stop()
        raise
    return server
