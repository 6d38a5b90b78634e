"""Replaying Restate histories (neutral histories of engine ``restate``) through the Restate SDK itself.

``RestateReplayer`` finds the current handler of the history's type (``service/handler``) among the services,
virtual objects and workflows ``replay_workflows`` names, directly or as served (an endpoint, the ASGI app,
a module, a list: ``internals.served_services``; a named object serving none is refused), rebuilds the recorded journal as the protocol
messages the server sent (``values``) and runs the handler on the SDK's own state machine (``internals``),
input closed, so it answers only from the journal; the start message carries the random seed the server
derives from the invocation id, so ``ctx.random()`` and ``ctx.uuid()`` draw what the invocation drew. The state machine decides what diverges, as it would
when the server replays the invocation; ``replaytest.replay.engine.Matcher`` walks the recorded commands
beside it for the report (positions are commands, 1 = the first after the input):

* a command the state machine refuses (journal mismatch, code 570) → ``command-mismatch`` naming the
  recorded and the issued command and the handler line that issued it (``args-mismatch`` when both are the
  same command, a call's argument or a state value having changed);
* a command past the recorded ones: a running or suspended invocation would resume there, so the replay
  stops and passes ("reached the end of the history") before anything new runs; a completed one reports
  ``extra-command``. A ``ctx.run`` body never runs: a recorded one returns its recorded result, an
  unrecorded one is where the replay stops;
* the handler returning before every recorded command → ``missing-command``; another output or failure than
  recorded → ``result-mismatch``.

The handler runs under the runtime guards, as other engines' replays do: a clock, random or uuid read in it
is a ``nondeterministic-call`` hazard and the replay goes on; a socket, process or file write is stopped and
reported at its line. Restate journals store no ``ctx.run`` arguments and no prompt versions; the summary
says so in notes.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, NoReturn

from replaytest.history import Event, History
from replaytest.plugins.restate import values
from replaytest.plugins.restate.importer import command_name
from replaytest.plugins.restate.internals import JOURNAL_MISMATCH, UNSUPPORTED_FEATURE
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import Divergence, ReplayResult, SourcePosition, short_value, value_text
from replaytest.replay.engine import (
    NO_PROMPTS_NOTE,
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    RecordedEvents,
    check_pending_prompts,
)
from replaytest.replay.guards import (
    NondeterministicCall,
    guarded,
    hazard_message,
    is_project_file,
    orchestration_modules,
    settle_hazards,
)

ENGINE = "restate"
# Journal messages are the same from service protocol 4 on; 6 is what restate-server 1.7 pins for the SDK,
# the version a history that does not say which it was pinned to is replayed with. An invocation pinned to
# another (7, with the server's experimental flow control: calls within a scope) is replayed with its own,
# so code the server would refuse under the recorded version is refused here too.
PROTOCOL_VERSION = 6
NO_ARGUMENTS_NOTE = "Restate journals store no ctx.run arguments: step arguments were not compared"
UNSEEDED_RANDOM_NOTE = (
    "the history's id is not a Restate invocation id, from which the server seeds ctx.random() and ctx.uuid(): "
    "the values the handler drew now are not the ones the invocation drew, and were not compared"
)


class CannotReplay(BaseException):
    """The journal or the state machine's answer cannot be replayed faithfully (the message says why)."""


def _issuing_line() -> SourcePosition | None:
    """The innermost project line on the stack: the handler line that issued the command."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        if is_project_file(frame.f_code.co_filename):
            return SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def _mismatch_detail(message: str) -> str:
    """The state machine's own account of a mismatch, on one line."""
    lines = [line.strip(" -") for line in message.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith(("The previous", "The current", "Related command"))]
    return "; ".join(useful) if useful else (lines[0] if lines else message)


class _Replay:
    """The ``CommandObserver`` of one replay: matches each accepted command against the recorded ones."""

    def __init__(self, history: History, matcher: Matcher) -> None:
        self.history = history
        self.matcher = matcher
        self.outcome: tuple[bytes | None, tuple[int, str] | None] | None = None
        self.refused_body: str | None = None  # a ctx.run body the SDK wanted to run (it did not)
        self.drew_random = False  # the handler used ctx.random() or ctx.uuid()
        self.signal_awaited: str | None = None  # the named signal the handler waits for, since its last command

    def _issued(self, entry_type: str | None, text: dict[int, str]) -> Issued | None:
        if entry_type is None:
            return None
        kind, name = command_name(entry_type, text)
        return Issued(kind, name, source=_issuing_line())

    def command(self, entry_type: str, text: dict[int, str], result_recorded: bool = True) -> None:
        issued = self._issued(entry_type, text)
        assert issued is not None
        self.signal_awaited = None
        self.matcher.issue(issued)
        if not result_recorded:
            # The journal has the step but not its result (its attempt was still running or being retried):
            # the SDK would run the body now, which is where an unfinished invocation resumes.
            if self.matcher.resumable:
                raise ReachedEnd()
            raise CannotReplay(
                f"the journal records ctx.run {issued.name!r} without its result, in a {self.history.status} invocation"
            )

    def rejected(self, entry_type: str | None, text: dict[int, str], code: int | None, message: str) -> NoReturn:
        issued = self._issued(entry_type, text)
        matcher = self.matcher
        if code == UNSUPPORTED_FEATURE and issued is not None:
            # The server fails such an attempt with a retryable error and retries it until the code changes:
            # the invocation is stuck, as surely as on a journal mismatch.
            first = message.splitlines()[0] if message else ""
            raise DivergenceFound(matcher.divergence(
                "command-mismatch",
                f"the code issued {issued.kind} {issued.name!r} with a feature the protocol version the invocation is "
                f"pinned to lacks; Restate fails the invocation and retries it until the code changes ({first})",
                issued, matcher.events[matcher.index] if matcher.index < len(matcher.events) else None, source=issued.source,
            ))
        if code != JOURNAL_MISMATCH:
            first = message.splitlines()[0] if message else ""
            raise CannotReplay(f"Restate's state machine failed (code {code}): {first}")
        recorded = matcher.events[matcher.index] if matcher.index < len(matcher.events) else None
        detail = _mismatch_detail(message)
        if issued is None and self.signal_awaited is not None:
            kind = "command-mismatch"
            text_message = (
                f"the code now waits for signal {self.signal_awaited!r}, which the invocation did not receive here; "
                f"Restate's state machine found the journal does not match the code ({detail})"
            )
            source = matcher.last_source
        elif issued is None:
            kind = "command-mismatch"
            text_message = f"Restate's state machine found the journal does not match the code: {detail}"
            source = matcher.last_source
        elif recorded is None:
            kind = "extra-command"
            text_message = f"the code issued {issued.kind} {issued.name!r} after the last recorded command ({detail})"
            source = issued.source
        elif (recorded.kind, recorded.name) == (issued.kind, issued.name):
            kind = "args-mismatch"
            text_message = (
                f"the code issued {issued.kind} {issued.name!r} as recorded but with other contents (a call's "
                f"argument or key, a state value); Restate rejects the journal ({detail})"
            )
            source = issued.source
        else:
            kind = "command-mismatch"
            text_message = (
                f"the code issued {issued.kind} {issued.name!r} where the history recorded {recorded.kind} "
                f"{recorded.name!r}; Restate rejects the journal ({detail})"
            )
            source = issued.source
        raise DivergenceFound(matcher.divergence(kind, text_message, issued, recorded, source=source))

    def output(self, value: bytes | None, failure: tuple[int, str] | None) -> None:
        self.matcher.finish()  # the recorded commands the handler no longer reached: missing-command
        self.outcome = (value, failure)

    def suspended(self) -> NoReturn:
        if self.matcher.resumable:
            raise ReachedEnd()
        raise DivergenceFound(
            self.matcher.divergence(
                "extra-command",
                f"the code waits for a completion (an awakeable, a promise, a call's result) this {self.history.status} "
                "history never received",
                source=self.matcher.last_source,
            )
        )

    def step_body(self, name: str) -> None:
        self.refused_body = name

    def waits_for_signal(self, name: str) -> None:
        self.signal_awaited = name
        self.matcher.last_source = _issuing_line()

    def random_drawn(self) -> None:
        self.drew_random = True


def _served(workflows: WorkflowSet, internals: Any) -> tuple[list[Any], list[str]]:
    """The services the named objects serve, and each named object that serves none (its spec and type).

    Objects that serve nothing are refused only when the history's handler is not found among the others:
    a project replaying several engines names other engines' workflows in the same list."""
    services: list[Any] = []
    unserved: list[str] = []
    origins = list(workflows.origins) + ["?"] * (len(workflows.objects) - len(workflows.origins))
    for obj, origin in zip(workflows.objects, origins):
        served = internals.served_services(obj)
        if served is None:
            unserved.append(f"{origin!r} ({_kind_of(obj)})")
        else:
            services.extend(served)
    return services, unserved


def _kind_of(obj: Any) -> str:
    """What a named object is, in words: ``a module``, ``a list``, ``a function``, ``a str``."""
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__!r}, holding no Restate service, endpoint or app"
    if isinstance(obj, (list, tuple)):
        return f"a {type(obj).__name__} of {', '.join(sorted({type(item).__name__ for item in obj})) or 'nothing'}"
    if isinstance(obj, types.FunctionType):
        return f"function {obj.__qualname__}, not an app restate.app(...) made"
    return f"a {type(obj).__module__}.{type(obj).__qualname__}"


def _recorded(event: Event) -> Recorded:
    return Recorded(seq=event.seq, kind=event.kind, name=event.name, payload=event)


def journal_bytes(history: History) -> bytes:
    """The start message and the recorded entries as the server sends them; ``CannotReplay`` naming the
    JSON path of an entry that cannot be rebuilt."""
    document = history.input if isinstance(history.input, dict) else {}
    argument = document.get("argument", {"empty": True})
    key = document.get("key") if isinstance(document.get("key"), str) else None
    try:
        framed = [values.join_entry(values.input_entry(argument if isinstance(argument, dict) else {"json": argument}))]
    except values.WireError as error:
        raise CannotReplay(f"$.input.argument: {error}") from None
    for position, event in enumerate(history.events):
        journal = event.extra.get("journal")
        if not isinstance(journal, list) or not journal:
            raise CannotReplay(f"$.events[{position}].journal: no recorded journal entries for {event.kind} {event.name!r}")
        for index, entry in enumerate(journal):
            try:
                framed.append(values.join_entry(entry))
            except values.WireError as error:
                raise CannotReplay(f"$.events[{position}].journal[{index}]: {error}") from None
    return values.start_message(history.workflow.id, len(framed), key) + b"".join(framed)


class RestateReplayer(NeutralReplayer):
    """The ``HistoryReplayer`` for neutral histories of engine ``restate``."""

    engine = ENGINE

    def replay_history(self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None) -> ReplayResult:
        result = self.new_result(history, path)
        result.run_status = history.status
        if result.status == "error":
            return result
        path = result.history_path
        from replaytest.plugins.restate import internals

        problem = internals.check_version()
        if problem is not None:
            result.status, result.error = "error", problem
            return result
        services, unserved = _served(workflows, internals)
        service_name, _, handler_name = history.workflow.type.partition("/")
        handler, known = internals.find_handler(services, service_name, handler_name)
        if handler is None and unserved:
            # What was named serves nothing Restate knows: a configuration mistake, not a removed handler.
            result.status = "error"
            result.error = (
                f"replay_workflows names {'; '.join(unserved)}, which serves no Restate handler: name the ASGI app "
                "restate.app(services=[...]) returns, an Endpoint, a Service, VirtualObject or Workflow, a module "
                "holding them, or a list of those"
            )
            return result
        if handler is None:
            result.status = "stale"
            result.error = (
                f"no current Restate handler {history.workflow.type!r}; known: "
                f"{', '.join(known) or 'none (name the services in replay_workflows)'}"
            )
            return result
        try:
            divergence = self._run(history, handler, options, result)
        except CannotReplay as error:
            result.status, result.error = "error", f"{path}: cannot replay: {error}"
            return result
        result.notes.extend((NO_ARGUMENTS_NOTE, NO_PROMPTS_NOTE))
        check_pending_prompts(result, history.status, history.prompt_manifest, {}, (), options)
        if divergence is not None:
            result.status, result.divergence = "diverged", divergence
        return result

    def _run(self, history: History, handler: Any, options: ReplayOptions, result: ReplayResult) -> Divergence | None:
        from replaytest.plugins.restate import internals

        journal = journal_bytes(history)
        matcher = Matcher(RecordedEvents(history.events, _recorded), history.status, options)
        replay = _Replay(history, matcher)
        modules = orchestration_modules([internals.handler_function(handler)])
        with guarded(modules, matcher.next_position) as guard:
            divergence = self._drive(handler, journal, history, matcher, replay)
        result.warnings = matcher.warnings
        if replay.drew_random and values.invocation_id_bytes(history.workflow.id) is None:
            result.notes.append(UNSEEDED_RANDOM_NOTE)
        return settle_hazards(result, divergence, guard.trips, lambda trip: _hazard(matcher, trip), options.hazards)

    def _drive(self, handler: Any, journal: bytes, history: History, matcher: Matcher, replay: _Replay) -> Divergence | None:
        divergence = self._drive_handler(handler, journal, history, matcher, replay)
        if replay.refused_body is not None:
            raise CannotReplay(f"the SDK was about to run the body of ctx.run {replay.refused_body!r} (it did not run)")
        return divergence

    def _drive_handler(
        self, handler: Any, journal: bytes, history: History, matcher: Matcher, replay: _Replay
    ) -> Divergence | None:
        from replaytest.plugins.restate import internals

        try:
            internals.run_handler(handler, journal, history.workflow.protocol_version or PROTOCOL_VERSION, replay)
        except DivergenceFound as found:
            return found.divergence
        except internals.JournalRefused as refused:
            raise CannotReplay(str(refused)) from None
        except (ReachedEnd, NondeterministicCall):
            return None  # the end of an unfinished invocation's journal; a stopped effect is reported as a hazard
        except Exception as raised:  # the handler's own failure, not a terminal error
            if matcher.resumable:
                return None  # Restate retries a failed attempt of an unfinished invocation from here
            return matcher.divergence(
                "result-mismatch",
                f"the handler now raises {type(raised).__name__}: {raised}; the history {history.status}",
                source=_raise_site(raised) or matcher.last_source,
            )
        if replay.outcome is None:
            return None  # the run stopped where an unfinished invocation resumes
        return _check_outcome(matcher, history, *replay.outcome)


# Restate has no patch API: an invocation stays on the deployment it started on.
_VERSION_GUARD = (
    "register the changed code as a new deployment: Restate keeps running invocations on the deployment they "
    "started on"
)


def _hazard(matcher: Matcher, trip: NondeterministicCall) -> Divergence:
    from replaytest.plugins.restate.profile import PROFILE

    instead = PROFILE.replacements.get(trip.category, "ctx.run(...)")
    return matcher.divergence(
        "nondeterministic-call", hazard_message(trip, instead, _VERSION_GUARD), source=trip.source, position=trip.position
    )


def _raise_site(error: BaseException) -> SourcePosition | None:
    traceback = error.__traceback__
    site = None
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if is_project_file(code.co_filename):
            site = SourcePosition(code.co_filename, traceback.tb_lineno, code.co_name)
        traceback = traceback.tb_next
    return site


def _check_outcome(matcher: Matcher, history: History, value: bytes | None, failure: tuple[int, str] | None) -> Divergence | None:
    where = matcher.last_source
    if history.status == "completed":
        if failure is not None:
            return matcher.divergence("result-mismatch", f"the handler now fails with [{failure[0]}] {failure[1]}; the history completed", source=where)
        try:
            now = values.payload_value(values.decode_payload(value or b""))
        except values.WireError as error:
            raise CannotReplay(f"the handler's output: {error}") from None
        if value_text(now) != value_text(history.result):
            return matcher.divergence(
                "result-mismatch",
                f"the handler now returns {short_value(now)}; the history recorded {short_value(history.result)}",
                source=where,
            )
    if history.status == "failed":
        recorded = history.error.message if history.error else "an error"
        if failure is None:
            return matcher.divergence("result-mismatch", f"the handler now returns where the history failed with {recorded}", source=where)
        if history.error is not None and failure[1] != history.error.message:
            return matcher.divergence(
                "result-mismatch", f"the handler now fails with {failure[1]!r}; the history failed with {recorded!r}", source=where
            )
    return None


