"""Per-call prompt records on LangGraph: the version each task call (or graph node) actually used,
written at call time into the thread's own checkpoint writes, under ids LangGraph never runs.

Two recording points, both active once ``replaytest.plugins.langgraph.prompts`` is imported:

* ``Prompt.render()`` (and ``use_prompt(P)`` entered) inside a running ``@task`` or graph node records
  ``P`` for that task (a task called from inside another task counts for the outermost one, the call
  the entrypoint made). A task LangGraph does not run again (its result is stored) keeps the record
  written when it ran; a task that runs again (its body was interrupted) records again, and the latest
  record is the one its stored result came from.
* ``use_prompt(P)`` around a task call in the entrypoint (or a node) records ``P`` for that call, by
  its call index: LangGraph derives the call's task id from it. The entrypoint runs again from the
  start on every resume and makes its calls again (answered from the stored results), so the earliest
  record of a call is the one of the invocation that ran it (the latest, for a call whose body was
  interrupted and ran again).

A record is one write on the thread's current checkpoint, channel ``RECORD_CHANNEL``, under a task id
of its own (``replaytest-prompt:<uuid>``: no LangGraph task has it, so no task's writes, results or
status change; LangGraph hands a checkpoint's writes only to the tasks whose ids they carry). Its value
is a JSON map: the prompt's ``Prompt.record()`` plus where it was used (``namespace``, ``task_id``, or
``scope`` and ``call_index``), how (``via``) and when (``at``, nanoseconds). Rendering in the
entrypoint's own body records nothing (it runs again on resume). Nothing here raises into the graph: a
record that cannot be written is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

from replaytest.plugins.langgraph import internals as lg
from replaytest.prompts import Prompt, add_render_hook, add_use_hook, prompt_objects_in_use

RECORD_CHANNEL = "__replaytest_prompt__"
RECORD_TASK_PREFIX = "replaytest-prompt:"
_log = logging.getLogger(__name__)
_pending: set[asyncio.Task[Any]] = set()  # records being written by an async saver


def install() -> None:
    """Register the render and ``use_prompt`` hooks (idempotent)."""
    add_render_hook(_on_render)
    add_use_hook(_on_use)


def _on_render(prompt: Prompt) -> None:
    try:
        task = lg.running_task()
        if task is not None and task.kind != "entrypoint":
            _write(task, _in_task(task, prompt, "render"))
    except Exception:  # noqa: BLE001 - recording never breaks the user's graph
        _log.debug("replaytest: a prompt record was not written", exc_info=True)


def _on_use(prompt: Prompt) -> None:
    try:
        task = lg.running_task()
        if task is None:
            return
        if task.kind != "entrypoint":
            _write(task, _in_task(task, prompt, "use_prompt"))
        # Task calls made in the block: recorded by call index (see the module docstring).
        lg.watch_task_calls(task.scratchpad, lambda index: _on_call(task, index))
    except Exception:  # noqa: BLE001
        _log.debug("replaytest: a prompt record was not written", exc_info=True)


def _on_call(task: lg.RunningTask, index: int) -> None:
    for prompt in prompt_objects_in_use():
        record = {**prompt.record(), "via": "call", "scope": task.namespace, "call_index": index, "at": time.time_ns()}
        _write(task, record)


def _in_task(task: lg.RunningTask, prompt: Prompt, via: str) -> dict[str, Any]:
    return {**prompt.record(), "via": via, "namespace": task.namespace, "task_id": task.task_id, "kind": task.kind,
            "at": time.time_ns()}


def _write(task: lg.RunningTask, record: dict[str, Any]) -> None:
    config = task.write_config()
    writes = [(RECORD_CHANNEL, record)]
    record_id = RECORD_TASK_PREFIX + uuid.uuid4().hex
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        if loop is not None:
            # An async graph: the saver's sync API would block (or refuse) on its own loop.
            pending = loop.create_task(task.saver.aput_writes(config, writes, record_id))
            _pending.add(pending)
            pending.add_done_callback(_done)
        else:
            task.saver.put_writes(config, writes, record_id)
    except Exception:  # noqa: BLE001
        _log.debug("replaytest: a prompt record was not written", exc_info=True)


def _done(pending: asyncio.Task[Any]) -> None:
    _pending.discard(pending)
    if not pending.cancelled() and pending.exception() is not None:
        _log.debug("replaytest: a prompt record was not written", exc_info=pending.exception())
