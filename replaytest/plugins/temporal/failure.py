"""Turning temporalio's replay failures into replaytest ``Divergence`` objects.

temporalio's Replayer reports a failed replay as a ``NondeterminismError`` (sdk-core found a command
that does not fit the history) or a ``RuntimeError`` (the workflow task failed in Python: a sandbox
violation such as ``datetime.now()``, or an exception raised by the workflow code). Both carry sdk-core's
text, e.g. ``[TMPRL1100] Nondeterminism error: Timer machine does not handle this event:
HistoryEvent(id: 5, ActivityTaskScheduled)``, usually wrapped in the debug print of a ``Failure``. This
module parses that text (older SDKs omit the ``[TMPRL1100]`` code) and names the divergence in
DESIGN's kinds, with the recorded side read from the history JSON itself; then it adds the line of
workflow code from what the replay traced (``temporal.trace``): the issued command's, or, where the code
issued nothing, the patch call or command in a marker's place and the condition it still waits in, and
the handlers of the recorded signals and updates.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replaytest.plugins.temporal.history import (
    TERMINAL_KINDS,
    command_views,
    event_type,
    event_view,
    find_event,
    issued_by_code,
)
from replaytest.replay.divergence import CommandView, Divergence, SourcePosition

if TYPE_CHECKING:
    from replaytest.plugins.temporal.trace import IssuedCommand, WorkflowTrace

# sdk-core's state machine names (``<name> machine does not handle this event``) → the command kind.
_MACHINE_KINDS: Mapping[str, str] = {
    "activity": "activity",
    "local activity": "local-activity",
    "timer": "timer",
    "complete workflow": "complete",
    "fail workflow": "fail",
    "cancel workflow": "cancel",
    "continue as new workflow": "continue-as-new",
    "child workflow": "child-workflow",
    "signal external wf": "signal-external",
    "cancel external wf": "cancel-external",
    "change": "patch",
    "update": "update",
    "nexus operation": "nexus-operation",
    "upsert workflow search attributes": "search-attributes",
    "modify workflow properties": "memo",
}

_KIND_VERBS: Mapping[str, str] = {
    "activity": "scheduled activity",
    "local-activity": "ran local activity",
    "timer": "started timer",
    "patch": "recorded patch marker",
    "marker": "recorded marker",
    "child-workflow": "started child workflow",
    "signal-external": "signalled external workflow",
    "cancel-external": "requested cancellation of workflow",
    "complete": "completed the workflow",
    "fail": "failed the workflow",
    "cancel": "cancelled the workflow",
    "continue-as-new": "continued as new",
    "signal": "received signal",
    "nexus-operation": "scheduled Nexus operation",
    "update": "accepted update",
    "search-attributes": "upserted search attributes",
    "memo": "upserted memo",
}

# sdk-core prints an event as ``HistoryEvent(id: 5, ActivityTaskScheduled)``, or (newer releases, its debug
# print) as ``HistoryEvent { event_id: 5, event_time: …, event_type: ActivityTaskScheduled, … }``.
_EVENT = (r"HistoryEvent(?:\(id: (?P<id>\d+), (?P<type>\w+)\)"
          r"| \{ event_id: (?P<id2>\d+), (?:[^{}]|\{[^{}]*\})*?event_type: (?P<type2>\w+))")
# Most machines say ``Timer machine does not handle this event: …``; some say ``ModifyWorkflowPropertiesMachine
# does not handle HistoryEvent(…)`` (their type name, CamelCase, with no "this event").
_UNHANDLED_RE = re.compile(
    r"(?P<machine>[A-Za-z ]+?) ?[Mm]achine (?:does not|cannot) handle (?:this event: )?" + _EVENT
)
_NO_COMMAND_RE = re.compile(r"No command scheduled for event " + _EVENT)
_NAME_MISMATCH_RE = re.compile(
    r"(?P<what>Activity type|Activity id|Child workflow type|Child workflow id|Nexus operation service|Nexus operation)"
    r" of (?:scheduled event|recorded marker) '(?P<recorded>.*?)' does not match .*?command '(?P<issued>.*?)'",
    re.DOTALL,
)
_TIMER_ID_RE = re.compile(r"Timer fired event did not have expected timer id (?P<recorded>\S+), it was (?P<issued>\S+?)!")
_PATCH_GONE_RE = re.compile(r"Non-deprecated patch marker encountered for change (?P<patch>.+?), but there is no corresponding")
_PATCH_ID_RE = re.compile(r"Change id (?P<issued>.+?) does not match expected id (?P<recorded>.+)")
_LOCAL_RESULT_RE = re.compile(r"Local activity \(seq \d+\) (?:completed successfully locally, but history said it failed|failed locally, but history said it completed)")
_SANDBOX_RE = re.compile(r"Cannot access (?P<call>[\w.]+?)(?P<called>\.__call__)? from inside a workflow")
# Deterministic replacements the Temporal SDK offers for what its sandbox stops most often.
_SANDBOX_ADVICE: Mapping[str, str] = {
    "datetime.datetime.now": "workflow.now()",
    "datetime.datetime.utcnow": "workflow.now()",
    "datetime.date.today": "workflow.now().date()",
    "time.time": "workflow.time()",
    "time.time_ns": "workflow.time_ns()",
    "uuid.uuid4": "workflow.uuid4()",
    "uuid.uuid1": "workflow.uuid4()",
}
_FRAME_RE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>[^\s\\]+)')
_FAILURE_TYPE_RE = re.compile(r'ApplicationFailureInfo \{ r#type: "(?P<type>[^"]*)"')
_REASON_RE = re.compile(r"^(?P<reason>\d+|[A-Z_]+): ")
_LANG_FAIL = ("4", "LANG_FAIL")
# Issued command kinds ``temporal.trace`` can name: through a workflow outbound interceptor, and timers
# and patch markers as the workflow instance adds them (``WorkflowTrace``).
TRACEABLE_KINDS: frozenset[str] = frozenset({
    "activity", "local-activity", "child-workflow", "signal-external", "continue-as-new", "timer", "patch",
    "search-attributes", "memo", "nexus-operation",
})
# Of those, the kinds only ``WorkflowTrace`` sees (no outbound interceptor call carries them).
INSTANCE_TRACED_KINDS: frozenset[str] = frozenset({"timer", "patch", "search-attributes", "memo", "nexus-operation"})
# Command kinds of the trace (``temporal.trace``) that leave an event of their own in the history, by the
# same names as ``temporal.history``'s views; the others (update responses are protocol messages, query
# answers, cancellations of local activities, signals and children) are not counted when aligning.
_EVENT_COMMAND_KINDS = frozenset({
    "activity", "local-activity", "timer", "timer-cancel", "activity-cancel", "patch", "child-workflow",
    "signal-external", "cancel-external", "search-attributes", "memo", "nexus-operation", "complete",
    "fail", "cancel", "continue-as-new",
})


@dataclass(frozen=True)
class Located:
    """How to find the recorded event a message did not number: the kind and name the history holds."""

    kind: str
    name: str


def core_message(text: str) -> str:
    """sdk-core's own message out of the Python exception text, without the ``[TMPRL1100]`` code and
    the ``Nondeterminism error:`` prefix."""
    inner = _failure_field(text, "message")
    message = inner if inner is not None else text
    message = re.sub(r"^\s*\[TMPRL\d+\]\s*", "", message)
    return re.sub(r"^\s*Nondeterminism error:\s*", "", message).strip()


def _failure_field(text: str, field: str) -> str | None:
    """The first ``field: "…"`` string of a Rust debug-printed struct, unescaped."""
    start = text.find(f'{field}: "')
    if start < 0:
        return None
    i = start + len(field) + 3
    out = []
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(nxt, nxt))
            i += 2
            continue
        if char == '"':
            return "".join(out)
        out.append(char)
        i += 1
    return "".join(out)


def describe_recorded(view: CommandView | None) -> str:
    if view is None:
        return "nothing"
    verb = _KIND_VERBS.get(view.kind, f"recorded {view.kind}")
    name = view.detail.get("patch_id") if view.kind == "patch" else view.name
    text = f"{verb} {name!r}" if name and view.kind not in TERMINAL_KINDS else verb
    if view.kind == "timer" and view.detail.get("duration"):
        text += f" ({view.detail['duration']})"
    return text


def describe_issued(view: CommandView | None) -> str:
    if view is None:
        return "issues nothing here"
    if view.kind == "patch":
        patch_id = view.detail.get("patch_id")
        return f"calls workflow.patched({patch_id!r})" if patch_id else "calls workflow.patched()"
    phrases = {
        "activity": "schedules activity",
        "local-activity": "runs local activity",
        "timer": "starts a timer",
        "child-workflow": "starts child workflow",
        "signal-external": "signals an external workflow",
        "cancel-external": "cancels an external workflow",
        "complete": "completes the workflow",
        "fail": "fails the workflow",
        "cancel": "cancels the workflow",
        "continue-as-new": "continues as new",
        "update": "handles an update",
        "nexus-operation": "schedules a Nexus operation",
        "search-attributes": "upserts search attributes",
        "memo": "upserts the memo",
    }
    phrase = phrases.get(view.kind, f"issues {view.kind}")
    return f"{phrase} {view.name!r}" if view.name else phrase


@dataclass
class Classified:
    """Either a divergence (``divergence`` set) or a reason the replay could not run (``error``).
    ``locate`` asks the caller to find the event by replaying prefixes when the message gave no id."""

    divergence: Divergence | None = None
    error: str | None = None
    locate: Located | None = None


def classify(
    failure: BaseException,
    events: Sequence[Mapping[str, Any]],
    run_source: SourcePosition | None,
    *,
    nondeterminism: bool,
    context_radius: int = 3,
) -> Classified:
    """Name the divergence that ``failure`` (a replay failure from temporalio) reports for ``events``.

    ``nondeterminism`` says whether temporalio raised ``NondeterminismError``; otherwise the failure is
    a workflow task failure (a ``RuntimeError`` whose text starts with the eviction reason).
    """
    text = str(failure)
    message = core_message(text)
    if not nondeterminism:
        return _task_failure(text, message, events, run_source, context_radius)
    builder = _Builder(events, run_source, message, context_radius)

    match = _UNHANDLED_RE.search(message)
    if match:
        machine = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", match["machine"].strip()).lower()  # CamelCase to words
        issued_kind = _MACHINE_KINDS.get(machine, machine)
        position = int(match["id"] or match["id2"])
        recorded = builder.recorded_at(position, match["type"] or match["type2"])
        issued = CommandView(issued_kind, "", position=position)
        return Classified(builder.command_divergence(recorded, issued, position))

    match = _NO_COMMAND_RE.search(message)
    if match:
        position = int(match["id"] or match["id2"])
        recorded = builder.recorded_at(position, match["type"] or match["type2"])
        return Classified(builder.build("missing-command", position, recorded, None,
                                        f"history event {position} {describe_recorded(recorded)}, the code now issues no command there"))

    match = _PATCH_GONE_RE.search(message)
    if match:
        patch = match["patch"]
        patch_event = builder.first_patch(patch)
        patch_position = patch_event.position if patch_event else None
        where = f"history event {patch_position}" if patch_position is not None else "the history"
        return Classified(builder.build(
            "patch-mismatch", patch_position, patch_event, None,
            f"{where} recorded patch {patch!r}, the code no longer calls workflow.patched({patch!r});"
            f" keep the patch (or workflow.deprecate_patch({patch!r})) until no open run predates it",
        ))

    match = _PATCH_ID_RE.search(message)
    if match:
        recorded_id, issued_id = match["recorded"].strip(), match["issued"].strip()
        return Classified(builder.pending(
            "patch-mismatch", CommandView("patch", "", detail={"patch_id": issued_id}),
            f"history recorded patch {recorded_id!r}, the code now calls workflow.patched({issued_id!r}) there",
        ), locate=Located("patch", recorded_id))

    match = _NAME_MISMATCH_RE.search(message)
    if match:
        what = match["what"]
        recorded_name, issued_name = match["recorded"], match["issued"]
        kind = "child-workflow" if what.startswith("Child") else "nexus-operation" if what.startswith("Nexus") else "activity"
        if "marker" in match.group(0) or "local activity command" in match.group(0):
            kind = "local-activity"
        by_id = what.endswith(" id")
        if kind == "nexus-operation":
            # The history names a Nexus operation ``service.operation``; core compares the two parts apart.
            part = "#service" if what.endswith("service") else "#operation"
            located = Located(kind + part, recorded_name)
        else:
            located = Located(kind, recorded_name) if not by_id else Located(kind + "#id", recorded_name)
        noun = what.lower()
        return Classified(builder.pending(
            "command-mismatch", CommandView(kind, issued_name),
            f"history has {noun} {recorded_name!r}, the code now uses {noun} {issued_name!r} at the same point",
        ), locate=located)

    match = _TIMER_ID_RE.search(message)
    if match:
        return Classified(builder.pending(
            "command-mismatch", CommandView("timer", match["issued"]),
            f"history fired timer {match['recorded']!r}, the code now waits on timer {match['issued']!r}",
        ), locate=Located("timer", match["recorded"]))

    if _LOCAL_RESULT_RE.search(message):
        return Classified(builder.build("result-mismatch", None, None, None, message))

    return Classified(builder.build("command-mismatch", None, None, None, message))


def candidate_views(events: Sequence[Mapping[str, Any]], located: Located) -> list[CommandView]:
    """The recorded commands a ``Located`` may mean, in history order."""
    views = command_views(events)
    if located.kind.endswith("#id"):
        kind = located.kind[: -len("#id")]
        return [
            v for v in views
            if v.kind == kind and str(v.detail.get("activity_id", v.detail.get("workflow_id"))) == located.name
        ]
    if located.kind == "patch":
        return [v for v in views if v.kind == "patch" and v.detail.get("patch_id") == located.name]
    if located.kind.startswith("nexus-operation#"):
        part = located.kind.split("#", 1)[1]
        return [v for v in views if v.kind == "nexus-operation" and v.detail.get(part) == located.name]
    return [v for v in views if v.kind == located.kind and v.name == located.name]


def _task_failure(
    text: str, message: str, events: Sequence[Mapping[str, Any]], run_source: SourcePosition | None, radius: int
) -> Classified:
    reason = _REASON_RE.match(text)
    frames = [
        SourcePosition(m["path"], int(m["line"]), m["function"])
        for m in _FRAME_RE.finditer(text.replace('\\"', '"'))
    ]
    user_frames = [frame for frame in frames if not _is_library_frame(frame.path)]
    sandbox = _SANDBOX_RE.search(message)
    builder = _Builder(events, run_source, message, radius)
    if sandbox:
        call = sandbox["call"]
        use = f"calls {call}()" if sandbox["called"] else f"uses {call}"
        advice = _SANDBOX_ADVICE.get(call)
        instead = f"use {advice}" if advice else "use a workflow.* equivalent or move it into an activity"
        return Classified(builder.build(
            "nondeterministic-call", None, None, CommandView("call", call),
            f"the code {use} during replay, which the Temporal sandbox forbids in workflow code"
            f" (it would differ between the original run and every replay); {instead}",
            source=user_frames[-1] if user_frames else run_source,
        ))
    if reason and reason["reason"] in _LANG_FAIL and user_frames:
        failure_type = _FAILURE_TYPE_RE.search(text)
        raised = f"{failure_type['type']}: {message}" if failure_type and failure_type["type"] else message
        close = builder.close_view()
        recorded_text = f"the history {describe_recorded(close)}" if close else "the history has no such failure"
        return Classified(builder.build(
            "result-mismatch", close.position if close else None, close, CommandView("task-failure", raised),
            f"the code now raises {raised} during replay; {recorded_text}",
            source=user_frames[-1],
        ))
    return Classified(error=f"replay failed: {message}")


def _is_library_frame(path: str) -> bool:
    normalised = path.replace("\\", "/")
    return "/temporalio/" in normalised or normalised.startswith("<")


class _Builder:
    """Shared pieces of one classification: the history's views and the run method's position."""

    def __init__(
        self, events: Sequence[Mapping[str, Any]], run_source: SourcePosition | None, message: str, radius: int
    ) -> None:
        self.events = events
        self.views = command_views(events)
        self.run_source = run_source
        self.core = message
        self.radius = radius

    def recorded_at(self, position: int, core_type: str) -> CommandView:
        event = find_event(self.events, position)
        view = event_view(event) if event is not None else None
        if view is None:
            kind = event_type(event) if event is not None else core_type
            view = CommandView(kind, "", position=position, detail={"event_id": position, "event_type": kind})
        return view

    def first_patch(self, patch_id: str) -> CommandView | None:
        return next((v for v in self.views if v.kind == "patch" and v.detail.get("patch_id") == patch_id), None)

    def close_view(self) -> CommandView | None:
        last = self.views[-1] if self.views else None
        return last if last is not None and last.kind in TERMINAL_KINDS | {"terminated", "timed-out"} else None

    def context(self, position: int | None) -> tuple[CommandView, ...]:
        if position is None:
            return ()
        before = [v for v in self.views if v.position is not None and v.position < position][-self.radius :]
        after = [v for v in self.views if v.position is not None and v.position > position][: self.radius]
        at = [v for v in self.views if v.position == position]
        return tuple(before + at + after)

    def command_divergence(self, recorded: CommandView, issued: CommandView, position: int) -> Divergence:
        rec_terminal = recorded.kind in TERMINAL_KINDS
        iss_terminal = issued.kind in TERMINAL_KINDS
        if rec_terminal and iss_terminal:
            kind = "result-mismatch"
        elif iss_terminal:
            kind = "missing-command"
        elif rec_terminal:
            kind = "extra-command"
        elif "patch" in (recorded.kind, issued.kind):
            kind = "patch-mismatch"
        else:
            kind = "command-mismatch"
        text = f"history event {position} {describe_recorded(recorded)}, the code now {describe_issued(issued)}"
        if kind == "missing-command":
            text += " (the code finished before the history did)"
        elif kind == "extra-command":
            text += " (the history has no such command)"
        return self.build(kind, position, recorded, issued, text)

    def pending(self, kind: str, issued: CommandView, text: str) -> Divergence:
        """A divergence whose position the caller still has to find (``Classified.locate``)."""
        return self.build(kind, None, None, issued, text)

    def build(
        self,
        kind: str,
        position: int | None,
        recorded: CommandView | None,
        issued: CommandView | None,
        text: str,
        source: SourcePosition | None = None,
    ) -> Divergence:
        full = text if text == self.core else f"{text} [sdk-core: {self.core}]"
        return Divergence(
            kind=kind,
            position=position,
            message=full,
            recorded=recorded,
            issued=issued,
            recorded_context=self.context(position),
            issued_context=self.issued_context(position, issued),
            source=source or self.run_source,
        )

    def issued_context(self, position: int | None, issued: CommandView | None) -> tuple[CommandView, ...]:
        """What the code issued up to the divergence: sdk-core matched every command before it, so
        those are the recorded commands themselves (signals it received are not the code's)."""
        if position is None:
            return ()
        before = [v for v in self.views if v.position is not None and v.position < position and v.kind != "signal"]
        return tuple(before[-self.radius :]) + ((issued,) if issued is not None and issued.position is not None else ())


def placed(
    divergence: Divergence, located: Located, recorded: CommandView, events: Sequence[Mapping[str, Any]], radius: int = 3
) -> Divergence:
    """``divergence`` positioned at ``recorded`` (the command ``located`` asked for, found by replaying
    prefixes), with context and the issued view aligned to it."""
    builder = _Builder(events, divergence.source, "", radius)
    issued = divergence.issued
    if issued is not None:
        issued = CommandView(issued.kind, issued.name, position=recorded.position, detail=issued.detail)
    position = recorded.position
    message = divergence.message
    if position is not None and issued is not None and not located.kind.endswith("#id"):
        core = message[message.find(" [sdk-core: "):] if " [sdk-core: " in message else ""
        message = f"history event {position} {describe_recorded(recorded)}, the code now {describe_issued(issued)} there{core}"
    elif position is not None:
        message = f"history event {position}: {message}"
    return Divergence(
        kind=divergence.kind,
        position=position,
        message=message,
        recorded=recorded,
        issued=issued,
        recorded_context=builder.context(position),
        issued_context=builder.issued_context(position, issued),
        source=divergence.source,
        severity=divergence.severity,
    )


def with_traced_command(
    divergence: Divergence, commands: Sequence[IssuedCommand], events: Sequence[Mapping[str, Any]]
) -> Divergence:
    """``divergence`` with the issued command named and its source line, from a traced re-run.

    Commands before the divergence matched the history one for one, so the issued command is the
    next one of its kind after as many as the history recorded before the diverging event.
    """
    issued = divergence.issued
    if issued is None or issued.kind not in TRACEABLE_KINDS or divergence.position is None:
        return divergence
    earlier = sum(
        1 for view in command_views(events)
        if view.kind == issued.kind and view.position is not None and view.position < divergence.position
        and issued_by_code(view)
    )
    same_kind = [command for command in commands if command.kind == issued.kind]
    expected_name = issued.detail.get("patch_id") if issued.kind == "patch" else issued.name
    if earlier >= len(same_kind) or (expected_name and not _same_name(issued.kind, expected_name, same_kind[earlier].name)):
        return divergence  # the trace does not line up with sdk-core's account; keep what core said
    command = same_kind[earlier]
    detail = dict(issued.detail)
    if issued.kind == "patch":
        detail["patch_id"] = command.name
    if command.source is not None:
        detail["source"] = f"{command.source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{command.source.line}"
    prompt = command.prompt[1] if command.prompt is not None else None
    # A patch is named by its id (detail), a timer by the id sdk-core gave, if any: the trace adds only the line.
    name = issued.name if issued.kind in ("patch", "timer") else command.name
    named = CommandView(issued.kind, name, issued.position, command.digest, prompt, detail)
    message = divergence.message.replace(f"the code now {describe_issued(issued)}", f"the code now {describe_issued(named)}", 1)
    context = tuple(named if view is issued else view for view in divergence.issued_context)
    return dataclasses.replace(
        divergence, issued=named, message=message, issued_context=context, source=command.source or divergence.source
    )


def _same_name(kind: str, expected: str, traced: str) -> bool:
    """Whether the traced command is the one sdk-core named: a Nexus operation is traced as
    ``service.operation``, and core names the part that differs."""
    if kind == "nexus-operation":
        return expected in (traced, *traced.rsplit(".", 1))
    return traced == expected


def with_waiting_line(
    divergence: Divergence, trace: WorkflowTrace, events: Sequence[Mapping[str, Any]], handler: Any
) -> Divergence:
    """Where the code was when sdk-core found nothing (or not the recorded patch) at a history event:
    for a removed patch, the ``workflow.patched`` call with an id the history lacks or else the command
    the code issued at the marker's place; for a command the code no longer issues, the
    ``workflow.wait_condition`` it still waits in, with the handlers of the signals the history
    delivered before (``handler(kind, name)`` gives a handler's ``SourcePosition`` or ``None``).
    Divergences with an issued command are ``with_traced_command``'s; ``handler`` is
    ``handler_lookup``'s (``None``: handlers unknown, none named)."""
    position = divergence.position
    if divergence.issued is not None or position is None:
        return divergence
    notes: list[str] = []
    source: SourcePosition | None = None
    recorded = divergence.recorded
    if divergence.kind == "patch-mismatch" and recorded is not None:
        recorded_id = recorded.detail.get("patch_id")
        renamed = next((call for call in trace.patch_calls if not call.used and call.patch_id != recorded_id), None)
        if renamed is not None:
            verb = "deprecate_patch" if renamed.deprecated else "patched"
            notes.append(f"the code calls workflow.{verb}({renamed.patch_id!r}){_at(renamed.source)}, an id the history has no marker for")
            source = renamed.source
        else:
            command = _command_at(trace.commands, command_views(events), position)
            if command is not None:
                view = CommandView(command.kind, "" if command.kind in ("patch", "timer") else command.name)
                notes.append(f"the code {describe_issued(view)}{_at(command.source)} in its place")
                source = command.source
    if source is None and divergence.kind in ("missing-command", "patch-mismatch"):
        waiting = [wait for wait in trace.waits if wait.waiting]
        if waiting:
            lines = ", ".join(_short(wait.source) for wait in waiting if wait.source is not None)
            notes.append(f"it waits in workflow.wait_condition ({lines or 'line unknown'})")
            source = waiting[0].source
            if handler is not None:
                notes.extend(_signal_notes(events, position, handler))
    if not notes:
        return divergence
    return dataclasses.replace(divergence, message=_noted(divergence.message, "; ".join(notes)), source=source or divergence.source)


def with_handler_notes(divergence: Divergence, events: Sequence[Mapping[str, Any]], handler: Any) -> Divergence:
    """``divergence`` noting the signals and updates the history delivered up to it that the current
    code has no handler for (the SDK buffers or rejects them, so the code takes another path);
    ``handler`` is ``handler_lookup``'s (``None``: handlers unknown, nothing said)."""
    if divergence.position is None or handler is None:
        return divergence
    missing = [
        f"the code has no handler for {view.kind} {view.name!r} (history event {view.position})"
        for view in command_views(events)
        if view.kind in ("signal", "update") and view.position is not None and view.position <= divergence.position
        and view.name and handler(view.kind, view.name) is None
    ]
    if not missing or missing[0] in divergence.message:
        return divergence
    return dataclasses.replace(divergence, message=_noted(divergence.message, "; ".join(dict.fromkeys(missing))))


def handler_lookup(defn: Any, trace: WorkflowTrace) -> Any:
    """``handler(kind, name)``: where the current code defines the handler of signal or update ``name``
    (the ``def`` line, not its decorator's) — one set at run time, else the definition's, else the
    dynamic one —, or ``None`` when it has none; ``None`` itself without a workflow definition."""
    import linecache

    from replaytest.plugins.temporal.internals import handler_function

    if defn is None:
        return None

    def function_of(kind: str, name: str | None) -> Any:
        if (kind, name) in trace.handlers_set:
            return trace.handlers_set[(kind, name)]
        return handler_function(defn, kind, name)

    def handler(kind: str, name: str) -> SourcePosition | None:
        function = function_of(kind, name) or function_of(kind, None)
        code = getattr(function, "__code__", None)
        if code is None:
            return None
        line = code.co_firstlineno
        while linecache.getline(code.co_filename, line).lstrip().startswith("@"):
            line += 1  # decorators, one a line (a decorator over several lines stays at its first)
        return SourcePosition(code.co_filename, line, getattr(function, "__qualname__", code.co_name))

    return handler


def _signal_notes(events: Sequence[Mapping[str, Any]], position: int, handler: Any) -> list[str]:
    notes = []
    for view in command_views(events):
        if view.kind != "signal" or view.position is None or view.position >= position or not view.name:
            continue
        found = handler("signal", view.name)
        if found is not None:
            notes.append(f"signal {view.name!r} (history event {view.position}) reached its handler at {_short(found)}")
    return list(dict.fromkeys(notes))


def _command_at(commands: Sequence[IssuedCommand], views: Sequence[CommandView], position: int) -> IssuedCommand | None:
    """The first command the code issued that no recorded command before ``position`` accounts for
    (sdk-core matched each kind's commands one for one up to there), or ``None``."""
    recorded: dict[str, int] = {}
    for view in views:
        if view.position is not None and view.position < position and issued_by_code(view):
            recorded[view.kind] = recorded.get(view.kind, 0) + 1
    seen: dict[str, int] = {}
    for command in commands:
        if command.kind not in _EVENT_COMMAND_KINDS:
            continue
        seen[command.kind] = seen.get(command.kind, 0) + 1
        if seen[command.kind] > recorded.get(command.kind, 0):
            return command
    return None


def _short(source: SourcePosition | None) -> str:
    if source is None:
        return "line unknown"
    return f"{source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{source.line}"


def _at(source: SourcePosition | None) -> str:
    return f" at {_short(source)}" if source is not None else ""


def _noted(message: str, note: str) -> str:
    """``message`` with ``note`` before sdk-core's own text (which stays last)."""
    cut = message.find(" [sdk-core: ")
    return f"{message}; {note}" if cut < 0 else f"{message[:cut]}; {note}{message[cut:]}"
