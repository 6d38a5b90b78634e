"""A real Restate server and the order desk (``restate_shop``) served to it, both on 127.0.0.1, for recording.

``running_desk(folder)`` starts ``restate-server`` 1.7.12 (from npm, ``npm_tools``) with free ports and a data
directory in ``folder``, serves ``restate_shop.orders:app`` with hypercorn, registers it through the admin
API and stops both on leaving; ``record(folder)`` runs the invocations the tests replay in it and imports
them with ``replaytest import restate``. Every wait is bounded by time."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from npm_tools import npm_tool  # noqa: E402

SERVER_PACKAGE, SERVER_VERSION = "@restatedev/restate-server", "1.7.12"
_START_SECONDS = 90
_WAIT_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http(method: str, url: str, body: Any = None, timeout: float = 30) -> Any:
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json", "accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        text = response.read()
    return json.loads(text) if text else None


def _wait_until(what: str, probe: Any, seconds: float, log: Path | None = None) -> Any:
    deadline = time.monotonic() + seconds
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except (OSError, urllib.error.URLError, ValueError) as error:
            last = error
        time.sleep(0.25)
    tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
    raise TimeoutError(f"{what} not within {seconds}s (last error: {last})\n{tail}")


@dataclass
class Recording:
    histories: Path
    marker: Path  # what the step bodies wrote while recording
    ids: dict[str, str] = field(default_factory=dict)  # role -> invocation id
    completed_answer: Any = None  # what the ingress answered the completed invocation's caller
    import_output: str = ""
    digit_key: Path | None = None  # the "digit key" order imported as recorded (``--no-redact``)
    digit_key_redacted: Path | None = None  # the same order imported with the default redaction
    draws: Path | None = None  # the lottery draws (``ctx.random()``), each imported as recorded
    draws_redacted: Path | None = None  # the same draws imported with the default redaction


# An order for a customer whose key is digits between underscores. The key is part of the ledger call's
# protocol message, kept as hex in the journal entry's ``rest``: its hex is a run of 15 decimal digits
# (``DIGIT_RUN``, "_" being 5f) that passes the Luhn check: on its own, redaction's card-number rule takes it
# for a card number. The order carries the same digits as a payload value (``ref``).
DIGIT_KEY = "_1000001_"
DIGIT_RUN = DIGIT_KEY[1:-1].encode("ascii").hex() + "5"


class _Processes:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str], log: Path, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[bytes]:
        handle = open(log, "wb")
        process = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        handle.close()
        self.started.append(process)
        return process

    def stop(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)


@dataclass
class Desk:
    admin: str
    ingress: str
    marker: Path


@contextmanager
def running_desk(folder: Path, app: str = "restate_shop.orders:app", warmup: tuple[str, Any] = ("pricing/quote", "warmup"),
                 server_env: dict[str, str] | None = None) -> Iterator[Desk]:
    """A Restate server with the order desk (or another ``module:app`` of this folder) registered, both
    stopped on leaving; ``warmup`` is a (target, body) the ingress must answer before recording starts;
    ``server_env`` adds to the server's environment (an experimental feature switched on)."""
    server = npm_tool(SERVER_PACKAGE, SERVER_VERSION, "restate-server")
    admin_port, ingress_port, node_port, app_port = free_port(), free_port(), free_port(), free_port()
    admin, ingress = f"http://127.0.0.1:{admin_port}", f"http://127.0.0.1:{ingress_port}"
    marker = folder / "recorded-steps.txt"
    processes = _Processes(folder)
    server_log = folder / "restate-server.log"
    env = {
        **os.environ,
        "RESTATE_ADMIN__BIND_ADDRESS": f"127.0.0.1:{admin_port}",
        "RESTATE_INGRESS__BIND_ADDRESS": f"127.0.0.1:{ingress_port}",
        "RESTATE_BIND_ADDRESS": f"127.0.0.1:{node_port}",
        "RESTATE_ADVERTISED_ADDRESS": f"http://127.0.0.1:{node_port}",
        "RESTATE_LISTEN_MODE": "tcp",
        "RESTATE_DEFAULT_NUM_PARTITIONS": "2",
        "RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE": "256MB",
        "RESTATE_DISABLE_TELEMETRY": "true",
        "RESTATE_ADMIN__DISABLE_WEB_UI": "true",
        **(server_env or {}),
    }
    try:
        processes.start([str(server), "--no-logo", "--base-dir", str(folder / "restate-data"), "--node-name", "replaytest"], server_log, env)
        _wait_until("the Restate admin API", lambda: http("GET", f"{admin}/health", timeout=5) or True, _START_SECONDS, server_log)
        app_log = folder / "order-desk.log"
        app_env = {**os.environ, "RESTATE_SHOP_MARKER": str(marker)}
        processes.start(
            [sys.executable, "-m", "hypercorn", app, "--bind", f"127.0.0.1:{app_port}"], app_log, app_env, cwd=HERE
        )
        _wait_until(
            "the order desk's deployment registration",
            lambda: http("POST", f"{admin}/deployments", {"uri": f"http://127.0.0.1:{app_port}"}, timeout=10),
            _START_SECONDS,
            app_log,
        )
        if app == "restate_shop.orders:app":
            http("PATCH", f"{admin}/services/receipts", {"journal_retention": "0s"})
        target, body = warmup
        _wait_until("the ingress", lambda: http("POST", f"{ingress}/{target}", body, timeout=10), _START_SECONDS, server_log)
        yield Desk(admin, ingress, marker)
    finally:
        processes.stop()


def record(folder: Path) -> Recording:
    with running_desk(folder) as desk:
        admin, ingress = desk.admin, desk.ingress
        recording = Recording(folder / "histories", desk.marker)
        recording.ids["completed"], recording.completed_answer = call(ingress, "orders/place", {"item": "lamp", "customer": "ann"})
        recording.ids["approved"] = send(ingress, "orders/place", {"item": "desk", "customer": "bob", "approval": True})
        recording.ids["suspended"] = send(ingress, "orders/place", {"item": "sofa", "customer": "cat", "approval": True})
        recording.ids["failed"] = send(ingress, "orders/cancel", {"item": "chair"})
        recording.ids["discarded"] = send(ingress, "receipts/issue", 12)
        recording.ids["retrying"] = send(ingress, "orders/restock", {"item": "lamp"})
        recording.ids["signed up"] = send(ingress, "signup/ann/register", "ann@example.com")
        recording.ids["waiting signup"] = send(ingress, "signup/bob/register", "bob@example.com")
        for role in ("approved", "suspended"):
            wait_for_status(admin, recording.ids[role], "suspended")
        awakeable = step_result(admin, recording.ids["approved"], "announce")
        http("POST", f"{ingress}/restate/awakeables/{awakeable}/resolve", "approved by clerk")
        for role in ("approved", "failed", "discarded"):
            wait_for_status(admin, recording.ids[role], "completed")
        wait_for_status(admin, recording.ids["retrying"], "backing-off")
        for role in ("signed up", "waiting signup"):
            wait_for_status(admin, recording.ids[role], "suspended")
        recording.ids["confirm"], _ = call(ingress, "signup/ann/confirm", "4711")
        wait_for_status(admin, recording.ids["signed up"], "completed")
        recording.import_output = import_histories(admin, recording.histories, "--service", "orders")
        recording.import_output += import_histories(admin, recording.histories, "--service", "ledger")
        recording.import_output += import_histories(admin, recording.histories, "--service", "signup")
        recording.import_output += import_histories(admin, folder / "receipts", "--service", "receipts")
        # The selections, while the server still runs.
        import_histories(admin, folder / "one", "--invocation", recording.ids["completed"])
        import_histories(admin, folder / "suspended-only", "--status", "suspended")
        import_histories(admin, folder / "cancel-only", "--service", "orders", "--handler", "cancel")
        # After the imports above, which it must not join: they are counted by other tests.
        recording.ids["digit key"], _ = call(ingress, "orders/place", {"item": "lamp", "customer": DIGIT_KEY, "ref": DIGIT_RUN})
        wait_for_status(admin, recording.ids["digit key"], "completed")
        import_histories(admin, folder / "digit-key", "--invocation", recording.ids["digit key"])
        import_histories(admin, folder / "digit-key-redacted", "--invocation", recording.ids["digit key"], redact=True)
        for player in ("ann", "bob", "cat", "dan"):
            recording.ids[f"draw {player}"], _ = call(ingress, "lottery/draw", player)
        recording.draws, recording.draws_redacted = folder / "draws", folder / "draws-redacted"
        import_histories(admin, recording.draws, "--service", "lottery")
        import_histories(admin, recording.draws_redacted, "--service", "lottery", redact=True)
        recording.digit_key = folder / "digit-key" / f"{recording.ids['digit key']}.json"
        recording.digit_key_redacted = folder / "digit-key-redacted" / f"{recording.ids['digit key']}.json"
        return recording


def call(ingress: str, target: str, body: Any) -> tuple[str, Any]:
    request = urllib.request.Request(
        f"{ingress}/{target}", data=json.dumps(body).encode("utf-8"), method="POST", headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=_WAIT_SECONDS) as response:
        text = response.read()
        answer = json.loads(text) if text else None
        invocation_id = response.headers.get("x-restate-id")
    if not invocation_id:
        raise AssertionError(f"no x-restate-id header in the answer to {target}")
    return str(invocation_id), answer


def send(ingress: str, target: str, body: Any) -> str:
    answer = http("POST", f"{ingress}/{target}/send", body)
    return str(answer["invocationId"])


def query(admin: str, sql: str) -> list[dict[str, Any]]:
    return list(http("POST", f"{admin}/query", {"query": sql})["rows"])


def wait_for_status(admin: str, invocation_id: str, status: str) -> None:
    def probe() -> bool:
        rows = query(admin, f"SELECT status FROM sys_invocation WHERE id = '{invocation_id}'")
        return bool(rows) and rows[0].get("status") == status

    _wait_until(f"invocation {invocation_id} {status}", probe, _WAIT_SECONDS)


def step_result(admin: str, invocation_id: str, step: str) -> str:
    """The result of a ``ctx.run`` step, read the way the importer reads it (the journal's entry JSON)."""
    rows = query(admin, f"SELECT index, entry_type, name, entry_json FROM sys_journal WHERE id = '{invocation_id}' ORDER BY index")
    completion = next(json.loads(row["entry_json"])["Command"]["Run"]["completion_id"] for row in rows if row.get("name") == step)
    for row in rows:
        entry = json.loads(row["entry_json"])
        run = entry.get("Notification", {}).get("Completion", {}).get("Run")
        if run and run.get("completion_id") == completion:
            return str(json.loads(bytes(run["result"]["Success"]).decode("utf-8")))
    raise AssertionError(f"no result of step {step!r} in the journal of {invocation_id}")


def import_histories(admin: str, out: Path, *selection: str, redact: bool = False) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "restate", "--admin-url", admin, *selection, "--out", str(out),
         *(() if redact else ("--no-redact",))],
        # Beside the output folder, where no project's [tool.replaytest.redact] applies: the default redaction.
        capture_output=True, text=True, timeout=_WAIT_SECONDS, cwd=out.parent,
    )
    if completed.returncode != 0:
        raise AssertionError(f"import restate failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
    return completed.stdout + completed.stderr


# The order desk the tests replay; test modules import these from here (a ``from conftest import`` would find
# another folder's conftest when several test folders run in one session).
ORDERS_SOURCE = HERE / "restate_shop" / "orders.py"


def line_of(path: Path, snippet: str) -> int:
    """The 1-based line of the one line of ``path`` holding ``snippet``."""
    lines = [number for number, text in enumerate(path.read_text().splitlines(), 1) if snippet in text]
    assert len(lines) == 1, f"{snippet!r} is on lines {lines} of {path}"
    return lines[0]
