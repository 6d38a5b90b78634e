"""``replaytest impact`` on the three recorded scenarios (Temporal dev server, DBOS on SQLite, LangGraph
SqliteSaver), for each change: the groups (kind, position, line, what the code issues now, every
recorded side), the run ids split in-flight/finished, the in-flight runs that have not reached the change,
and the exit code — all written out by hand from the scenario (see each kit's module and the replay
tests for the event numbering)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from impact_kit import ScenarioKit, impact_json, run_replaytest

FINISHED = ["dispute-1", "dispute-2", "dispute-3"]
IN_FLIGHT = ["dispute-4", "dispute-5"]


@dataclass(frozen=True)
class Expected:
    """One group as the report must give it; ``line_text`` finds the line in the changed source."""

    kind: str
    position: int
    line_text: str
    issued: str
    recorded: tuple[str, ...]
    in_flight: tuple[str, ...]
    finished: tuple[str, ...]


# Per engine: the position of the first command after the wait, and of the first command of a run.
AFTER_WAIT = {"temporal": 21, "dbos": 5, "langgraph": 3}
FIRST = {"temporal": 5, "dbos": 1, "langgraph": 1}
# The changed source's line each group points at, per engine (the call's first line).
AUDIT_TEXT = {"temporal": "record_audit, args=", "dbos": "record_audit(dispute", "langgraph": "record_audit(dispute"}
ESCALATE_TEXT = {"temporal": "escalate_to_finance, args=", "dbos": "credit = escalate_to_finance("}
LOOKUP_TEXT = "invoice = "


def expected_groups(engine: str, change: str) -> tuple[list[Expected], list[str], list[str]]:
    """The groups, the not-reached runs and the unaffected runs of ``change`` on ``engine``."""
    if change == "audit_after_review":
        # Decided runs break where the audit now runs (recorded: the credit, or for the rejected dispute
        # the notification); the runs waiting for the reviewer have not reached it.
        return [Expected("command-mismatch", AFTER_WAIT[engine], AUDIT_TEXT[engine], "record_audit",
                         ("issue_credit", "notify_customer"), (), tuple(FINISHED))], IN_FLIGHT, []
    if change == "lookup_first":
        return [Expected("command-mismatch", FIRST[engine], LOOKUP_TEXT, "lookup_invoice",
                         ("classify_dispute",), tuple(IN_FLIGHT), tuple(FINISHED))], [], []
    assert change == "escalate_large"
    # Only the large approved dispute took the changed branch; the small approved one and the rejected
    # one replay green past the change (unaffected).
    return [Expected("command-mismatch", AFTER_WAIT[engine], ESCALATE_TEXT[engine], "escalate_to_finance",
                     ("issue_credit",), (), ("dispute-2",))], IN_FLIGHT, ["dispute-1", "dispute-3"]


def call_line(kit: ScenarioKit, change: str, text: str) -> int:
    """The line of the command-producing call holding ``text``: Temporal's calls are split over lines
    (``execute_activity(`` ends the line before), the others are on one line."""
    line = kit.line_of(text, change)
    if kit.engine == "temporal" and text != LOOKUP_TEXT:
        return line - 1
    return line


def group_facts(group: dict) -> tuple:
    issued = group["issued"]["name"] if group["issued"] else None
    recorded = tuple(sorted(view["name"] for view in group["recorded"] if view))
    return (group["kind"], group["position"], group["path"], group["line"], issued, recorded,
            tuple(group["runs"]["in_flight"]), tuple(group["runs"]["finished"]), tuple(group["runs"]["unknown_status"]))


def check_change(kit: ScenarioKit, change: str) -> dict:
    kit.switch(change)
    groups, not_reached, unaffected = expected_groups(kit.engine, change)
    code, document, workflow = impact_json(kit)
    assert [group_facts(group) for group in workflow["groups"]] == [
        (g.kind, g.position, kit.code_file, call_line(kit, change, g.line_text), g.issued, g.recorded,
         g.in_flight, g.finished, ())
        for g in groups
    ]
    assert (workflow["engine"], workflow["not_reached"], workflow["unaffected"]) == (kit.engine, not_reached, unaffected)
    summary = document["summary"]
    assert (summary["workflow_types"], summary["groups"], summary["could_not_check"]) == (1, len(groups), 0)
    assert summary["in_flight_broken"] == sum(len(g.in_flight) for g in groups)
    assert summary["finished_diverged"] == sum(len(g.finished) for g in groups)
    assert (summary["not_reached"], summary["unaffected"]) == (len(not_reached), len(unaffected))
    # Exit 1: a run breaks (in flight, or finished without --in-flight-only).
    assert code == 1
    return workflow


TEMPORAL_CHANGES = ["audit_after_review", "lookup_first", "escalate_large"]


@pytest.mark.temporal_server
@pytest.mark.slow
@pytest.mark.parametrize("change", TEMPORAL_CHANGES)
def test_temporal_impact_groups(temporal_kit: ScenarioKit, change: str) -> None:
    check_change(temporal_kit, change)


@pytest.mark.parametrize("change", TEMPORAL_CHANGES)
def test_dbos_impact_groups(dbos_kit: ScenarioKit, change: str) -> None:
    check_change(dbos_kit, change)


@pytest.mark.parametrize("change", ["audit_after_review", "lookup_first"])
def test_langgraph_impact_groups_and_guidance(langgraph_kit: ScenarioKit, change: str) -> None:
    workflow = check_change(langgraph_kit, change)
    # No code guard on LangGraph's functional API: the engine's own guidance instead.
    assert [group["guard"] for group in workflow["groups"]] == [None]


@pytest.mark.parametrize("kit_name", ["dbos_kit", "langgraph_kit"])
def test_finished_only_breaks_pass_with_in_flight_only(kit_name: str, request: pytest.FixtureRequest) -> None:
    kit: ScenarioKit = request.getfixturevalue(kit_name)
    kit.switch("audit_after_review")
    code, _, workflow = impact_json(kit, "--in-flight-only")
    assert code == 0
    assert workflow["not_reached"] == IN_FLIGHT


@pytest.mark.parametrize("kit_name", ["dbos_kit", "langgraph_kit"])
def test_v1_has_no_groups_and_every_run_unaffected(kit_name: str, request: pytest.FixtureRequest) -> None:
    kit: ScenarioKit = request.getfixturevalue(kit_name)
    code, _, workflow = impact_json(kit)
    assert (code, workflow["groups"], workflow["not_reached"]) == (0, [], [])
    assert sorted(workflow["unaffected"]) == sorted(kit.run_ids)


# What ``check`` ends its summary with when the lookup moves first: one line for the one group.
CHECK_LINE = ("2 in-flight runs of {type} break at event #{position} ({file}:{line}), and 3 finished diverge there; "
              "run `replaytest impact` for the guard")


@pytest.mark.parametrize("kit_name", [
    pytest.param("temporal_kit", marks=[pytest.mark.temporal_server, pytest.mark.slow]), "dbos_kit", "langgraph_kit",
])
def test_check_ends_with_the_grouped_line(kit_name: str, request: pytest.FixtureRequest) -> None:
    kit: ScenarioKit = request.getfixturevalue(kit_name)
    kit.switch("lookup_first")
    done = run_replaytest(kit.root, "check")
    assert done.returncode == 1, done.stdout + done.stderr
    expected = CHECK_LINE.format(type=kit.workflow_type, position=FIRST[kit.engine], file=kit.code_file,
                                 line=kit.line_of(LOOKUP_TEXT, "lookup_first"))
    assert done.stdout.rstrip().splitlines()[-1] == expected, done.stdout


@pytest.mark.parametrize(("change", "level", "runs"), [
    ("audit_after_review", "warning", "3 finished runs diverge"),
    ("lookup_first", "error", "2 in-flight and 3 finished runs break"),
])
def test_github_annotates_each_group_at_its_line(dbos_kit: ScenarioKit, change: str, level: str, runs: str) -> None:
    dbos_kit.switch(change)
    [group], _, _ = expected_groups("dbos", change)
    done = run_replaytest(dbos_kit.root, "impact", "--output-format", "github")
    assert done.returncode == 1, done.stdout + done.stderr
    [annotation] = done.stdout.splitlines()
    line = call_line(dbos_kit, change, group.line_text)
    assert annotation.startswith(
        f"::{level} file={dbos_kit.code_file},line={line},title=replaytest impact%3A command-mismatch::"
        f"resolve_dispute: {runs} at event #{group.position} (command-mismatch): "
    ), annotation
    # The message's lines are joined by %0A: the runs, then the guard the report suggests (verified).
    assert "%0Aruns: " + ", ".join(group.in_flight + group.finished) + "%0Aguard: dbos patch '" in annotation, annotation
    assert "in dbos_dispute_desk/app.py (resolve_dispute): verified: 5 of 5 histories replay green; " in annotation
    assert annotation.endswith("on resume of the guarded code, as the engine rehearsed it: 2 in-flight runs take the "
                               f"{'old' if change == 'lookup_first' else 'new'} path"), annotation
