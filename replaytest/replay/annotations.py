"""Replay outcomes as CI results: one ``ReplayAnnotation`` per replayed history, placed where a reviewer
acts on it — at the source line that issued the diverging command (the divergence's source position), or
at the history file when no line is known (a stale or unreadable history, an engine that reports none).

The fields match what the CI reporters read (``lint.reporters.external.ExternalResult``), so ``check
--output-format github|sarif|junit`` shows lint findings and replay divergences in one report. ``double-run``
renders its results (replay results too) the same way under its own suite and codes (``double-run/…``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from replaytest.replay.divergence import Divergence, ReplayResult
from replaytest.replay.report import display_path, render_text, run_kind


@dataclass(frozen=True)
class ReplayAnnotation:
    """One replayed history as a CI result. ``level`` None: it passed (only junit lists it).
    ``properties``: facts the formats attach to the result (the run's recorded status)."""

    path: str
    line: int
    code: str
    title: str
    message: str
    details: str
    level: str | None
    suite: str = "replay"
    name: str = ""
    properties: tuple[tuple[str, str], ...] = ()


# What a result's message says the check was doing, per suite.
_DOING = {"replay": "replaying", "double-run": "double-running"}


def replay_annotations(
    results: Iterable[ReplayResult], details: bool = False, suite: str = "replay",
) -> list[ReplayAnnotation]:
    """One annotation per history, plus one per warning (prompt drift, changed arguments, a hazard under
    ``hazards = warn``) of a history that passed, and one per runtime-guard hazard of a diverged history
    besides its divergence. Messages name the kind of run (``in-flight run (parked)``) and ``properties``
    carry it: a reviewer weighs a break of a run the engine will resume against a divergence of a finished
    one. Titles stay per kind of problem (SARIF makes its rule descriptions of them). ``suite``: ``replay``,
    or ``double-run`` (codes ``double-run/<kind>``; a case of an inputs file is named with its case too, as
    one file holds several)."""
    annotations = []
    for result in results:
        history = display_path(result.history_path)
        who = f"{result.workflow_type} {history}"
        if suite != "replay" and result.workflow_id:
            who += f" ({result.workflow_id})"
        report = render_text(result, details)
        kind = run_kind(result)
        facts = run_properties(result)
        if result.status == "diverged" and result.divergence is not None:
            primary = result.divergence
            annotations.append(_at_divergence(primary, history, who, report, "error", kind, facts, suite))
            # Runtime-guard hazards beside the command divergence: each at its own line.
            for hazard in result.hazards:
                if (hazard.position, hazard.source) != (primary.position, primary.source):
                    annotations.append(
                        _at_divergence(hazard, history, f"{who} ({hazard.kind})", report, hazard.severity, kind, facts,
                                       suite)
                    )
        elif result.status in ("stale", "error"):
            annotations.append(ReplayAnnotation(
                history, 1, f"{suite}/{result.status}", f"{suite} {result.status}",
                f"{history}: {result.status}{kind}: {result.error or 'no reason given'}", report, "error",
                suite=suite, name=who, properties=facts,
            ))
        else:
            annotations.append(ReplayAnnotation(
                history, 1, f"{suite}/passed", f"{suite} passed", report, "", None, suite=suite, name=who,
                properties=facts,
            ))
        if result.status == "passed":
            for warning in result.warnings:
                annotations.append(
                    _at_divergence(warning, history, f"{who} ({warning.kind})", report, "warning", kind, facts, suite)
                )
    return annotations


def run_properties(result: ReplayResult) -> tuple[tuple[str, str], ...]:
    """``run_status`` (``unknown`` when not known) and ``in_flight`` (``true``/``false``/``unknown``), as
    strings: junit properties and SARIF property bags carry them."""
    in_flight = {True: "true", False: "false", None: "unknown"}[result.in_flight]
    return (("run_status", result.run_status or "unknown"), ("in_flight", in_flight))


def _at_divergence(
    divergence: Divergence, history: str, who: str, report: str, level: str, kind: str,
    facts: tuple[tuple[str, str], ...], suite: str = "replay",
) -> ReplayAnnotation:
    if divergence.source is not None:
        path, line = display_path(divergence.source.path), divergence.source.line
    else:
        path, line = history, 1
    message = f"{_DOING.get(suite, suite)} {history}{kind}: {divergence.kind}: {divergence.message}"
    return ReplayAnnotation(
        path, line, f"{suite}/{divergence.kind}", f"{suite} {divergence.kind}", message, report, level, suite=suite,
        name=who, properties=facts,
    )


def uncovered_change_annotations(uncovered: Iterable[tuple[Path, int, str]], failing: bool) -> list[ReplayAnnotation]:
    """One annotation per changed orchestration line that no saved history reaches (``check --diff-base``):
    an error when it fails the gate, else a warning."""
    return [
        ReplayAnnotation(
            display_path(path), line, "replay/uncovered-change", "changed line no history reaches",
            f"{qualname}: this orchestration line changed and no saved history reaches it; record a history "
            "that takes this path", "", "error" if failing else "warning", suite="coverage",
            name=f"{display_path(path)}:{line}",
        )
        for path, line, qualname in uncovered
    ]
