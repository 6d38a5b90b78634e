"""``replaytest import dbos``: read workflow runs from a DBOS system database into neutral histories.

Read-only SQL over DBOS's tables (``workflow_status``, ``workflow_input``/``workflow_output`` since 3.0,
inputs/output/error in ``workflow_status`` before; ``operation_outputs`` keyed by
``(workflow_uuid, function_id)``). SQLite is opened read-only with the standard library; Postgres (schema
``dbos``) through SQLAlchemy and psycopg 3 (as DBOS connects) in a read-only transaction. DBOS itself is
not imported.

One history per run, ``<workflow_id>.json``: engine ``dbos``, ``code_version`` the run's
``application_version``, status SUCCESS → completed, ERROR → failed, PENDING/ENQUEUED/DELAYED → running,
CANCELLED/MAX_RECOVERY_ATTEMPTS_EXCEEDED → parked (DBOS can resume them). Each ``operation_outputs`` row
is one event in function-id order, its id kept in the event's ``function_id`` (ids can skip numbers):
``DBOS.sleep`` → timer (its ``wake_at`` and, from DBOS 3.x, ``started_at``, epoch seconds), ``DBOS.recv`` → signal, ``DBOS.patch-P`` → marker ``patched`` with patch id P, a
row naming a child workflow → child-workflow, anything else (steps, transactions, ``DBOS.getResult``,
``DBOS.send``, …) → step. Payloads become typed JSON (``dbos.values``) under one ``DecodeBudget`` per
run; a pickle the restricted decoder refuses, or a run whose payloads pass the budget, stops that run's
import (never the others') with a message naming the workflow, the function id and the type or budget.
Each step's prompt versions, recorded when it ran in the side table ``replaytest_prompt_calls``
(``dbos.prompts``), go on its event (``Event.prompt``; all of them in the event's ``prompts`` when the
step used several); a run without rows there keeps its events without prompts.
The run's prompt manifest, when ``dbos.prompts.with_prompts`` put it in the workflow attributes, becomes the
history's ``prompt_manifest`` (``recorded_manifest``; a malformed one refuses the run, naming its JSON path).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import click

from replaytest.plugins.importing import ImportNotes as BaseImportNotes
from replaytest.plugins.importing import ImportRefused

if TYPE_CHECKING:
    from replaytest.history import ErrorInfo, Event, History, PromptRef
    from replaytest.history.redact import Redactor
    from replaytest.plugins.dbos.values import DecodeBudget
    from replaytest.plugins.import_files import RunKey

ENGINE = "dbos"
# A payload sits a few levels down in a history, which the loader reads to 400 levels (history.io.MAX_DEPTH).
MAX_PAYLOAD_DEPTH = 390
_TYPE_KEY = "$type"  # dbos.values.TYPE_KEY, repeated so loading the plugin for lint stays cheap
PICKLE = "py_pickle"
PORTABLE = "portable_json"
# The command-line option that raises each limit of the decode budget (``DecodeBudget`` field names).
BUDGET_OPTIONS = {"max_bytes": "--max-payload-bytes", "max_nodes": "--max-payload-values", "max_depth": "--max-payload-depth"}

STATUS_MAP = {
    "SUCCESS": "completed",
    "ERROR": "failed",
    "PENDING": "running",
    "ENQUEUED": "running",
    "DELAYED": "running",
    "CANCELLED": "parked",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "parked",
}
SLEEP = "DBOS.sleep"
RECV = "DBOS.recv"
PATCH_PREFIX = "DBOS.patch-"


def event_kind(function_name: str, child: bool) -> str:
    """The neutral kind of a DBOS operation (shared by the importer and the replayer)."""
    if function_name == SLEEP:
        return "timer"
    if function_name == RECV:
        return "signal"
    if function_name.startswith(PATCH_PREFIX):
        return "marker"
    if child and not function_name.startswith("DBOS."):
        return "child-workflow"
    return "step"


@dataclass
class ImportNotes(BaseImportNotes):
    """What the import noticed; DBOS adds the classes recorded as defined in ``__main__``."""

    main_classes: list[str] = field(default_factory=list)


# --- reading the database ----------------------------------------------------------------------------


class SystemDatabase:
    """Read-only access to one DBOS system database: its tables' columns and query rows."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._sqlite: Any = None  # a read-only sqlite3.Connection
        self._engine: Any = None
        self.schema = ""
        if url.startswith("sqlite"):
            self._sqlite = _open_sqlite(url)
        elif url.startswith(("postgres", "postgresql")):
            try:
                import sqlalchemy
            except ImportError:
                raise click.ClickException("reading a Postgres system database needs SQLAlchemy (pip install 'replaytest[dbos]')") from None
            self._engine = sqlalchemy.create_engine(postgres_engine_url(url))
            self.schema = "dbos."
        else:
            raise click.ClickException(f"unsupported database URL {url!r}: expected sqlite:///PATH or postgresql://…")

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
        if self._engine is not None:
            self._engine.dispose()

    def columns(self, table: str) -> set[str]:
        if self._sqlite is not None:
            return {row[1] for row in self._sqlite.execute(f"PRAGMA table_info({table})")}
        rows = self.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'dbos' AND table_name = :table",
            {"table": table},
        )
        return {row[0] for row in rows}

    def rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if self._sqlite is not None:
            return [tuple(row) for row in self._sqlite.execute(sql, params)]
        import sqlalchemy

        with self._engine.connect() as connection:
            connection.execute(sqlalchemy.text("SET TRANSACTION READ ONLY"))
            result = [tuple(row) for row in connection.execute(sqlalchemy.text(sql), params)]
            connection.rollback()
            return result

    def table(self, name: str) -> str:
        return f"{self.schema}{name}"


def postgres_engine_url(url: str) -> Any:
    """The SQLAlchemy URL for a Postgres system database URL as DBOS takes it: without a driver named
    (``postgresql://`` or ``postgres://``) it means psycopg 3, the driver DBOS depends on and connects
    with (SQLAlchemy before 2.1 would pick psycopg2, which DBOS does not install, and no SQLAlchemy reads
    ``postgres://``); a URL naming its driver is used as written."""
    import sqlalchemy

    parsed = sqlalchemy.make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    return parsed


def _open_sqlite(url: str) -> Any:
    import sqlite3

    parsed = urlparse(url)
    path = unquote(parsed.path)
    if url.startswith("sqlite:////"):
        path = "/" + path.lstrip("/")
    elif url.startswith("sqlite:///"):
        path = path[1:]
    if not path or not Path(path).is_file():
        raise click.ClickException(f"no SQLite database at {path or url!r}")
    connection = sqlite3.connect(f"file:{Path(path).resolve().as_posix()}?mode=ro", uri=True)
    return connection


# --- runs -------------------------------------------------------------------------------------------


@dataclass
class Run:
    workflow_id: str
    status: str
    name: str
    class_name: str | None
    config_name: str | None
    application_version: str | None
    serialization: str | None
    inputs: str | None
    output: str | None
    error: str | None
    attributes: Any = None  # DBOS's workflow attributes (JSON text on SQLite, a map on Postgres), if any


def select_runs(
    db: SystemDatabase,
    workflow_id: str | None = None,
    name: str | None = None,
    statuses: Sequence[str] = (),
    limit: int | None = None,
) -> list[Run]:
    status_columns = db.columns("workflow_status")
    if not status_columns:
        raise click.ClickException(f"{db.url}: no workflow_status table; is this a DBOS system database?")
    split_layout = bool(db.columns("workflow_input"))  # DBOS 3.x; 2.x kept payloads in workflow_status

    def column(name: str) -> str:
        return f"s.{name}" if name in status_columns else "NULL"

    inputs, output, error = column("inputs"), column("output"), column("error")
    joins = ""
    if split_layout:
        joins = (
            f" LEFT JOIN {db.table('workflow_input')} i ON i.workflow_uuid = s.workflow_uuid"
            f" LEFT JOIN {db.table('workflow_output')} o ON o.workflow_uuid = s.workflow_uuid"
        )
        inputs, output, error = f"COALESCE(i.inputs, {inputs})", f"COALESCE(o.output, {output})", f"COALESCE(o.error, {error})"
    where: list[str] = []
    params: dict[str, Any] = {}
    if workflow_id is not None:
        where.append("s.workflow_uuid = :workflow_id")
        params["workflow_id"] = workflow_id
    if name is not None:
        where.append("s.name = :name")
        params["name"] = name
    if statuses:
        names = [f":status{i}" for i in range(len(statuses))]
        where.append(f"s.status IN ({', '.join(names)})")
        params.update({f"status{i}": status.upper() for i, status in enumerate(statuses)})
    sql = (
        f"SELECT s.workflow_uuid, s.status, s.name, {column('class_name')}, {column('config_name')}, "
        f"{column('application_version')}, {column('serialization')}, {inputs}, {output}, {error}, "
        f"{column('attributes')} "
        f"FROM {db.table('workflow_status')} s{joins}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + f" ORDER BY {column('created_at')}, s.workflow_uuid"
        + (" LIMIT :limit" if limit else "")
    )
    if limit:
        params["limit"] = limit
    return [Run(*row) for row in db.rows(sql, params)]


def operations(
    db: SystemDatabase, workflow_id: str
) -> list[tuple[int, str, str | None, str | None, str | None, str | None, int | None]]:
    """(function_id, function_name, output, error, child_workflow_id, serialization, started_at_epoch_ms) in id
    order (the columns a DBOS version lacks are None)."""
    columns = db.columns("operation_outputs")
    child = "child_workflow_id" if "child_workflow_id" in columns else "NULL"
    serialization = "serialization" if "serialization" in columns else "NULL"
    started = "started_at_epoch_ms" if "started_at_epoch_ms" in columns else "NULL"
    sql = (
        f"SELECT function_id, function_name, output, error, {child}, {serialization}, {started} "
        f"FROM {db.table('operation_outputs')} WHERE workflow_uuid = :workflow_id ORDER BY function_id"
    )
    return [tuple(row) for row in db.rows(sql, {"workflow_id": workflow_id})]  # type: ignore[misc]


# --- payloads ---------------------------------------------------------------------------------------


class _Payloads:
    """Decodes one run's payloads under one budget, naming the run and function id in every refusal."""

    def __init__(self, run: Run, notes: ImportNotes, budget: DecodeBudget | None = None) -> None:
        from replaytest.plugins.dbos.values import BudgetMeter

        self.run = run
        self.notes = notes
        self.meter = BudgetMeter(budget)

    def where(self, function_id: int | None) -> str:
        at = f"function id {function_id}" if function_id is not None else "its input/output"
        return f"workflow {self.run.workflow_id} ({self.run.name}) {at}"

    def value(self, text: str | None, serialization: str | None, function_id: int | None) -> Any:
        if text is None:
            return None
        serialization = serialization or self.run.serialization or PICKLE
        from replaytest.plugins.dbos.values import PickleRefused, classes_in, decode_pickle

        if serialization == PORTABLE:
            return self.typed(self.portable(text, function_id), function_id)
        if serialization != PICKLE:
            raise ImportRefused(
                f"{self.where(function_id)}: payload written by serializer {serialization!r}; "
                "replaytest reads only DBOS's py_pickle and portable_json"
            )
        try:
            typed = decode_pickle(text, self.meter)
        except PickleRefused as refused:
            raise self.refusal(refused, function_id) from None
        for name in classes_in(typed):
            if name.startswith("__main__."):
                self.notes.main_classes.append(
                    f"{self.where(function_id)}: class {name} was pickled by an application run as a script; "
                    "no other process can import it, so replay cannot rebuild it (run the app as a module)"
                )
        return typed

    def refusal(self, refused: Exception, function_id: int | None) -> ImportRefused:
        from replaytest.plugins.dbos.values import OverBudget, PickleRefused

        if isinstance(refused, OverBudget):
            return ImportRefused(
                f"{self.where(function_id)}: refused: {refused.reason} "
                f"(budget {refused.budget}; raise it with {BUDGET_OPTIONS[refused.budget]})"
            )
        assert isinstance(refused, PickleRefused)
        if refused.type_name == "payload":  # the pickle as a whole, not one type in it
            return ImportRefused(f"{self.where(function_id)}: refused: {refused.reason}")
        return ImportRefused(f"{self.where(function_id)}: refused type {refused.type_name} ({refused.reason})")

    def portable(self, text: str, function_id: int | None) -> Any:
        try:
            return json.loads(text)
        except RecursionError:
            raise ImportRefused(
                f"{self.where(function_id)}: refused: portable JSON nested deeper than the interpreter can read "
                f"(budget max_depth; the limit is {self.meter.budget.max_depth} levels)"
            ) from None
        except ValueError as error:
            raise ImportRefused(f"{self.where(function_id)}: refused: not portable JSON: {error}") from None

    def typed(self, value: Any, function_id: int | None) -> Any:
        from replaytest.plugins.dbos.values import PickleRefused, to_typed

        try:
            return to_typed(value, self.meter)
        except PickleRefused as refused:
            raise self.refusal(refused, function_id) from None

    def error(self, text: str | None, serialization: str | None, function_id: int | None) -> tuple[ErrorInfo, Any] | None:
        from replaytest.history import ErrorInfo

        if text is None:
            return None
        serialization = serialization or self.run.serialization or PICKLE
        if serialization == PORTABLE:
            data = self.portable(text, function_id)
            if not isinstance(data, dict):
                raise ImportRefused(f"{self.where(function_id)}: refused: a portable error that is not a JSON object")
            typed = {_TYPE_KEY: "portable-error", **{key: self.typed(data.get(key), function_id) for key in ("name", "message", "code", "data")}}
            return ErrorInfo(str(data.get("name") or "Error"), str(data.get("message") or "")), typed
        typed = self.value(text, serialization, function_id)
        return _error_info(typed), typed


def _error_info(typed: Any) -> ErrorInfo:
    from replaytest.history import ErrorInfo

    if isinstance(typed, dict) and typed.get(_TYPE_KEY) in ("exception", "object"):
        cls = str(typed.get("class", "Exception")).rpartition(".")[2]
        args = typed.get("args", typed.get("call_args", []))
        if not isinstance(args, list):
            args = []
        if len(args) == 0:
            message = ""
        elif len(args) == 1:
            message = args[0] if isinstance(args[0], str) else json.dumps(args[0])
        else:
            message = json.dumps(args)
        return ErrorInfo(cls, message)
    return ErrorInfo("Exception", json.dumps(typed))


def _input(payloads: _Payloads, run: Run) -> Any:
    typed = payloads.value(run.inputs, run.serialization, None)
    args: Any = []
    kwargs: Any = {}
    if isinstance(typed, dict):
        if "positionalArgs" in typed or "namedArgs" in typed:  # portable JSON
            args, kwargs = typed.get("positionalArgs") or [], typed.get("namedArgs") or {}
        else:
            args, kwargs = typed.get("args", []), typed.get("kwargs", {})
    if isinstance(args, dict) and args.get(_TYPE_KEY) == "tuple":
        args = args["items"]
    document: dict[str, Any] = {"args": args, "kwargs": kwargs}
    if run.class_name:
        document["class_name"] = run.class_name
    if run.config_name:
        document["config_name"] = run.config_name
    return document


def build_history(db: SystemDatabase, run: Run, notes: ImportNotes, budget: DecodeBudget | None = None) -> History:
    from replaytest.history import Event, History, WorkflowInfo

    payloads = _Payloads(run, notes, budget)
    events: list[Event] = []
    prompts = prompt_calls(db, run.workflow_id)
    for function_id, function_name, output, error, child_id, serialization, started_ms in operations(db, run.workflow_id):
        kind = event_kind(function_name, child_id is not None)
        extra: dict[str, Any] = {"function_id": function_id}
        if child_id is not None:
            extra["child_workflow_id"] = child_id
        failure = payloads.error(error, serialization, function_id)
        result = payloads.value(output, serialization, function_id)
        if kind == "timer" and isinstance(result, (int, float)) and math.isfinite(result):
            extra["wake_at"] = result  # DBOS records when the sleep ends, not how long it was
            if isinstance(started_ms, (int, float)):
                extra["started_at"] = started_ms / 1000  # and, since 3.x, when it started: a sleeping run's duration
            result = None
        if failure is not None:
            extra["exception"] = failure[1]
        used = prompts.get(function_id, [])
        if len(used) > 1:
            extra["prompts"] = [_prompt_json(ref) for ref in used]
        events.append(
            Event(
                seq=len(events) + 1,
                kind=kind,
                name="patched" if kind == "marker" else function_name,
                result=result,
                error=failure[0] if failure else None,
                patch_id=function_name[len(PATCH_PREFIX) :] if kind == "marker" else None,
                prompt=used[0] if used else None,
                extra=extra,
            )
        )
    status = STATUS_MAP.get(str(run.status).upper(), "running")
    failure = payloads.error(run.error, run.serialization, None) if status == "failed" else None
    return History(
        workflow=WorkflowInfo(type=run.name, id=run.workflow_id, run_id=None, engine=ENGINE),
        status=status,
        events=tuple(events),
        input=_input(payloads, run),
        result=payloads.value(run.output, run.serialization, None) if status == "completed" else None,
        error=failure[0] if failure else None,
        code_version=run.application_version,
        prompt_manifest=recorded_manifest(run),
    )


# ``dbos.prompts.TABLE``: the side table where each step's prompt versions are recorded when it runs.
PROMPT_CALLS_TABLE = "replaytest_prompt_calls"


def prompt_calls(db: SystemDatabase, workflow_id: str) -> dict[int, list[PromptRef]]:
    """``{function id: the prompts that step used}`` from the side table ``dbos.prompts`` writes (by
    name; empty for a database without it, a run recorded before it). A malformed row refuses the run."""
    from replaytest.history import PromptRef

    if not db.columns(PROMPT_CALLS_TABLE):
        return {}
    rows = db.rows(
        f"SELECT function_id, name, prompt FROM {db.table(PROMPT_CALLS_TABLE)} "
        "WHERE workflow_uuid = :workflow_id ORDER BY function_id, name",
        {"workflow_id": workflow_id},
    )
    found: dict[int, list[PromptRef]] = {}
    for function_id, name, text in rows:
        where = f"workflow {workflow_id!r}: {PROMPT_CALLS_TABLE} row for function id {function_id}, prompt {name!r}"
        try:
            record = json.loads(text)
        except (TypeError, ValueError) as error:
            raise ImportRefused(f"{where}: not JSON ({error})") from None
        version = record.get("version") if isinstance(record, dict) else None
        params = record.get("params") if isinstance(record, dict) else None
        if not isinstance(version, str) or not version or not isinstance(name, str) or not name:
            raise ImportRefused(f"{where}: no prompt version in {text[:80]!r}")
        if params is not None and not isinstance(params, dict):
            raise ImportRefused(f"{where}: params is {type(params).__name__}, not a map")
        found.setdefault(int(function_id), []).append(PromptRef(name=name, version=version, params=params))
    return found


def _prompt_json(ref: PromptRef) -> dict[str, Any]:
    out: dict[str, Any] = {"name": ref.name, "version": ref.version}
    if ref.params is not None:
        out["params"] = dict(ref.params)
    return out


# ``dbos.prompts.ATTRIBUTE``, repeated so that importing does not load the recording helpers.
PROMPTS_ATTRIBUTE = "replaytest_prompts"


def recorded_manifest(run: Run) -> dict[str, str] | None:
    """The prompt manifest ``dbos.prompts.with_prompts`` put in the run's workflow attributes (None: the
    run was started without it). A malformed one refuses the run, naming the JSON path."""
    attributes = run.attributes
    where = f"workflow {run.workflow_id!r}: workflow_status.attributes"
    if attributes is None:
        return None
    if isinstance(attributes, (str, bytes)):
        try:
            attributes = json.loads(attributes)
        except ValueError as error:
            raise ImportRefused(f"{where}: not JSON ({error})") from None
    if not isinstance(attributes, dict) or PROMPTS_ATTRIBUTE not in attributes:
        return None  # no map (DBOS writes null for none) or none of ours: the application's own attributes
    manifest = attributes[PROMPTS_ATTRIBUTE]
    path = f"$.{PROMPTS_ATTRIBUTE}"
    if not isinstance(manifest, dict):
        raise ImportRefused(f"{where}: {path} is {type(manifest).__name__}, not a map of prompt names to versions")
    for name, version in manifest.items():
        if not isinstance(version, str) or not version or not name:
            raise ImportRefused(f"{where}: {path}[{name!r}] is {version!r}, not a prompt version")
    return dict(manifest)


def history_filename(workflow_id: str) -> str:
    """``<workflow_id>.json``, collision-free (``import_files.history_file_name``)."""
    from replaytest.plugins.import_files import history_file_name

    return history_file_name(workflow_id)


def recorded_run(document: Any) -> RunKey | None:
    """The run a DBOS history file records (its workflow type and id), to tell a re-import from another run."""
    from replaytest.plugins.import_files import neutral_run

    return neutral_run(document, engine=ENGINE)


def import_runs(
    url: str,
    out: Path,
    *,
    workflow_id: str | None = None,
    name: str | None = None,
    statuses: Sequence[str] = (),
    limit: int | None = None,
    redactor: Redactor | None = None,
    budget: DecodeBudget | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[int, ImportNotes]:
    """Write one history per selected run into ``out``; returns how many were written and the notes."""
    from replaytest.history import save_history
    from replaytest.history.redact import redact_history
    from replaytest.plugins.import_files import ImportCollision, ImportFolder, neutral_key

    notes = ImportNotes()
    db = SystemDatabase(url)
    try:
        runs = select_runs(db, workflow_id, name, statuses, limit)
        out.mkdir(parents=True, exist_ok=True)
        folder = ImportFolder(out, recorded_run)
        written = 0
        for run in runs:
            try:
                history = build_history(db, run, notes, budget)
            except RecursionError:  # a backstop: the decode budget's depth limit comes first
                refused = ImportRefused(f"workflow {run.workflow_id} ({run.name}): refused: nested too deeply to import")
                notes.refused.append(str(refused))
                progress(f"refused: {refused}")
                continue
            except ImportRefused as refused:
                notes.refused.append(str(refused))
                progress(f"refused: {refused}")
                continue
            replaced = 0
            if redactor is not None:
                # One pass over the whole history (recorded exceptions included, as unknown event fields),
                # so an address in an error message and in its exception get the same pseudonym.
                history, replaced = redact_history(history, redactor)
            # Named after the id as written (redacted), so the name shows nothing the history hides.
            filename = history_filename(history.workflow.id)
            try:
                target = folder.claim(filename, neutral_key(ENGINE, run.name, history.workflow.id))
            except ImportCollision as collision:
                notes.refused.append(str(collision))
                progress(f"refused: {collision}")
                continue
            save_history(history, target)
            notes.redacted += replaced
            written += 1
            of = f"/{len(runs)}"
            redacted = f", {replaced} value(s) redacted" if replaced else ""
            progress(f"[{written}{of}] {filename} ({run.name}, {history.status}, {len(history.events)} events{redacted})")
        return written, notes
    finally:
        db.close()


@click.command("dbos")
@click.option("--database-url", required=True, help="The DBOS system database: sqlite:///PATH or postgresql://… (read only).")
@click.option("--workflow-id", help="Import this one run.")
@click.option("--name", help="Only runs of this workflow function name.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(list(STATUS_MAP), case_sensitive=False), help="Only runs in this DBOS status (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), help="Import at most N runs (oldest first).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the history files.")
@click.option("--redact-key", "keys", multiple=True, metavar="NAME", help="Key name to scrub in payloads (repeatable; default: [tool.replaytest.redact] or common secret fields).")
@click.option("--redact-path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub (repeatable).")
@click.option("--no-redact", is_flag=True, help="Write payloads as recorded.")
@click.option("--max-payload-bytes", type=click.IntRange(min=1), help="Decode budget: most bytes of typed JSON one run's payloads may decode to (default 32 MiB).")
@click.option("--max-payload-values", type=click.IntRange(min=1), help="Decode budget: most values one run's payloads may decode to, a shared one counted each time (default 1,000,000).")
@click.option("--max-payload-depth", type=click.IntRange(min=1, max=MAX_PAYLOAD_DEPTH), help=f"Decode budget: deepest JSON nesting of one payload (default 100, at most {MAX_PAYLOAD_DEPTH}).")
def import_command(
    database_url: str,
    workflow_id: str | None,
    name: str | None,
    statuses: tuple[str, ...],
    limit: int | None,
    out_dir: Path,
    keys: tuple[str, ...],
    paths: tuple[str, ...],
    no_redact: bool,
    max_payload_bytes: int | None,
    max_payload_values: int | None,
    max_payload_depth: int | None,
) -> None:
    """Read DBOS workflow runs from a system database into OUT as <workflow_id>.json (never pickle)."""
    from replaytest.plugins.dbos.values import DecodeBudget
    from replaytest.plugins.importing import EXIT_ERROR, fail, import_redactor, redaction_said, report_import

    limits = {"max_bytes": max_payload_bytes, "max_nodes": max_payload_values, "max_depth": max_payload_depth}
    budget = DecodeBudget(**{name: value for name, value in limits.items() if value is not None})

    if workflow_id is not None and (name or statuses or limit):
        fail("--workflow-id selects one run; it does not combine with --name, --status or --limit")
    redactor = import_redactor(no_redact, keys, paths)
    try:
        written, notes = import_runs(
            database_url, out_dir, workflow_id=workflow_id, name=name, statuses=statuses, limit=limit,
            redactor=redactor, budget=budget, progress=lambda line: click.echo(line, err=True),
        )
    except click.ClickException as error:
        fail(error.message)
    except Exception as error:  # a locked or corrupt database, a Postgres connection refused
        fail(f"reading {database_url} failed: {type(error).__name__}: {error}")
    for line in notes.main_classes:
        click.echo(f"note: {line}", err=True)
    report_import(written, out_dir, redaction=redaction_said(redactor, notes.redacted), refused=notes.refused)
    if notes.refused:
        sys.exit(EXIT_ERROR)
    if workflow_id is not None and written == 0:
        fail(f"no run with workflow id {workflow_id!r} in {database_url}")
