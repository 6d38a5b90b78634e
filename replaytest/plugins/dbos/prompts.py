"""Recording prompt versions in DBOS runs: per step call in a side table, and the start manifest.

**Per call.** Importing this module (an application does when it takes ``use_prompt`` or
``with_prompts`` from here) starts recording, in the DBOS system database the application runs on, the
prompt version each step actually used, at the time it ran, in a side table DBOS itself never reads::

    replaytest_prompt_calls(workflow_uuid, function_id, name, prompt)   -- PRIMARY KEY (the first three)

(``dbos.`` schema on Postgres; created if absent). ``prompt`` is ``Prompt.record()`` as JSON: name,
full version (text + model + parameter digest), model, parameters. Rows are keyed by the workflow id and
the function id of the step that used the prompt, and written at two points:

* when a step's body is about to run (the step asked DBOS whether it already ran and got no answer):
  that step's earlier rows are deleted (an attempt that crashed before its result was recorded) and the
  prompts of the ``use_prompt`` blocks around the step call are written;
* when ``Prompt.render()`` runs inside a DBOS step (``DBOS.workflow_id`` / ``DBOS.step_id``): that
  prompt, for that step.

A step DBOS does not run again on recovery (its result is recorded) writes nothing, so its rows stay the
ones written when it ran; a step that runs again after a crash records what it uses then. Nothing of the
run changes: no function id, no operation, no step result; the rows are separate writes after DBOS's
own. A write that fails (the database locked past its timeout, no permission to create the table, a
dbos outside the tested range, see ``internals.RECORDING_TESTED``) is logged on the
``replaytest.dbos.prompts`` logger and the workflow goes on: that step's versions are then missing and
replay compares it with the start manifest, saying so in a note. The rows outlive the run (DBOS's
retention and ``delete_workflow`` do not know the table) and ``fork_workflow`` does not copy them.
``record_calls(False)`` stops recording in this process.

``replaytest import dbos`` puts each step's rows on its event (``Event.prompt``; several prompts of one
step are all kept in the event's ``prompts``), and replay compares them with the prompts the current
code's call uses, as on the journal (``prompt-drift`` by ``--prompts``). Runs with no rows (recorded
before this, or without this module loaded) fall back to the manifest.

**The start manifest.** DBOS writes a workflow's *attributes* (``SetWorkflowAttributes``, a JSON map)
into its ``workflow_status`` row when the run is created: no operation, so the run's function ids are the
same with or without it, and no extra write. ``with_prompts(workflow)`` puts the manifest there under
``replaytest_prompts`` (``{prompt name: version}``, ``replaytest.prompts.prompt_manifest`` of the
workflow) for the runs started or enqueued in its block; ``replaytest import dbos`` reads it back as the
history's ``prompt_manifest``: the prompts a parked run has not reached yet are compared with it.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from replaytest.prompts import Prompt, add_render_hook, prompt_manifest, prompts_in_use
from replaytest.prompts import use_prompt as _use_prompt

ATTRIBUTE = "replaytest_prompts"
TABLE = "replaytest_prompt_calls"

__all__ = ["ATTRIBUTE", "TABLE", "prompt_attributes", "record_calls", "use_prompt", "with_prompts"]

log = logging.getLogger("replaytest.dbos.prompts")

# The Prompt objects of the ``use_prompt`` blocks around the running code (for their model and params).
_OBJECTS: contextvars.ContextVar[tuple[Prompt, ...]] = contextvars.ContextVar("replaytest_dbos_prompts", default=())
_state: dict[str, Any] = {"enabled": True, "installed": False, "tables": set(), "warned": set()}


def prompt_attributes(*workflows: Any, attributes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``attributes`` (the application's own, kept as they are) plus the manifest of ``workflows``
    (``@DBOS.workflow()`` functions or classes), for ``SetWorkflowAttributes``."""
    merged = dict(attributes or {})
    merged[ATTRIBUTE] = prompt_manifest(*workflows)
    return merged


@contextmanager
def with_prompts(*workflows: Any, attributes: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Runs of ``workflows`` started or enqueued in this block record their prompt manifest (and
    ``attributes``, since DBOS keeps the innermost ``SetWorkflowAttributes`` block's map only)."""
    from dbos import SetWorkflowAttributes

    with SetWorkflowAttributes(prompt_attributes(*workflows, attributes=attributes)):
        yield


@contextmanager
def use_prompt(prompt: Prompt) -> Iterator[Prompt]:
    """In workflow code: the steps called in this block use ``prompt``; each records its version (with
    the model and parameters) when it runs (``replaytest.prompts.use_prompt``, plus the object itself)."""
    token = _OBJECTS.set((*_OBJECTS.get(), prompt))
    try:
        with _use_prompt(prompt):
            yield prompt
    finally:
        _OBJECTS.reset(token)


def prompt_objects_in_use() -> dict[str, Prompt]:
    """``{name: Prompt}`` of the ``use_prompt`` blocks (this module's) around the running code."""
    return {prompt.name: prompt for prompt in _OBJECTS.get()}


def record_calls(enabled: bool = True) -> None:
    """Record (the default once this module is imported) or stop recording per-call prompt versions
    in this process."""
    _state["enabled"] = enabled
    if enabled and not _state["installed"]:
        _install()


def _install() -> None:
    _state["installed"] = True
    add_render_hook(_rendered)
    try:
        from replaytest.plugins.dbos import internals

        problem = internals.recording_problem()
        if problem is not None:
            log.warning("prompt versions per step are not recorded: %s", problem)
            return
        internals.on_step_start(_step_starts)
    except Exception as error:  # dbos not installed: nothing to record into
        log.debug("prompt versions per step are not recorded: %s: %s", type(error).__name__, error)


def _records_in_use() -> list[dict[str, Any]]:
    objects = prompt_objects_in_use()
    records = []
    for name, version in prompts_in_use():
        prompt = objects.get(name)
        records.append(prompt.record() if prompt is not None and prompt.full_version == version else {"name": name, "version": version})
    return records


def _step_starts(database: Any, workflow_id: str, function_id: int, step_name: str) -> None:
    """A step's body is about to run at ``function_id``: its rows become the prompts it is called with."""
    if not _state["enabled"]:
        return
    _write(database, workflow_id, function_id, _records_in_use(), replace_step=True)


def _rendered(prompt: Prompt) -> None:
    if not _state["enabled"]:
        return
    try:
        from dbos import DBOS

        workflow_id, step_id = DBOS.workflow_id, DBOS.step_id
        if not workflow_id or step_id is None:
            return  # not inside a step: the use_prompt block around the step call records it
        from replaytest.plugins.dbos import internals

        database = internals.live_system_database()
    except Exception as error:
        _warn_once("render", error)
        return
    if database is not None:
        _write(database, workflow_id, step_id, [prompt.record()], replace_step=False)


def _write(database: Any, workflow_id: str, function_id: int, records: list[dict[str, Any]], replace_step: bool) -> None:
    """Write ``records`` for the step; never raises (a failure is logged: the workflow goes on)."""
    if not records and not replace_step:
        return
    try:
        import sqlalchemy

        from replaytest.plugins.dbos import internals

        engine, schema = internals.system_database_engine(database)
        table = f'"{schema}".{TABLE}' if schema else TABLE
        with engine.begin() as connection:
            if id(engine) not in _state["tables"]:
                connection.execute(sqlalchemy.text(
                    f"CREATE TABLE IF NOT EXISTS {table} (workflow_uuid TEXT NOT NULL, function_id INTEGER NOT NULL, "
                    "name TEXT NOT NULL, prompt TEXT NOT NULL, PRIMARY KEY (workflow_uuid, function_id, name))"
                ))
            if replace_step:
                connection.execute(
                    sqlalchemy.text(f"DELETE FROM {table} WHERE workflow_uuid = :workflow_id AND function_id = :function_id"),
                    {"workflow_id": workflow_id, "function_id": function_id},
                )
            for record in records:
                connection.execute(
                    sqlalchemy.text(
                        f"INSERT INTO {table} (workflow_uuid, function_id, name, prompt) VALUES "
                        "(:workflow_id, :function_id, :name, :prompt) "
                        "ON CONFLICT (workflow_uuid, function_id, name) DO UPDATE SET prompt = excluded.prompt"
                    ),
                    {
                        "workflow_id": workflow_id, "function_id": function_id, "name": record["name"],
                        "prompt": json.dumps(record, sort_keys=True),
                    },
                )
        _state["tables"].add(id(engine))
    except Exception as error:
        _warn_once("write", error, f"workflow {workflow_id} function id {function_id}")


def _warn_once(where: str, error: BaseException, what: str = "") -> None:
    key = (where, type(error).__name__)
    level = logging.WARNING if key not in _state["warned"] else logging.DEBUG
    _state["warned"].add(key)
    log.log(
        level,
        "recording the prompt version of a DBOS step failed%s (%s: %s); the workflow goes on, and replay compares "
        "this step with the run's start manifest",
        f" for {what}" if what else "", type(error).__name__, error,
    )


record_calls()
