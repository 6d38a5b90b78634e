"""Replay results into a deploy-impact report: per workflow type, one ``ImpactGroup`` per divergence point
(``GroupKey``), the in-flight runs that have not reached the change yet, the green runs the change leaves
alone, one ``PromptGroup`` per changed prompt version that in-flight runs will use (from the results'
``prompt_changes``, whichever engine recorded them), and the histories that could not be checked. Works from ``ReplayResult`` alone (one replay per
history, done before); nothing here replays, reads code or renders."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from replaytest.fileio import escape_controls
from replaytest.impact.model import GroupKey, ImpactGroup, ImpactReport, PromptGroup, WorkflowImpact
from replaytest.prompts import short_version
from replaytest.replay.divergence import ALREADY_SLEEPING_NOTE, CommandView, ReplayResult
from replaytest.replay.report import display_path, summary_notes


def run_id(result: ReplayResult) -> str:
    """How a report names a run: its workflow id, else its history file."""
    return result.workflow_id or display_path(result.history_path)


def group_key(result: ReplayResult) -> GroupKey | None:
    """The divergence point of a diverged result (None for any other). The command is the one the code
    issues there now, or — when it issues none (missing-command) — the recorded one it no longer issues."""
    divergence = result.divergence
    if result.status != "diverged" or divergence is None:
        return None
    view = divergence.issued if divergence.issued is not None else divergence.recorded
    source = divergence.source
    return GroupKey(
        workflow_type=result.workflow_type,
        kind=divergence.kind,
        command=None if view is None else (view.kind, view.name),
        path=None if source is None else source.path,
        line=None if source is None else source.line,
    )


# Kinds that say the code issues another command at a point than the run recorded there: one change at one
# line breaks finished runs as a ``command-mismatch`` and parked runs whose history ends before the
# recorded command as an ``extra-command``; that is one change, so one group (and one guard).
COMMAND_ORDER_KINDS: frozenset[str] = frozenset({"command-mismatch", "extra-command", "missing-command"})


def group_identity(key: GroupKey) -> tuple[Any, ...]:
    """What makes two divergence points one group: ``GroupKey`` without its kind when that kind is one of
    ``COMMAND_ORDER_KINDS`` (the command and line say it all), with it otherwise."""
    kind = "command-order" if key.kind in COMMAND_ORDER_KINDS else key.kind
    return (key.workflow_type, kind, key.command, key.path, key.line)


def could_not_check(results: Iterable[ReplayResult]) -> list[ReplayResult]:
    """Histories whose replay could not run (``error``) or found no current code (``stale``): never grouped,
    never counted as safe."""
    return [result for result in results if result.status in ("error", "stale")]


def group_results(results: Sequence[ReplayResult]) -> list[WorkflowImpact]:
    """Per workflow type (and engine), worst first: the groups of runs that break (in-flight count, then
    finished count, descending), the in-flight runs not reached by the change and the unaffected green runs.
    Error and stale results are left to ``could_not_check``; every other result lands in exactly one list."""
    impacts: dict[tuple[str, str], WorkflowImpact] = {}
    groups: dict[tuple[str, tuple[Any, ...]], ImpactGroup] = {}
    green: list[ReplayResult] = []
    for result in results:
        if result.status in ("error", "stale"):
            continue
        impact = impacts.get((result.engine, result.workflow_type))
        if impact is None:
            impact = impacts[(result.engine, result.workflow_type)] = WorkflowImpact(result.workflow_type, result.engine)
        _add_prompt_changes(impact, result)
        key = group_key(result)
        if key is None:
            green.append(result)
            continue
        group = groups.get((result.engine, group_identity(key)))
        if group is None:
            group = groups[(result.engine, group_identity(key))] = _new_group(key, result)
            impact.groups.append(group)
        _add_run(group, result, key)
    first_change = {
        which: min((g.position for g in impact.groups if g.position is not None), default=None)
        for which, impact in impacts.items()
    }
    for result in green:
        impact = impacts[(result.engine, result.workflow_type)]
        change = first_change[(result.engine, result.workflow_type)]
        if result.in_flight and change is not None and result.events <= change:
            impact.not_reached.append(result)
        else:
            impact.unaffected.append(result)
    for impact in impacts.values():
        for group in impact.groups:
            for runs in (group.in_flight, group.finished, group.unknown_status):
                runs.sort(key=run_id)
        impact.groups.sort(key=_group_order)
        impact.not_reached.sort(key=run_id)
        impact.unaffected.sort(key=run_id)
        for prompt_group in impact.prompt_groups:
            prompt_group.not_called.sort(key=run_id)
            prompt_group.called.sort(key=run_id)
            prompt_group.compared.sort()
        impact.prompt_groups.sort(key=lambda g: (-len(g.not_called) - len(g.called), g.prompt, g.started or "", g.current))
    return sorted(impacts.values(), key=_impact_order)


def _add_prompt_changes(impact: WorkflowImpact, result: ReplayResult) -> None:
    """The changed prompts of an in-flight run, each into the group of its (prompt, from, to)."""
    if not result.in_flight:
        return  # a finished run calls no prompt again; a run of unknown status is named in the notes
    for change in result.prompt_changes:
        group = next(
            (g for g in impact.prompt_groups if (g.prompt, g.started, g.current) == (change.name, change.started, change.current)),
            None,
        )
        if group is None:
            group = PromptGroup(change.name, change.started, change.current)
            impact.prompt_groups.append(group)
        (group.called if change.called else group.not_called).append(result)
        if change.compared not in group.compared:
            group.compared.append(change.compared)
        if group.source is None:
            group.source = change.source


def build_report(results: Sequence[ReplayResult]) -> ImpactReport:
    """The whole report before guards and patches are attached: groups, could-not-check, notes."""
    return ImpactReport(
        workflows=group_results(results),
        could_not_check=sorted(could_not_check(results), key=lambda r: display_path(r.history_path)),
        notes=impact_notes(results),
    )


def impact_notes(results: Sequence[ReplayResult]) -> list[str]:
    """What the report could not tell: the replay notes (checks that did not apply), warnings of green
    runs (not grouped: the replay policies let them pass), and diverged runs of unknown status."""
    # A run already sleeping on a timer whose duration changed keeps the recorded one: named run by run.
    sleeping: dict[str, list[str]] = {}
    for result in results:
        for note in result.notes:
            if note.endswith(ALREADY_SLEEPING_NOTE):
                sleeping.setdefault(note, []).append(run_id(result))
    notes = [note for note in summary_notes(results) if not note.endswith(ALREADY_SLEEPING_NOTE)]
    notes.extend(f"{note}; already sleeping on it: {', '.join(sorted(ids))}" for note, ids in sorted(sleeping.items()))
    warned = sum(1 for result in results if result.status == "passed" and result.warnings)
    if warned:
        notes.append(f"{warned} green {_histories(warned)} replayed with warnings (prompt drift, changed arguments, "
                     "hazards under warn); warnings are not grouped")
    unknown = sum(1 for result in results if result.status == "diverged" and result.in_flight is None)
    if unknown:
        notes.append(f"{unknown} diverged {_histories(unknown)} recorded no run status: neither in-flight nor "
                     "finished can be told, so they count as in-flight for the exit code")
    return notes


def _histories(number: int) -> str:
    return "history" if number == 1 else "histories"


def _new_group(key: GroupKey, first: ReplayResult) -> ImpactGroup:
    divergence = first.divergence
    assert divergence is not None
    return ImpactGroup(
        key=key, position=divergence.position, recorded=[], issued=divergence.issued, source=divergence.source,
        message=divergence.message,
    )


def _add_run(group: ImpactGroup, result: ReplayResult, key: GroupKey) -> None:
    divergence = result.divergence
    assert divergence is not None
    first_in_flight = bool(result.in_flight) and not group.in_flight
    if divergence.position is not None and (
        group.position is None or divergence.position < group.position
        or (divergence.position == group.position and first_in_flight)
    ):
        # The group speaks with the words of the run that breaks first, an in-flight one on a tie (its kind,
        # message and the command it issues), so that its event number and its text never disagree.
        group.position = divergence.position
        group.key, group.issued, group.source, group.message = key, divergence.issued, divergence.source, divergence.message
    if not any(_same_side(divergence.recorded, seen) for seen in group.recorded):
        group.recorded.append(divergence.recorded)
    if result.in_flight is None:
        group.unknown_status.append(result)
    elif result.in_flight:
        group.in_flight.append(result)
    else:
        group.finished.append(result)


def _same_side(a: CommandView | None, b: CommandView | None) -> bool:
    """Two recorded sides are one when they name the same command (kind, name, patch id, prompt version):
    positions and argument digests aside, since a group spans runs that reached the changed line at
    different events with different inputs."""
    if a is None or b is None:
        return a is b
    return command_text(a) == command_text(b)


def command_text(view: CommandView | None) -> str:
    """A command as a group shows it: kind, name, patch id and prompt version (no argument digest, which
    differs from run to run)."""
    if view is None:
        return "nothing"
    text = f"{view.kind_text} {view.name!r}" if view.name else view.kind_text
    if view.detail.get("patch_id"):
        text += f" {view.detail['patch_id']!r}"
    if view.prompt_version:
        named = f"{view.detail['prompt']} " if view.detail.get("prompt") else ""
        text += f" prompt {named}{short_version(view.prompt_version)}"
    return text


def _group_order(group: ImpactGroup) -> tuple[int, int, int, int, str]:
    return (
        -(len(group.in_flight) + len(group.unknown_status)), -len(group.finished),
        group.position if group.position is not None else 1 << 62, group.key.line or 0, group.key.kind,
    )


def _impact_order(impact: WorkflowImpact) -> tuple[int, int, str, str]:
    in_flight = sum(len(g.in_flight) + len(g.unknown_status) for g in impact.groups)
    finished = sum(len(g.finished) for g in impact.groups)
    return (-in_flight, -finished, impact.workflow_type, impact.engine)


def divergence_point(result: ReplayResult) -> dict[str, Any] | None:
    """A diverged result as the plain data the grouped summary needs (JSON types: pytest-xdist workers send
    it to the controller in a report's user properties); None for a result that did not diverge."""
    key = group_key(result)
    if key is None:
        return None
    assert result.divergence is not None
    return {
        "engine": result.engine, "type": key.workflow_type, "kind": key.kind,
        "command": None if key.command is None else list(key.command), "path": key.path, "line": key.line,
        "position": result.divergence.position, "in_flight": result.in_flight,
    }


def summary_lines(points: Iterable[Mapping[str, Any]]) -> list[str]:
    """The grouped counts ``check`` and the pytest plugin end their summaries with (from ``divergence_point``
    data): one line per group, worst first as in the report, naming the workflow type, event and line."""
    groups: dict[tuple[Any, ...], list[Any]] = {}  # key -> [first position, in-flight, finished, unknown]
    for point in points:
        command = point.get("command")
        kind = point.get("kind")
        key = (point.get("engine"), point.get("type"), "command-order" if kind in COMMAND_ORDER_KINDS else kind,
               None if command is None else tuple(command), point.get("path"), point.get("line"))
        counts = groups.setdefault(key, [point.get("position"), 0, 0, 0])
        position = point.get("position")
        if position is not None and (counts[0] is None or position < counts[0]):
            counts[0] = position
        in_flight = point.get("in_flight")
        counts[1 if in_flight is True else 2 if in_flight is False else 3] += 1
    by_type: dict[tuple[Any, Any], list[tuple[tuple[Any, ...], list[Any]]]] = {}
    for key, counts in groups.items():
        by_type.setdefault(key[:2], []).append((key, counts))

    def type_order(item: tuple[tuple[Any, Any], list[tuple[tuple[Any, ...], list[Any]]]]) -> tuple[int, int, str]:
        members = item[1]
        return (-sum(c[1] + c[3] for _, c in members), -sum(c[2] for _, c in members), str(item[0][1]))

    lines = []
    for _, members in sorted(by_type.items(), key=type_order):
        members.sort(key=lambda m: (-(m[1][1] + m[1][3]), -m[1][2], m[1][0] if m[1][0] is not None else 1 << 62,
                                    m[0][5] or 0, str(m[0][2])))
        for key, (position, in_flight, finished, unknown) in members:
            lines.append(group_line(str(key[1]), in_flight, finished, unknown, position, key[4], key[5], kind=key[2]))
    return lines


def group_line(
    workflow_type: str, in_flight: int, finished: int, unknown: int, position: int | None, path: str | None,
    line: int | None, kind: str | None = None,
) -> str:
    """``3 in-flight runs of invoice_dispute break at event #4 (app/agent.py:52); run `replaytest impact` for
    the guard``; a group of finished runs only says they diverge. A prompt drift has no guard to offer:
    its hint points at what impact does say about it (the prompt groups)."""
    line_text = _group_line(workflow_type, in_flight, finished, unknown, position, path, line)
    if kind == "prompt-drift":
        return line_text.replace("run `replaytest impact` for the guard",
                                 "a prompt change: run `replaytest impact` for the runs that use it")
    return line_text


def _group_line(
    workflow_type: str, in_flight: int, finished: int, unknown: int, position: int | None, path: str | None,
    line: int | None,
) -> str:
    where = f" at event #{position}" if position is not None else ""
    at = f" ({display_path(path)}:{line})" if path is not None and line is not None else " (line unknown)"
    also = []
    if unknown:
        also.append(f"{unknown} of unknown status")
    if in_flight:
        if finished:
            also.append(f"{finished} finished")
        tail = f", and {' and '.join(also)} diverge there" if also else ""
        return escape_controls(f"{in_flight} in-flight {_runs(in_flight)} of {workflow_type} break{_s(in_flight)}{where}{at}{tail}; "
                "run `replaytest impact` for the guard")
    if unknown:
        tail = f", and {finished} finished" if finished else ""
        return escape_controls(f"{unknown} {_runs(unknown)} of unknown status of {workflow_type} diverge{_s(unknown)}{where}{at}"
                f"{tail}; run `replaytest impact` for the guard")
    return escape_controls(f"{finished} finished {_runs(finished)} of {workflow_type} diverge{_s(finished)}{where}{at}; "
            "run `replaytest impact` for the guard")


def _runs(number: int) -> str:
    return "run" if number == 1 else "runs"


def _s(number: int) -> str:
    """The verb's ending: one run breaks, two runs break."""
    return "s" if number == 1 else ""


def exit_code(report: ImpactReport, in_flight_only: bool = False) -> int:
    """2 when a history could not be checked; 1 when an in-flight run (or one whose status is unknown)
    breaks — in its replay, or when the engine rehearses its resume — or, unless ``in_flight_only``, a
    finished run diverges; else 0."""
    if report.could_not_check:
        return 2
    groups = [group for impact in report.workflows for group in impact.groups]
    if any(group.in_flight or group.unknown_status for group in groups):
        return 1
    # An in-flight run that replays green but that the engine refused to resume (its rehearsal broke).
    green_in_flight = (r for impact in report.workflows for r in (*impact.not_reached, *impact.unaffected) if r.in_flight)
    if any(r.rehearsal is not None and r.rehearsal.outcome == "breaks" for r in green_in_flight):
        return 1
    if not in_flight_only and any(group.finished for group in groups):
        return 1
    return 0
