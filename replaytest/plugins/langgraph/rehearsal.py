"""Resume rehearsal for LangGraph functional-API threads: a thread parked at an ``interrupt()`` is resumed
by LangGraph itself, on the current ``@entrypoint``, from its recorded checkpoint restored into a scratch
``InMemorySaver``, with every task body stubbed.

Restoring: a parked thread's state is, in LangGraph's own storage, one *input* checkpoint (its id is the
history's run id, the input in channel ``__start__``, the earlier invocation's saved value in
``__previous__``) and the writes hanging off it: each completed ``@task`` call's ``__return__`` under the
task id the history recorded, and the entrypoint task's ``__interrupt__`` (and ``__resume__``, the answers
to the interrupts already resumed). The rehearsal writes exactly that into the scratch saver with
``put``/``put_writes``, asks LangGraph (``get_state``) which task it would run from that checkpoint — its
id is the one the interrupt is written under — and checks that the recorded task ids are the ones
LangGraph derives from the restored checkpoint for the recorded calls, and that LangGraph sees the thread
waiting at the recorded interrupt. Where either does not hold, the resume is not rehearsed (a note says
why): a restore LangGraph reads differently would rehearse another run.

Resuming: ``Command(resume=answer)`` through ``invoke`` on a copy of the current entrypoint given the
scratch saver, so LangGraph's own loop re-runs the entrypoint, answers each task call it has a recorded
result for from the restored writes and the ``interrupt()`` from the answer. The answer is one another
thread of the same entrypoint recorded for the same interrupt (by its number) in this replay batch
(``replay.rehearsal``), else the neutral answer ``""``; ``Rehearsal.delivered`` says which. Every
``@task`` object of the entrypoint's modules runs a stub instead of its body (``internals.stubbed_tasks``):
LangGraph calls a task's function only for a call it has no recorded result for, so the first stub called
is the first task LangGraph runs past the history; it records the name and raises a ``BaseException`` that
ends the run. No task body runs; the scratch saver is dropped. The entrypoint is given a replay store
(``internals.replay_store``) instead of its own: writes are discarded, and a read ends the rehearsal with a note.

The verdict: ``continues`` with the task(s) LangGraph scheduled, ``waits`` (LangGraph's state has the
thread at an interrupt again), ``completes`` (the entrypoint returned; or raised its own error, said in the
note), ``breaks`` (LangGraph's own error, or an effect of the entrypoint the runtime guards stopped).

Not rehearsed (a note says so): a thread running rather than parked, parked at an interrupt inside a task
body, with a recorded task failure, an ``async def`` entrypoint, or a history whose recorded task ids do
not derive from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from replaytest.history import Event, History
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.values import revive
from replaytest.replay.divergence import CommandView, Rehearsal, SourcePosition, short_value
from replaytest.replay.rehearsal import recorded_signal, remember_signal

ENGINE = "langgraph"
NEUTRAL_ANSWER = ""
_THREAD = "replaytest-rehearsal"
# How reports word a functional-API task call (its neutral kind stays ``step``; see ``CommandView.kind_text``).
TASK_LABEL: Mapping[str, Any] = MappingProxyType({"kind_label": "task"})
# Input checkpoint steps tried when the thread had earlier invocations (the step is not in the history).
_MAX_STEP = 512


def driver() -> str:
    return f"LangGraph {lg.installed_version()} (invoke with Command(resume=...)) on a scratch InMemorySaver"


def interrupt_key(number: int) -> str:
    """The name a thread's ``number``-th interrupt (1-based) is remembered under for the batch."""
    return f"interrupt #{number}"


def _interrupt_number(event: Event, ordinal: int) -> int:
    index = event.extra.get("interrupt_index")
    return index + 1 if isinstance(index, int) else ordinal


def remember_answers(history: History) -> None:
    """Offer the answers this thread gave its interrupts to the rehearsals of its batch."""
    ordinal = 0
    for event in history.events:
        if event.kind == "signal" and event.name == "interrupt":
            ordinal += 1
            if event.extra.get("pending") is not True and (event.result is not None or event.result_ref is not None):
                number = _interrupt_number(event, ordinal)
                remember_signal(ENGINE, history.workflow.type, interrupt_key(number), history.event_result(event))


def _unsupported(history: History, bound: Any) -> str | None:
    """Why this thread's resume cannot be rehearsed, None when it can."""
    pending = [e for e in history.events if e.kind == "signal" and e.name == "interrupt" and e.extra.get("pending") is True]
    if history.status != "parked" or not pending:
        return "the thread is not parked at a recorded interrupt (only parked functional-API threads are rehearsed)"
    if pending[-1].extra.get("task") is not None:
        return "the thread is parked at an interrupt inside a task body, whose restore is not rehearsed"
    if any(e.kind == "step" and e.error is not None for e in history.events):
        return "the thread recorded a task failure, which the rehearsal does not restore"
    if lg.is_async_entrypoint(bound):
        return "async entrypoints are not rehearsed"
    if not history.workflow.run_id:
        return "the history does not record the thread's checkpoint id (its run id)"
    return None


class _Restored:
    """The thread's input checkpoint and writes in a scratch ``InMemorySaver``."""

    def __init__(self, history: History, graph: Any, entrypoint: str) -> None:
        from langgraph.checkpoint.memory import InMemorySaver

        self.history = history
        self.entrypoint = entrypoint
        self.saver = InMemorySaver()
        # Given a replay store instead of the entrypoint's own: the rehearsal never reaches a user's store.
        self.graph = lg.without_store(graph, lg.replay_store()).copy(update={"checkpointer": self.saver})
        self.config: dict[str, Any] = {"configurable": {"thread_id": _THREAD}}
        self.version = lg.checkpoint_version()
        self.tasks = [e for e in history.events if e.kind == "step"]
        self.resumes = [revive(history.event_result(e)) for e in history.events
                        if e.kind == "signal" and e.name == "interrupt" and e.extra.get("pending") is not True]
        self.pending = next(e for e in history.events if e.kind == "signal" and e.extra.get("pending") is True)
        self.previous = next((revive(history.event_result(e)) for e in history.events
                              if e.kind == "side-effect" and e.name == "previous"), None)
        self.has_previous = any(e.kind == "side-effect" and e.name == "previous" for e in history.events)

    def _step(self) -> int | None:
        """The input checkpoint's step: -1 for a thread's first invocation; for a later one, the step whose
        task ids are the recorded ones (None when no recorded task call says)."""
        if not self.has_previous:
            return -1
        first = next((e for e in self.tasks if isinstance(e.extra.get("task_id"), str)), None)
        if first is None:
            return None
        run_id = self.history.workflow.run_id or ""
        for step in range(-1, _MAX_STEP):
            entry_id = lg.entry_task_id(run_id, self.version, self.entrypoint, step + 1)
            if lg.call_task_id(run_id, self.version, self.entrypoint, entry_id, step + 1, first.name,
                               first.extra.get("call_index", 0)) == first.extra["task_id"]:
                return step
        return None

    def restore(self) -> str | None:
        """Write the checkpoint and its writes; None when LangGraph reads them as recorded, else why not."""
        step = self._step()
        if step is None:
            return "could not work out the step of the thread's latest input checkpoint from its recorded task ids"
        run_id = self.history.workflow.run_id or ""
        values: dict[str, Any] = {lg.START: revive(self.history.input)}
        if self.has_previous:
            values[lg.PREVIOUS] = self.previous
        versions: dict[str, Any] = {name: self.saver.get_next_version(None, None) for name in values}
        checkpoint = {
            "v": self.version, "id": run_id, "ts": "1970-01-01T00:00:00+00:00", "channel_values": values,
            "channel_versions": versions, "versions_seen": {"__input__": {}}, "updated_channels": sorted(values),
        }
        saved = self.saver.put({"configurable": {"thread_id": _THREAD, "checkpoint_ns": ""}}, checkpoint,  # type: ignore[arg-type]
                               {"source": "input", "step": step, "parents": {}}, versions)
        state = self.graph.get_state(self.config)
        if len(state.tasks) != 1 or state.tasks[0].name != self.entrypoint:
            return f"LangGraph would run {[t.name for t in state.tasks]} from the restored checkpoint, not the entrypoint"
        entry_id = state.tasks[0].id
        for index, event in enumerate(self.tasks):
            recorded = event.extra.get("task_id")
            derived = lg.call_task_id(run_id, self.version, self.entrypoint, entry_id, step + 1, event.name,
                                      event.extra.get("call_index", index))
            if recorded is not None and recorded != derived:
                return (f"task call {event.name!r} (event #{event.seq}) was recorded under task id {recorded}, not the "
                        f"{derived} LangGraph derives from the restored checkpoint")
            self.saver.put_writes(saved, [(lg.RETURN, revive(self.history.event_result(event)))], recorded or derived)
        if self.resumes:
            self.saver.put_writes(saved, [(lg.RESUME, list(self.resumes))], entry_id)
        value = revive(self.pending.extra.get("interrupt_value"))
        self.saver.put_writes(saved, [(lg.INTERRUPT, [lg.interrupt_for(value, self.entrypoint, entry_id)])], entry_id)
        if not self.graph.get_state(self.config).interrupts:
            return "LangGraph does not see the restored thread waiting at an interrupt"
        return None

    def answer(self) -> tuple[Any, str]:
        """The answer to resume with, and how ``delivered`` says it."""
        ordinal = sum(1 for e in self.history.events if e.kind == "signal" and e.name == "interrupt")
        number = _interrupt_number(self.pending, ordinal)
        found, answer = recorded_signal(ENGINE, self.history.workflow.type, interrupt_key(number))
        if found:
            return revive(answer), (f"Command(resume={short_value(answer, 80, str)}): the answer another thread recorded "
                                    f"for interrupt #{number}")
        return NEUTRAL_ANSWER, (f"Command(resume={NEUTRAL_ANSWER!r}): no thread of the batch recorded an answer to "
                                f"interrupt #{number}, a neutral one was given")


def rehearse(history: History, graph: Any, bound: Any, entrypoint: str, namespaces: list[dict[str, Any]],
             project_prefixes: tuple[str, ...] = ()) -> tuple[Rehearsal | None, str | None]:
    """Resume the parked thread of ``history`` with LangGraph on ``graph`` (the current ``@entrypoint``,
    named ``entrypoint``; ``bound`` its node's runnable), task bodies of ``namespaces`` stubbed. Returns the
    rehearsal, or None and the note saying why it was not made. Call it under the runtime guards."""
    from langgraph.types import Command

    from replaytest.plugins.langgraph.replayer import project_raise_site

    why = _unsupported(history, bound)
    if why is not None:
        return None, f"resume not rehearsed: {why}"
    restored = _Restored(history, graph, entrypoint)
    why = restored.restore()
    if why is not None:
        return None, f"resume not rehearsed: the thread's checkpoint could not be restored faithfully ({why})"
    answer, delivered = restored.answer()
    scheduled: list[str] = []
    raised: BaseException | None = None
    with lg.stubbed_tasks(namespaces, scheduled.append):
        try:
            restored.graph.invoke(Command(resume=answer), restored.config)
        except BaseException as error:  # noqa: BLE001 - the stub's stop, a guard's stop, or the run's error
            raised = error
    source: SourcePosition | None = project_raise_site(raised, project_prefixes) if raised is not None else None
    if scheduled:
        commands = tuple(CommandView("step", name, detail=TASK_LABEL) for name in dict.fromkeys(scheduled))
        return Rehearsal("continues", delivered, commands, (), None, source, driver()), None
    if isinstance(raised, lg.StoreRead):
        at = f" at {source.path}:{source.line}" if source is not None else ""
        return None, (f"resume not rehearsed: the resumed entrypoint reads LangGraph's store ({raised.operation}){at}, "
                      "which the rehearsal does not give it (no checkpoint keeps store values)")
    if raised is not None and not isinstance(raised, Exception):
        raise raised  # a guard's stop (NondeterministicCall), KeyboardInterrupt: the caller's
    if raised is not None:
        text = f"{type(raised).__name__}: {raised}"
        if type(raised).__module__.split(".")[0] == "langgraph":
            return Rehearsal("breaks", delivered, (), (), text, source, driver()), None
        return Rehearsal("completes", delivered, (), (), None, source, driver(),
                         note=f"the run fails on resume: {text}"), None
    state = restored.graph.get_state(restored.config)
    if state.interrupts:
        return Rehearsal("waits", delivered, (), (), None, None, driver()), None
    return Rehearsal("completes", delivered, (), (), None, None, driver()), None
