"""Rendering of replay outcomes: short plain text (pytest, terminal) and a JSON-ready dict (``--format json``).

Works from ``ReplayResult`` / ``Divergence`` alone, so every framework replayer (journal, Temporal,
third-party) gets the same report without knowing about this module.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from replaytest.fileio import escape_controls
from replaytest.replay.divergence import (
    FINISHED_STATUSES,
    IN_FLIGHT_STATUSES,
    RUN_STATUSES,
    CommandView,
    Divergence,
    PatchDecision,
    PromptChange,
    Rehearsal,
    ReplayResult,
)

REPORT_VERSION = 1
_COLUMN = 56  # width of the "recorded" column in the side-by-side context


def display_path(path: Path | str) -> str:
    """``path`` relative to the working directory when it lies below it (shorter, clickable), else as is."""
    text = str(path)
    if os.path.isabs(text):
        # The common case, an absolute normalised path below the working directory, without
        # ``os.path.relpath``'s normalising and splitting of both paths (it shows once per history).
        cwd = os.getcwd()
        prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
        if text.startswith(prefix) and len(text) > len(prefix) and os.path.normpath(text) == text:
            return text[len(prefix):]
    try:
        relative = os.path.relpath(text)
    except ValueError:  # another drive on Windows
        return text
    return text if relative.startswith("..") else relative


def headline(result: ReplayResult) -> str:
    """One line naming the history, the workflow, the outcome and what kind of run it recorded."""
    who = result.workflow_type or "?"
    if result.workflow_id:
        who += f" id {result.workflow_id}"
    where = display_path(result.history_path)
    if result.status == "diverged":
        return f"{where}: {who}: diverged ({result.events} recorded events){run_kind(result)}"
    if result.status == "stale":
        return f"{where}: {who}: stale{run_kind(result)}"
    if result.status == "error":
        return f"{where}: {who}: error{run_kind(result)}"
    drift = f", {len(result.warnings)} warning(s)" if result.warnings else ""
    return f"{where}: {who}: passed ({result.events} events{drift}){run_kind(result)}"


def run_kind(result: ReplayResult) -> str:
    """``", in-flight run (parked)"``, ``", finished run (completed)"``, or that the status is unknown; nothing
    for an error result whose history could not be read (its error says why)."""
    if result.in_flight is None:
        return "" if result.status == "error" else ", run status unknown"
    group = "in-flight" if result.in_flight else "finished"
    return f", {group} run ({result.run_status})"


def render_text(result: ReplayResult, details: bool = False) -> str:
    """The report for one history: outcome, recorded vs issued, source line, a few events of context.

    ``details`` widens the context and lists every warning in full.
    """
    lines = [headline(result)]
    if result.status in ("stale", "error"):
        lines.append(f"  {result.error or 'no reason given'}")
    if result.divergence is not None:
        lines.extend(_divergence_lines(result.divergence, details))
    for hazard in _other_failing_hazards(result):
        lines.append("  also:")
        lines.extend(_divergence_lines(hazard, details))
    if result.rehearsal is not None:
        lines.append(f"  resume rehearsed: {_rehearsal_line(result.rehearsal)}")
    if result.fresh_run is not None:
        lines.append(f"  fresh run rehearsed: {_rehearsal_line(result.fresh_run)}")
    if result.redacted:
        shown = ", ".join(result.redacted[:8]) + (f", … ({len(result.redacted)} in all)" if len(result.redacted) > 8 else "")
        lines.append(f"  note: this history was redacted; the code may have read pseudonyms at {shown}")
    for warning in result.warnings:
        if details:
            lines.append("warning:")
            lines.extend(_divergence_lines(warning, details))
        else:
            lines.append(f"  warning: {warning.kind}{_position(warning.position)}: {warning.message}")
    if result.log:
        if details:
            lines.append("  captured library output:")
            lines.extend(f"    {line}" for line in result.log.splitlines())
        else:
            count = len(result.log.splitlines())
            lines.append(f"  ({count} line(s) of library output captured; --details shows them)")
    # Names and values come from the history: no control character reaches the terminal.
    return "\n".join(escape_controls(line) for line in lines)


def _rehearsal_line(rehearsal: Rehearsal) -> str:
    """One line: what the engine did when the run was resumed past its history, and why."""
    steps = ", ".join(_describe(view) for view in rehearsal.commands if view.kind != "patch")
    text = rehearsal.outcome + (f": {steps}" if steps else "")
    if rehearsal.error:
        text += f": {rehearsal.error}"
    if rehearsal.delivered:
        text += f" (delivered {rehearsal.delivered})"
    return text + (f"; {rehearsal.note}" if rehearsal.note else "")


def _other_failing_hazards(result: ReplayResult) -> list[Divergence]:
    """Failing hazards not shown as the divergence itself (warning ones are listed with the warnings)."""
    primary = result.divergence
    return [
        hazard
        for hazard in result.hazards
        if hazard.severity == "error"
        and not (primary is not None and (hazard.kind, hazard.position, hazard.source) == (primary.kind, primary.position, primary.source))
    ]


def render_divergence(divergence: Divergence, details: bool = False, labels: tuple[str, str] = ("recorded", "issued")) -> str:
    """Just the divergence block (what ``render_text`` shows under the headline). ``labels`` name the
    two sides (``replaytest diff`` compares history A with history B)."""
    return "\n".join(escape_controls(line) for line in _divergence_lines(divergence, details, labels))


def _divergence_lines(
    divergence: Divergence, details: bool, labels: tuple[str, str] = ("recorded", "issued")
) -> list[str]:
    left, right = labels
    lines = [f"  {divergence.kind}{_position(divergence.position)}: {divergence.message}"]
    if divergence.recorded is not None or divergence.issued is not None:
        # A missing side is just "nothing": why (history ended, code finished, code waits) is the
        # message's job, and it differs by engine.
        lines.append(f"    {left:<9} {_describe(divergence.recorded)}")
        lines.append(f"    {right:<9} {_describe(divergence.issued)}")
    if divergence.source is not None:
        lines.append(f"    {'at':<9} {_source(divergence)}")
    elif divergence.recorded is not None or divergence.issued is not None:
        # Said, not left out: a missing line must not read as "no code involved".
        lines.append(f"    {'at':<9} line unknown (the engine does not say which line issued this command)")
    context = _context_lines(divergence, 6 if details else 2)
    if context:
        lines.append(f"    {left:<{_COLUMN}} | {right}")
        lines.extend(context)
    return lines


def _source(divergence: Divergence) -> str:
    source = divergence.source
    assert source is not None
    text = f"{display_path(source.path)}:{source.line}"
    return f"{text} in {source.function}" if source.function else text


def _describe(view: CommandView | None) -> str:
    return "nothing" if view is None else view.describe()


def _position(position: int | None) -> str:
    return f" at event #{position}" if position is not None else ""


def _context_lines(divergence: Divergence, radius: int) -> list[str]:
    """Side-by-side rows: recorded events around the divergence against what the code issued there.

    Rows are keyed by position; the diverging row is marked with ``>``. Issued commands without a
    position are aligned after the recorded ones they followed.
    """
    recorded = {view.position: view for view in divergence.recorded_context if view.position is not None}
    issued = {view.position: view for view in divergence.issued_context if view.position is not None}
    if divergence.recorded is not None and divergence.recorded.position is not None:
        recorded.setdefault(divergence.recorded.position, divergence.recorded)
    if divergence.issued is not None and divergence.issued.position is not None:
        issued.setdefault(divergence.issued.position, divergence.issued)
    positions = sorted(set(recorded) | set(issued))
    if not positions:
        return []
    # ``radius`` rows either side among the positions present: journal positions are dense, but engines
    # that number events (Temporal event ids) leave gaps between commands.
    centre = divergence.position if divergence.position is not None else positions[-1]
    index = next((i for i, p in enumerate(positions) if p >= centre), len(positions) - 1)
    shown = positions[max(0, index - radius) : index + radius + 1]
    rows = []
    for position in shown:
        marker = ">" if position == divergence.position else " "
        left = _cell(recorded.get(position), position)
        right = issued.get(position)
        right_text = "" if right is None else ("same" if _same(recorded.get(position), right) else _issued_cell(right))
        rows.append(f"  {marker} {left:<{_COLUMN}} | {right_text}".rstrip())
    return rows


def _cell(view: CommandView | None, position: int) -> str:
    text = f"#{position} " + (view.describe() if view is not None else "-")
    return text if len(text) <= _COLUMN else text[: _COLUMN - 1] + "…"


# Kinds whose command carries no arguments worth a digest: equal kind and name make them the same.
_NO_ARGUMENTS = frozenset({"timer", "signal", "marker", "patch", "side-effect", "complete", "fail", "cancel"})


def _same(recorded: CommandView | None, issued: CommandView) -> bool:
    """Only what is known to be equal is "same": two calls of one activity type whose arguments were
    not both digested may differ in what they were called with."""
    if recorded is None or (recorded.kind, recorded.name, recorded.args_digest, recorded.prompt_version) != (
        issued.kind,
        issued.name,
        issued.args_digest,
        issued.prompt_version,
    ):
        return False
    return issued.args_digest is not None or issued.kind in _NO_ARGUMENTS


def _issued_cell(view: CommandView) -> str:
    """An issued command with the line that issued it, when known (``detail["source"]``)."""
    text = view.describe()
    source = view.detail.get("source")
    return f"{text} @ {source}" if source else text


def view_data(view: CommandView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    data: dict[str, Any] = {"kind": view.kind, "name": view.name, "position": view.position}
    if view.args_digest is not None:
        data["args_digest"] = view.args_digest
    if view.prompt_version is not None:
        data["prompt_version"] = view.prompt_version
    if view.detail:
        data["detail"] = {key: _jsonable(value) for key, value in view.detail.items()}
    return data


def divergence_data(divergence: Divergence) -> dict[str, Any]:
    source = divergence.source
    return {
        "kind": divergence.kind,
        "severity": divergence.severity,
        "position": divergence.position,
        "message": divergence.message,
        "recorded": view_data(divergence.recorded),
        "issued": view_data(divergence.issued),
        "source": None
        if source is None
        else {"path": display_path(source.path), "line": source.line, "function": source.function},
        "recorded_context": [view_data(view) for view in divergence.recorded_context],
        "issued_context": [view_data(view) for view in divergence.issued_context],
    }


def result_data(result: ReplayResult) -> dict[str, Any]:
    """One history's outcome as plain JSON types (stable keys; what ``--format json`` prints per file)."""
    return {
        "history": display_path(result.history_path),
        "engine": result.engine,
        "workflow": {"type": result.workflow_type, "id": result.workflow_id},
        "status": result.status,
        "events": result.events,
        "duration_s": round(result.duration_s, 6),
        "divergence": None if result.divergence is None else divergence_data(result.divergence),
        "warnings": [divergence_data(warning) for warning in result.warnings],
        "hazards": [divergence_data(hazard) for hazard in result.hazards],
        "error": result.error,
        "notes": list(result.notes),
        "log": result.log,
        "redacted": list(result.redacted),
        "run_status": result.run_status,
        "in_flight": result.in_flight,
        "run_started_at": result.run_started_at,
        "patch_decisions": [patch_decision_data(decision) for decision in result.patch_decisions],
        "prompt_changes": [prompt_change_data(change) for change in result.prompt_changes],
        "rehearsal": None if result.rehearsal is None else rehearsal_data(result.rehearsal),
        "fresh_run": None if result.fresh_run is None else rehearsal_data(result.fresh_run),
    }


def rehearsal_data(rehearsal: Rehearsal) -> dict[str, Any]:
    """A resume rehearsal (what the engine did when the run resumed past its history) as plain JSON types."""
    source = rehearsal.source
    return {
        "outcome": rehearsal.outcome,
        "delivered": rehearsal.delivered,
        "commands": [view_data(view) for view in rehearsal.commands],
        "patch_decisions": [patch_decision_data(decision) for decision in rehearsal.patch_decisions],
        "error": rehearsal.error,
        "source": None
        if source is None
        else {"path": display_path(source.path), "line": source.line, "function": source.function},
        "driver": rehearsal.driver,
        "note": rehearsal.note,
    }


def prompt_change_data(change: PromptChange) -> dict[str, Any]:
    return {
        "prompt": change.name, "started": change.started, "current": change.current, "called": change.called,
        "compared": change.compared,
    }


def patch_decision_data(decision: PatchDecision) -> dict[str, Any]:
    """One ``patched``/``deprecate_patch`` answer of a replay as plain JSON types."""
    source = decision.source
    return {
        "patch_id": decision.patch_id,
        "taken": decision.taken,
        "deprecated": decision.deprecated,
        "marker_deprecated": decision.marker_deprecated,
        "position": decision.position,
        "source": None
        if source is None
        else {"path": display_path(source.path), "line": source.line, "function": source.function},
    }


def summary_counts(results: Iterable[ReplayResult]) -> dict[str, int]:
    """Counts per outcome plus warnings (prompt drift, non-strict args mismatch), for summaries; diverged
    histories are also counted by the kind of run they recorded (in flight, finished, unknown)."""
    counts = {"histories": 0, "passed": 0, "diverged": 0, "stale": 0, "error": 0, "warnings": 0}
    results_list = list(results)
    for result in results_list:
        counts["histories"] += 1
        counts[result.status] += 1
        counts["warnings"] += len(result.warnings)
    by_status = diverged_by_run_status(results_list)
    counts["diverged_in_flight"] = sum(by_status[status] for status in IN_FLIGHT_STATUSES)
    counts["diverged_finished"] = sum(by_status[status] for status in FINISHED_STATUSES)
    counts["diverged_run_status_unknown"] = by_status[UNKNOWN_RUN_STATUS]
    return counts


UNKNOWN_RUN_STATUS = "unknown"  # the key counting diverged runs whose recorded status nobody could tell


def diverged_by_run_status(results: Iterable[ReplayResult]) -> dict[str, int]:
    """How many diverged histories recorded each run status (``RUN_STATUSES`` in order, then ``unknown``)."""
    counts = dict.fromkeys((*RUN_STATUSES, UNKNOWN_RUN_STATUS), 0)
    for result in results:
        if result.status == "diverged":
            counts[result.run_status if result.run_status in RUN_STATUSES else UNKNOWN_RUN_STATUS] += 1
    return counts


def run_status_lines(diverged: Mapping[str, int]) -> list[str]:
    """The summary's split of diverged runs (counts per run status, as ``diverged_by_run_status``): in-flight
    runs break on recovery, finished ones matter only for queries, resets and forks. Nothing when none
    diverged."""
    if not any(diverged.values()):
        return []

    def group(title: str, statuses: tuple[str, ...]) -> str:
        total = sum(diverged.get(status, 0) for status in statuses)
        parts = ", ".join(f"{diverged[status]} {status}" for status in statuses if diverged.get(status))
        return f"{title}: {total} ({parts})" if total else f"{title}: 0"

    lines = [
        group("in-flight runs that break", IN_FLIGHT_STATUSES),
        group("finished runs that diverge", FINISHED_STATUSES),
    ]
    unknown = diverged.get(UNKNOWN_RUN_STATUS, 0)
    if unknown:
        lines.append(f"diverged runs whose status is unknown (neither in-flight nor finished can be told): {unknown}")
    return lines


def report_data(results: Iterable[ReplayResult]) -> dict[str, Any]:
    """The whole ``replaytest replay --format json`` document."""
    results = list(results)
    summary: dict[str, Any] = dict(summary_counts(results))
    summary["notes"] = summary_notes(results)
    summary["diverged_by_run_status"] = diverged_by_run_status(results)
    return {"version": REPORT_VERSION, "results": [result_data(r) for r in results], "summary": summary}


def summary_notes(results: Iterable[ReplayResult]) -> list[str]:
    """Each check that could not apply, once, with how many histories it concerns (sorted)."""
    counts: dict[str, int] = {}
    for result in results:
        for note in result.notes:
            counts[note] = counts.get(note, 0) + 1
    return [f"{number} {'history' if number == 1 else 'histories'}: {note}" for note, number in sorted(counts.items())]


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return repr(value)
