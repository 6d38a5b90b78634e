"""What Temporal's Replayer does not check: activity and child-workflow inputs, external signals' names,
and prompt versions.

sdk-core matches commands by kind and type only: an activity scheduled with other arguments, or under
another prompt, replays green (and gets the result recorded for the old call). After every replay this
module lines the recorded ``ActivityTaskScheduled`` / ``StartChildWorkflowExecutionInitiated`` events
up with the activities and child workflows the current code started (``temporal.trace``'s recorder)
and runs them through the engine-neutral ``Matcher``, so Temporal gets ``args-mismatch`` (warn, fail
with strict args), ``command-mismatch`` for an external signal sent under another name (sdk-core matches
``SignalExternalWorkflowExecutionInitiated`` by kind alone; its input is not compared) and ``prompt-drift`` under the same policies as the journal. Inputs are compared as
digests of their *decoded* values (the configured data converter, codec included), so key order and
encoding details do not count as changes. The run's prompt manifest (the ``replaytest-prompts`` header
of its first event) feeds the pending-prompt check.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType

from replaytest.history.digest import DigestError, args_digest
from replaytest.plugins.temporal.prompts import MANIFEST_HEADER, PROMPT_HEADER, read_json_header
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.divergence import CommandView, Divergence, ReplayResult
from replaytest.replay.engine import (
    NO_PROMPTS_NOTE,
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    check_pending_prompts,
)

COMPARED_KINDS = frozenset({"activity", "child-workflow", "signal-external"})
# sdk-core matches an external signal by kind alone: a renamed signal replays green there. Its name is
# compared here, and a different one is a divergence (not an unaligned trace).
NAMED_HERE = frozenset({"signal-external"})
CONVERTER_HINT = (
    "the default data converter cannot decode it; set data_converter in a TemporalReplayConfig"
    ' (replay_workflows = "yourapp.replay:CONFIG") to the converter and codec your workers use'
)
CONFIGURED_CONVERTER_HINT = (
    "the configured data converter cannot decode it; check that the TemporalReplayConfig's data_converter"
    " (payload converter and codec) is the one your workers use"
)


def converter_hint(configured: bool) -> str:
    """What to set when a payload cannot be decoded, for a replay with or without a custom converter."""
    return CONFIGURED_CONVERTER_HINT if configured else CONVERTER_HINT


def undecodable_note(configured: bool) -> str:
    return "recorded activity inputs could not be decoded: arguments were not compared; " + converter_hint(configured)
UNALIGNED_NOTE = "the activities the code started did not line up with the history's: arguments were not compared"


@dataclass
class RecordedCall:
    """One scheduled activity or started child workflow as the history holds it."""

    position: int
    kind: str
    name: str
    payloads: Sequence[Any]  # temporalio.api.common.v1.Payload, as stored (codec-encoded)
    prompt: tuple[str, str] | None
    digest: str | None = None
    prompt_params: dict[str, Any] | None = None  # the model parameters the header recorded, if any


@dataclass
class RecordedRun:
    status: str  # the run status (``temporal.history.run_status``): completed, failed, running or parked
    manifest: dict[str, str] | None
    calls: list[RecordedCall]


def read_run(history: Any, status: str) -> RecordedRun:
    """The calls and manifest of a ``temporalio.client.WorkflowHistory`` whose run status is ``status``."""
    events = history.events
    calls: list[RecordedCall] = []
    manifest = None
    if events:
        started = events[0].workflow_execution_started_event_attributes
        value = read_json_header(started.header.fields, MANIFEST_HEADER)
        if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            manifest = dict(value)
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            calls.append(RecordedCall(
                event.event_id, "activity", attrs.activity_type.name, list(attrs.input.payloads), _prompt(attrs.header.fields),
                prompt_params=_prompt_params(attrs.header.fields),
            ))
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            attrs = event.start_child_workflow_execution_initiated_event_attributes
            calls.append(RecordedCall(
                event.event_id, "child-workflow", attrs.workflow_type.name, list(attrs.input.payloads),
                _prompt(attrs.header.fields), prompt_params=_prompt_params(attrs.header.fields),
            ))
        elif kind == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            attrs = event.signal_external_workflow_execution_initiated_event_attributes
            # Its input is not compared (the outbound interceptor takes no digest of it): payloads left out.
            calls.append(RecordedCall(event.event_id, "signal-external", attrs.signal_name, [], None))
    return RecordedRun(status, manifest, calls)


def _prompt_params(headers: Mapping[str, Any]) -> dict[str, Any] | None:
    value = read_json_header(headers, PROMPT_HEADER)
    params = value.get("params") if isinstance(value, dict) else None
    return params if isinstance(params, dict) else None


def _prompt(headers: Mapping[str, Any]) -> tuple[str, str] | None:
    value = read_json_header(headers, PROMPT_HEADER)
    if isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("version"), str):
        return value["name"], value["version"]
    return None


async def digest_recorded(calls: Sequence[RecordedCall], data_converter: Any) -> bool:
    """Set each call's ``digest`` from its decoded input; False if some input could not be decoded."""
    decoded_all = True
    for call in calls:
        if call.kind in NAMED_HERE:
            continue  # compared by name only: no digest, so no side of the report shows one
        payloads = list(call.payloads)
        try:
            # Codec (if any), then payload converter, without type hints: JSON values, as recorded.
            values = await data_converter.decode(payloads) if payloads else []
        except Exception:  # an encoding the converter does not know: encrypted, custom, protobuf without type
            decoded_all = False
            continue
        call.digest = values_digest(values, payloads)
    return decoded_all


def values_digest(values: Sequence[Any], payloads: Sequence[Any]) -> str:
    """The digest of decoded arguments; values with no canonical JSON form fall back to the payload bytes."""
    try:
        return args_digest(tuple(values), {})
    except (DigestError, TypeError, ValueError):
        hasher = hashlib.sha256()
        for payload in payloads:
            hasher.update(payload.data)
        return "sha256:" + hasher.hexdigest()


def compare(
    result: ReplayResult,
    run: RecordedRun,
    issued: Sequence[Any],
    options: ReplayOptions,
    current_manifest: Mapping[str, str],
    decoded: bool,
    converter_configured: bool = False,
    current_prompts: Mapping[str, Any] | None = None,
) -> None:
    """Check arguments and prompts of the calls sdk-core accepted; add the outcome to ``result``.
    ``current_prompts``: ``{name: Prompt}`` of the current code, for the parameters a pending drift names.

    ``issued``: ``temporal.trace.IssuedCommand`` objects in the order the code started them (with
    ``digest`` and ``prompt``)."""
    recorded = [
        Recorded(call.position, call.kind, call.name, call.digest, _version(call.prompt), payload=call,
                 prompt_params=call.prompt_params)
        for call in run.calls
    ]
    commands = [command for command in issued if command.kind in COMPARED_KINDS]
    reached = {call.prompt[0]: call.prompt[1] for call in run.calls if call.prompt is not None}
    ahead = {name: version for name, version in current_manifest.items() if name not in reached}
    matcher = Matcher(recorded, run.status, options, prompts_ahead=ahead)
    try:
        for command in commands:
            matcher.issue(Issued(
                command.kind, command.name, command.digest, _version(command.prompt), source=command.source,
                prompt_name=command.prompt[0] if command.prompt is not None else None,
                prompt_params=getattr(command, "prompt_params", None),
            ))
        drift = matcher.unreported_drift()  # a changed prompt at a recorded call, no command past the end
        if drift is not None:
            raise DivergenceFound(drift)
    except ReachedEnd:
        pass  # the running run would resume here
    except DivergenceFound as found:
        divergence = found.divergence
        renamed_here = (
            divergence.kind == "command-mismatch" and divergence.recorded is not None and divergence.issued is not None
            and divergence.recorded.kind == divergence.issued.kind and divergence.recorded.kind in NAMED_HERE
        )
        if divergence.kind in ("args-mismatch", "prompt-drift") or renamed_here:
            result.status, result.divergence = "diverged", _with_line(found.divergence)
        else:
            # sdk-core accepted this history, so kinds and names line up; if they do not here, the
            # trace is incomplete (an interceptor hid a call) and comparing arguments would mislead.
            result.notes.append(UNALIGNED_NOTE)
    result.warnings.extend(_with_line(warning) for warning in matcher.warnings)
    if not decoded:
        result.notes.append(undecodable_note(converter_configured))
    if not reached and run.manifest is None and current_manifest:
        result.notes.append(NO_PROMPTS_NOTE)
    # The manifest keeps only the parameters' digest; the current code's are named ("parameters now …").
    params = {name: (None, prompt.params) for name, prompt in (current_prompts or {}).items()
              if getattr(prompt, "full_version", None) == current_manifest.get(name)}
    check_pending_prompts(result, run.status, run.manifest, current_manifest, reached, options, None, params=params)


def _version(prompt: tuple[str, str] | None) -> str | None:
    return None if prompt is None else prompt[1]


def issued_views(run: RecordedRun, issued: Sequence[Any]) -> dict[int, CommandView]:
    """What the code started at each recorded call's position (digest, prompt and line), for the
    report's side-by-side table; calls are aligned in order while kinds and names agree."""
    views: dict[int, CommandView] = {}
    commands = iter(command for command in issued if command.kind in COMPARED_KINDS)
    for call in run.calls:
        command = next(commands, None)
        if command is None or (command.kind, command.name) != (call.kind, call.name):
            break
        views[call.position] = CommandView(
            command.kind, command.name, call.position, command.digest, _version(command.prompt), _source_detail(command.source)
        )
    return views


def annotate(divergence: Divergence, run: RecordedRun, issued: Sequence[Any]) -> Divergence:
    """``divergence`` (from sdk-core's failure) with argument digests, prompts and issuing lines in its
    context, so the side-by-side table never calls two calls "same" when their inputs differ."""
    recorded = {call.position: call for call in run.calls}
    current = issued_views(run, issued)

    def recorded_view(view: CommandView | None) -> CommandView | None:
        if view is None or view.position not in recorded or view.kind not in COMPARED_KINDS:
            return view
        call = recorded[view.position]
        return dataclasses.replace(view, args_digest=call.digest, prompt_version=_version(call.prompt))

    def issued_view(view: CommandView) -> CommandView:
        if view.position is not None and view.position in current and view.kind == current[view.position].kind:
            found = current[view.position]
            return dataclasses.replace(view, args_digest=found.args_digest, prompt_version=found.prompt_version,
                                       detail={**view.detail, **found.detail})
        return view

    return dataclasses.replace(
        divergence,
        recorded=recorded_view(divergence.recorded),
        recorded_context=tuple(recorded_view(view) or view for view in divergence.recorded_context),
        issued_context=tuple(issued_view(view) for view in divergence.issued_context),
    )


def _source_detail(source: Any) -> dict[str, Any]:
    if source is None:
        return {}
    return {"source": f"{_file_name(source.path)}:{source.line}"}


def _file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _with_line(divergence: Divergence) -> Divergence:
    """The issued view of a Matcher divergence carries its line in ``detail`` (the table prints it)."""
    issued = divergence.issued
    if issued is None or divergence.source is None or "source" in issued.detail:
        return divergence
    detail = {**issued.detail, "source": f"{_file_name(divergence.source.path)}:{divergence.source.line}"}
    return dataclasses.replace(divergence, issued=dataclasses.replace(issued, detail=detail))
