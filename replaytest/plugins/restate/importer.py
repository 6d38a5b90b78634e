"""``replaytest import restate``: invocations and their journals from a Restate server into neutral histories.

Reads the admin API's SQL endpoint (``POST <admin-url>/query``, the standard library's HTTP client, each
answer within the history size limit and a deadline, no redirect to another server: ``history.http_read``):
``sys_invocation`` selects the invocations (by id, service, handler, status) and ``sys_journal`` gives each
one's entries in index order, as the protocol messages the SDK exchanged (``raw``). One history per
invocation, ``<invocation id>.json``, engine ``restate``, type ``<service>/<handler>``:

* status: ``completed`` → completed (failed when its result is a failure); ``suspended`` → parked (it waits for
  an awakeable, a promise, a call or a timer); every other in-flight status (pending, scheduled, ready,
  running, backing-off, paused) → running;
* input: ``{"argument": <payload>, "key": <virtual-object or workflow key>}`` from the input command;
* one event per command after the input (``ctx.run`` → step, calls → child-workflow, ``ctx.sleep`` → timer,
  durable promise → signal, state reads and writes → step ``get <key>``/``set <key>``), in journal order, the
  output command giving the history's result or error. Each event carries its command and the notifications
  that follow it up to the next command under ``extra.journal`` (payloads JSON, the rest of each message hex,
  see ``values``), which is what the replayer hands the SDK's state machine.

A completed invocation whose journal the server no longer keeps (journal retention elapsed or off) has no
entries; it is not written as an empty history that would pass: the import says so once per invocation.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest.plugins.importing import ImportNotes as BaseImportNotes
from replaytest.plugins.importing import ImportRefused

if TYPE_CHECKING:
    from replaytest.history import History
    from replaytest.history.redact import Redactor
    from replaytest.plugins.import_files import RunKey

ENGINE = "restate"
_CHUNK = 200  # invocation ids per journal query

RESTATE_STATUSES = ("pending", "scheduled", "ready", "running", "backing-off", "paused", "suspended", "completed")


def run_status(status: str, completion_result: str | None) -> str:
    """The neutral run status of a ``sys_invocation`` status (``completion_result``: success or failure)."""
    if status == "completed":
        return "failed" if completion_result == "failure" else "completed"
    if status == "suspended":
        return "parked"
    return "running"


# (neutral kind, the entry's name from its text fields) per command type; the replayer names the
# commands the code issues with the same function, so the two sides always agree.
def command_name(entry_type: str, text: dict[int, str]) -> tuple[str, str]:
    short = entry_type.removeprefix("Command: ")
    if short == "Run":
        return "step", text.get(12) or "run"
    if short in ("Call", "OneWayCall"):
        target = f"{text.get(1, '?')}/{text.get(2, '?')}"
        return "child-workflow", target if short == "Call" else f"{target} (send)"
    if short == "Sleep":
        return "timer", text.get(12) or "sleep"
    if short in ("GetEagerState", "GetLazyState"):
        return "step", f"get {text.get(1, '')}"
    if short == "SetState":
        return "step", f"set {text.get(1, '')}"
    if short == "ClearState":
        return "step", f"clear {text.get(1, '')}"
    if short == "ClearAllState":
        return "step", "clear all state"
    if short in ("GetEagerStateKeys", "GetLazyStateKeys"):
        return "step", "state keys"
    if short == "GetPromise":
        return "signal", f"promise {text.get(1, '')}"
    if short == "PeekPromise":
        return "step", f"peek promise {text.get(1, '')}"
    if short == "CompletePromise":
        return "step", f"complete promise {text.get(1, '')}"
    if short == "CompleteAwakeable":
        return "step", "complete awakeable"
    if short == "SendSignal":
        return "step", "send signal"
    if short == "AttachInvocation":
        return "step", "attach invocation"
    if short == "GetInvocationOutput":
        return "step", "invocation output"
    return "step", short


@dataclass
class ImportNotes(BaseImportNotes):
    """What the import noticed; Restate adds the completed invocations whose journal retention discarded."""

    discarded: list[str] = field(default_factory=list)


# --- the admin SQL endpoint ---------------------------------------------------------------------------


class AdminQuery:
    """``POST /query`` on a Restate admin API, JSON rows back; each answer read within ``max_bytes`` and
    ``deadline_seconds`` (``None``: the reader's default), no redirect to another server followed
    (``history.http_read``)."""

    def __init__(self, admin_url: str, *, max_bytes: int | None = None, deadline_seconds: float | None = None) -> None:
        if not admin_url.startswith(("http://", "https://")):
            raise click.ClickException(f"--admin-url {admin_url!r}: expected http://host:port (the admin API, port 9070 by default)")
        self.url = admin_url.rstrip("/") + "/query"
        if max_bytes is None:
            from replaytest.config import DEFAULT_MAX_HISTORY_BYTES

            max_bytes = DEFAULT_MAX_HISTORY_BYTES
        self.max_bytes = max_bytes
        self.deadline_seconds = deadline_seconds

    def rows(self, sql: str) -> list[dict[str, Any]]:
        from replaytest.history.http_read import AnswerTooLargeError, DeadlineError, HTTPReadError, request_json

        bounds = {} if self.deadline_seconds is None else {"deadline_seconds": self.deadline_seconds}
        try:
            document = request_json(
                self.url, method="POST", body=json.dumps({"query": sql}).encode("utf-8"),
                headers={"content-type": "application/json", "accept": "application/json"},
                max_bytes=self.max_bytes, **bounds,
            )
        except AnswerTooLargeError as error:
            raise click.ClickException(
                f"{error}; nothing was written. If the answer is genuine, select fewer invocations (--service, "
                "--status, --limit) or raise [tool.replaytest.replay] max-history-bytes"
            ) from None
        except DeadlineError as error:
            raise click.ClickException(f"{error}; nothing was written. A slow server needs a longer --timeout") from None
        except HTTPReadError as error:
            raise click.ClickException(f"{error}; nothing was written") from None
        rows = document.get("rows") if isinstance(document, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise click.ClickException(f"{self.url}: the answer has no list of rows at $.rows; nothing was written")
        return rows


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_INVOCATION_COLUMNS = (
    "id, target_service_name, target_handler_name, target_service_key, status, completion_result, "
    "completion_failure, journal_size, created_at, pinned_deployment_id, pinned_service_protocol_version"
)


def select_invocations(
    query: AdminQuery, invocation_id: str | None, service: str | None, handler: str | None, statuses: Sequence[str], limit: int | None
) -> list[dict[str, Any]]:
    where = []
    if invocation_id is not None:
        where.append(f"id = {_literal(invocation_id)}")
    if service is not None:
        where.append(f"target_service_name = {_literal(service)}")
    if handler is not None:
        where.append(f"target_handler_name = {_literal(handler)}")
    if statuses:
        where.append(f"status IN ({', '.join(_literal(status) for status in statuses)})")
    sql = (
        f"SELECT {_INVOCATION_COLUMNS} FROM sys_invocation"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY created_at, id"
        + (f" LIMIT {int(limit)}" if limit else "")
    )
    return query.rows(sql)


def journals(query: AdminQuery, invocation_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Each invocation's journal entries (index, entry_type, raw hex) in index order."""
    out: dict[str, list[dict[str, Any]]] = {invocation_id: [] for invocation_id in invocation_ids}
    for start in range(0, len(invocation_ids), _CHUNK):
        chunk = invocation_ids[start : start + _CHUNK]
        rows = query.rows(
            "SELECT id, index, entry_type, raw FROM sys_journal "
            f"WHERE id IN ({', '.join(_literal(i) for i in chunk)}) ORDER BY id, index"
        )
        for row in rows:
            out.setdefault(str(row.get("id")), []).append(row)
    return out


# --- histories -----------------------------------------------------------------------------------------


def build_history(invocation: dict[str, Any], entries: list[dict[str, Any]]) -> History:
    """The neutral history of one invocation from its ``sys_invocation`` row and ``sys_journal`` rows."""
    from replaytest.history import ErrorInfo, Event, History, WorkflowInfo
    from replaytest.plugins.restate import values

    invocation_id = str(invocation.get("id"))
    type_name = f"{invocation.get('target_service_name')}/{invocation.get('target_handler_name')}"
    where = f"invocation {invocation_id} ({type_name})"
    argument: dict[str, Any] = {"empty": True}
    output: dict[str, Any] | None = None
    failure: str | None = None
    events: list[Event] = []
    pending: list[dict[str, Any]] = []  # the current command's journal: it and its notifications

    def close_command() -> None:
        if not pending:
            return
        command = pending[0]
        text = values.string_fields(bytes.fromhex(command["rest"]))
        kind, name = command_name(command["type"], text)
        result: Any = None
        for entry in pending[1:]:
            for payload in entry["payloads"]:
                result = values.payload_value(payload)
        events.append(Event(seq=len(events) + 1, kind=kind, name=name, result=result, extra={"journal": list(pending)}))
        pending.clear()

    for row in entries:
        index, entry_type, raw = row.get("index"), str(row.get("entry_type")), row.get("raw")
        try:
            stored = values.split_entry(entry_type, bytes.fromhex(str(raw)))
        except (ValueError, values.WireError) as error:
            raise ImportRefused(f"{where}: journal entry {index} ({entry_type}): {error}") from None
        stored["index"] = index
        if entry_type == values.INPUT:
            argument = next((p for p in stored["payloads"] if p["field"] == 14), {"empty": True})
            argument = {key: value for key, value in argument.items() if key != "field"}
        elif entry_type == values.OUTPUT:
            close_command()
            output = next((p for p in stored["payloads"] if p["field"] == 14), None)
            if output is None:
                text = values.string_fields(bytes.fromhex(stored["rest"]))
                failure = text.get(15, "")
        elif entry_type.startswith("Command: "):
            close_command()
            pending.append(stored)
        elif pending:
            pending.append(stored)
        else:
            raise ImportRefused(f"{where}: journal entry {index} ({entry_type}) is a notification before any command")
    close_command()
    status = run_status(str(invocation.get("status")), invocation.get("completion_result"))
    recorded_failure = None
    if status == "failed":
        message = invocation.get("completion_failure") or failure or ""
        recorded_failure = ErrorInfo("TerminalError", _failure_message(str(message)))
    document_input: dict[str, Any] = {"argument": argument}
    if invocation.get("target_service_key"):
        document_input["key"] = str(invocation["target_service_key"])
    return History(
        workflow=WorkflowInfo(type=type_name, id=invocation_id, run_id=None, engine=ENGINE,
                              protocol_version=_protocol_version(invocation.get("pinned_service_protocol_version"))),
        status=status,
        events=tuple(events),
        input=document_input,
        result=values.payload_value(output) if status == "completed" and output is not None else None,
        error=recorded_failure,
        code_version=str(invocation["pinned_deployment_id"]) if invocation.get("pinned_deployment_id") else None,
    )


def _protocol_version(value: Any) -> int | None:
    """The service protocol the invocation is pinned to (the journal's messages depend on it: a call within
    a scope needs 7), or None before the server pinned one."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.isdigit() and int(value) > 0:
        return int(value)
    return None


def _failure_message(text: str) -> str:
    """The message of a failure as the server prints it (``[500] message``): without the code."""
    if text.startswith("[") and "] " in text:
        return text.split("] ", 1)[1]
    return text


def recorded_run(document: Any) -> RunKey | None:
    from replaytest.plugins.import_files import neutral_run

    return neutral_run(document, engine=ENGINE, label="invocation")


def import_invocations(
    admin_url: str,
    out: Path,
    *,
    invocation_id: str | None = None,
    service: str | None = None,
    handler: str | None = None,
    statuses: Sequence[str] = (),
    limit: int | None = None,
    redactor: Redactor | None = None,
    progress: Callable[[str], None] = lambda line: None,
    max_bytes: int | None = None,
    deadline_seconds: float | None = None,
) -> tuple[int, ImportNotes]:
    """Write one history per selected invocation into ``out``; returns how many were written and the notes.
    Every answer of the admin API is read (within ``max_bytes`` and ``deadline_seconds`` each, see
    ``AdminQuery``) before the first file is written, so an answer that cannot be read writes nothing."""
    from replaytest.history import save_history
    from replaytest.history.redact import redact_history
    from replaytest.plugins.import_files import ImportCollision, ImportFolder, history_file_name, neutral_key

    query = AdminQuery(admin_url, max_bytes=max_bytes, deadline_seconds=deadline_seconds)
    notes = ImportNotes()
    invocations = select_invocations(query, invocation_id, service, handler, statuses, limit)
    by_id = journals(query, [str(row.get("id")) for row in invocations])
    out.mkdir(parents=True, exist_ok=True)
    folder = ImportFolder(out, recorded_run)
    written = 0
    for invocation in invocations:
        identifier = str(invocation.get("id"))
        type_name = f"{invocation.get('target_service_name')}/{invocation.get('target_handler_name')}"
        entries = by_id.get(identifier, [])
        if not entries:
            notes.discarded.append(
                f"invocation {identifier} ({type_name}, {invocation.get('status')}): the server keeps no journal for "
                "it (journal retention elapsed or off for this service), so there is nothing to replay; not imported"
            )
            progress(f"note: {notes.discarded[-1]}")
            continue
        try:
            history = build_history(invocation, entries)
        except ImportRefused as refused:
            notes.refused.append(str(refused))
            progress(f"refused: {refused}")
            continue
        replaced = 0
        if redactor is not None:
            history, replaced = redact_history(history, redactor)
        filename = history_file_name(history.workflow.id)
        try:
            target = folder.claim(filename, neutral_key(ENGINE, type_name, history.workflow.id, "invocation"))
        except ImportCollision as collision:
            notes.refused.append(str(collision))
            progress(f"refused: {collision}")
            continue
        save_history(history, target)
        notes.redacted += replaced
        written += 1
        redacted = f", {replaced} value(s) redacted" if replaced else ""
        progress(f"[{written}/{len(invocations)}] {filename} ({type_name}, {history.status}, {len(history.events)} events{redacted})")
    return written, notes


@click.command("restate")
@click.option("--admin-url", required=True, help="The Restate admin API, e.g. http://127.0.0.1:9070 (read with its SQL endpoint).")
@click.option("--invocation", "invocation_id", help="Import this one invocation (inv_…).")
@click.option("--service", help="Only invocations of this service (or virtual object, workflow).")
@click.option("--handler", help="Only invocations of this handler.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(RESTATE_STATUSES, case_sensitive=False), help="Only invocations in this Restate status (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), help="Import at most N invocations (oldest first).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the history files.")
@click.option("--timeout", "timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS", help="The most one answer of the admin API may take, whole: connecting to its last byte (default 60).")
@click.option("--redact-key", "keys", multiple=True, metavar="NAME", help="Key name to scrub in payloads (repeatable; default: [tool.replaytest.redact] or common secret fields).")
@click.option("--redact-path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub (repeatable).")
@click.option("--no-redact", is_flag=True, help="Write payloads as recorded.")
def import_command(
    admin_url: str,
    invocation_id: str | None,
    service: str | None,
    handler: str | None,
    statuses: tuple[str, ...],
    limit: int | None,
    out_dir: Path,
    timeout: float | None,
    keys: tuple[str, ...],
    paths: tuple[str, ...],
    no_redact: bool,
) -> None:
    """Read Restate invocations and their journals into OUT as <invocation id>.json (payloads JSON only)."""
    from replaytest.plugins.importing import (
        EXIT_ERROR,
        fail,
        import_byte_limit,
        import_redactor,
        redaction_said,
        report_import,
    )

    if invocation_id is not None and (service or handler or statuses or limit):
        fail("--invocation selects one invocation; it does not combine with --service, --handler, --status or --limit")
    redactor = import_redactor(no_redact, keys, paths)
    try:
        written, notes = import_invocations(
            admin_url, out_dir, invocation_id=invocation_id, service=service, handler=handler,
            statuses=tuple(status.lower() for status in statuses), limit=limit, redactor=redactor,
            progress=lambda line: click.echo(line, err=True), max_bytes=import_byte_limit(), deadline_seconds=timeout,
        )
    except click.ClickException as error:
        fail(error.message)
    # The refusals were reported as they happened (``progress``); the summary counts them.
    clauses = [f"{len(notes.refused)} invocation(s) refused"] if notes.refused else []
    if notes.discarded:
        clauses.append(f"{len(notes.discarded)} without a journal")
    report_import(written, out_dir, redaction=redaction_said(redactor, notes.redacted), extra=clauses)
    if notes.refused:
        sys.exit(EXIT_ERROR)
    if invocation_id is not None and written == 0:
        fail(notes.discarded[0] if notes.discarded else f"no invocation {invocation_id!r} at {admin_url}")
