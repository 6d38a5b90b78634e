"""Every route around the replay guards found by the hostile-input round, replayed on the journal runtime,
on DBOS and on LangGraph: each is stopped at its line, reported as a stopped effect, and leaves no mark.

The runs are recorded for real with the effects switched off (``escape_app``), then replayed in a fresh
process with them on (``ESCAPES_ACTIVE=1``), so each run reaches one effect between two recorded steps.
Had an effect happened, it would have left a mark: a file or folder under the target, bytes at the
test's TCP or UDP server, a row in the database the app opened at import, a file mode changed."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import save_history
from replaytest.journal import Journal, Timing, Worker

HERE = Path(__file__).resolve().parent
MOVES = HERE / "escape_app" / "moves.py"

# effect -> the call the report names: the patched name where there is one at the call, else the audit event.
ESCAPES = {
    "multiprocessing-spawn": "multiprocessing.Process.start",
    "posix-system": "os.system",
    "io-FileIO": "open",
    "_io-open": "open",
    "shelve": "dbm.open",
    "dbm-dumb": "open",
    "atexit": "atexit.register",
    "socket-sendall": "socket.sendall",
    "socket-send": "socket.send",
    "socket-sendto": "socket.sendto",
    "http-keep-alive": "http.client.send",
    "unwrap-open": "open",
    "sqlite-import-connection": "sqlite3.Connection.execute",
    "sqlite-connect": "sqlite3.connect",
    "thread-start": "threading.Thread.start",
    "executor-submit": "concurrent.futures.ThreadPoolExecutor.submit",
    "ctypes": "ctypes.dlopen",
    "chmod": "os.chmod",
    "logging-FileHandler": "open",
    "signal": "signal.signal",
}
RUNTIMES = ("journal", "dbos", "langgraph")


def tagged_line(tag: str) -> int:
    [number] = [n for n, line in enumerate(MOVES.read_text().splitlines(), 1) if line.rstrip().endswith(f"# [{tag}]")]
    return number


class Listeners:
    """A TCP server keeping every byte each connection sends, and a bound UDP socket."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.received: list[bytes] = []
        self.readers: list[threading.Thread] = []
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    @property
    def ports(self) -> dict[str, str]:
        return {"ESCAPE_TCP_PORT": str(self.tcp.getsockname()[1]), "ESCAPE_UDP_PORT": str(self.udp.getsockname()[1])}

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.tcp.accept()
            except OSError:
                return
            reader = threading.Thread(target=self._read, args=(connection,), daemon=True)
            self.readers.append(reader)
            reader.start()

    def _read(self, connection: socket.socket) -> None:
        with connection:
            while chunk := connection.recv(65536):
                self.received.append(chunk)

    def marks(self) -> list[bytes]:
        """Everything that reached either listener (the replay process has ended: its connections closed)."""
        for reader in self.readers:
            reader.join(timeout=30)
        self.udp.setblocking(False)
        datagrams = []
        try:
            while True:
                datagrams.append(self.udp.recv(65536))
        except BlockingIOError:
            pass
        return self.received + datagrams

    def close(self) -> None:
        # shutdown wakes the blocked accept (close alone does not on Linux): no thread outlives the test,
        # which would keep other tests in this process from forking.
        try:
            self.tcp.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.tcp.close()
        self.acceptor.join(timeout=30)
        assert not self.acceptor.is_alive()
        self.udp.close()


@dataclass(frozen=True)
class Replayed:
    results: dict[str, dict[str, Any]]  # effect name -> its run's result
    target: Path
    marks_on_the_network: list[bytes]


def record_journal(directory: Path) -> tuple[Path, str]:
    from escape_app.journal_flow import escape_flow

    histories = directory / "histories"
    histories.mkdir()
    with Journal(directory / "journal.sqlite3") as journal:
        worker = Worker(journal, [escape_flow], timing=Timing(sleep=lambda seconds: None))
        for name in ESCAPES:
            run_id = journal.start(escape_flow, name, run_id=f"escape-{name}", workflow_id=f"escape-{name}")
            while worker.run_until_idle():
                pass
            save_history(journal.export(run_id), histories / f"escape-{name}.json")
    return histories, "escape_app.journal_flow:escape_flow"


def record_dbos(directory: Path) -> tuple[Path, str]:
    system_db = directory / "system.sqlite3"
    run = subprocess.run([sys.executable, str(HERE / "record_dbos.py"), str(system_db), *ESCAPES],
                         capture_output=True, text=True, timeout=300, cwd=directory)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    histories = directory / "histories"
    imported = CliRunner().invoke(
        cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--name", "escape_flow", "--out", str(histories)]
    )
    assert imported.exit_code == 0, imported.output
    return histories, "escape_app.dbos_replay:CONFIG"


def record_langgraph(directory: Path) -> tuple[Path, str]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from escape_app.graph_flow import escape_graph

    db = directory / "checkpoints.sqlite"
    connection = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = escape_graph.copy(update={"checkpointer": SqliteSaver(connection)})
        for name in ESCAPES:
            assert graph.invoke(name, {"configurable": {"thread_id": f"escape-{name}"}}) == name
    finally:
        connection.close()
    histories = directory / "histories"
    spec = "escape_app.graph_flow:escape_graph"
    imported = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(histories), "--workflows", spec])
    assert imported.exit_code == 0, imported.output
    return histories, spec


RECORDERS = {"journal": record_journal, "dbos": record_dbos, "langgraph": record_langgraph}


@pytest.fixture(scope="module", params=RUNTIMES)
def replayed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replayed]:
    runtime: str = request.param
    directory = tmp_path_factory.mktemp(f"escapes-{runtime}")
    histories, spec = RECORDERS[runtime](directory)
    target = directory / "target"
    target.mkdir()
    listeners = Listeners()
    try:
        environment = {**os.environ, "ESCAPES_ACTIVE": "1", "ESCAPE_TARGET": str(target), **listeners.ports}
        run = subprocess.run(
            [sys.executable, "-m", "replaytest", "replay", str(histories), "--workflows", spec, "--format", "json"],
            capture_output=True, text=True, timeout=300, cwd=HERE, env=environment,
        )  # fmt: skip
        assert run.returncode == 1, run.stdout + run.stderr
        report = json.loads(run.stdout)
        results = {}
        for result in report["results"]:
            [name] = [name for name in ESCAPES if Path(result["history"]).stem.endswith(f"escape-{name}")]
            results[name] = result
        assert sorted(results) == sorted(ESCAPES)
        yield Replayed(results, target, listeners.marks())
    finally:
        listeners.close()


@pytest.mark.parametrize("name", list(ESCAPES))
def test_the_effect_is_stopped_and_reported_at_its_line(replayed: Replayed, name: str) -> None:
    result = replayed.results[name]
    assert result["status"] == "diverged"
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call"
    assert divergence["message"].startswith(f"stopped {ESCAPES[name]}(), called from orchestration code during replay")
    assert (Path(divergence["source"]["path"]).name, divergence["source"]["line"]) == ("moves.py", tagged_line(name))


def test_no_effect_left_a_mark(replayed: Replayed) -> None:
    left = sorted(path.name for path in replayed.target.iterdir())
    assert left == ["app.db", "mode.txt"]  # what the app made at import, before the replay
    assert replayed.marks_on_the_network == []
    with sqlite3.connect(replayed.target / "app.db") as db:
        assert db.execute("SELECT count(*) FROM refunds").fetchone() == (0,)
    assert (replayed.target / "mode.txt").stat().st_mode & 0o777 == 0o644
