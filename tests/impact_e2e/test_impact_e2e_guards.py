"""The version guards ``replaytest impact --base`` suggests for each change of the Temporal and DBOS
scenarios, taken all the way: the guard is shown verified against all five recorded runs, ``--fix``
writes it into the code, the guarded code replays every recorded run green, and a fresh run of the
guarded code on the real engine takes the new path and records the patch marker."""

from __future__ import annotations

import base64
import json

import impact_dbos_kit
import impact_temporal_kit
import pytest
from impact_kit import ScenarioKit, git, impact_json, replay_json, run_replaytest

# What a fresh, approved run of the guarded code does, per change: the dispute's amount (the branch
# change escalates only above 500) and the operations it must run, in order.
TEMPORAL_NEW_PATH = {
    "audit_after_review": (75.0, ["classify_dispute", "lookup_invoice", "record_audit", "issue_credit", "notify_customer"]),
    "lookup_first": (75.0, ["lookup_invoice", "classify_dispute", "issue_credit", "notify_customer"]),
    "escalate_large": (900.0, ["classify_dispute", "lookup_invoice", "escalate_to_finance", "notify_customer"]),
}
DBOS_WAIT = ["DBOS.recv", "DBOS.sleep"]
DBOS_NEW_PATH = {
    # "patched" marks where the guard's DBOS.patch runs; it takes a function id of its own.
    "audit_after_review": (75.0, ["classify_dispute", "lookup_invoice", *DBOS_WAIT, "patched", "record_audit",
                                  "issue_credit", "notify_customer"]),
    "lookup_first": (75.0, ["patched", "lookup_invoice", "classify_dispute", *DBOS_WAIT, "issue_credit", "notify_customer"]),
    "escalate_large": (900.0, ["classify_dispute", "lookup_invoice", *DBOS_WAIT, "patched", "escalate_to_finance",
                               "notify_customer"]),
}


# The path each parked run takes on resume of the guarded code, as the engine itself rehearsed it. On
# Temporal a guard before the wait (lookup_first wraps the first two activities) is checked in a workflow
# task the parked runs completed long ago: the SDK answers False there and they keep the old path. A guard
# after the wait is first checked in the task the review signal starts: True, the new path.
TEMPORAL_RESUME = {"audit_after_review": "new path", "lookup_first": "old path", "escalate_large": "new path"}
# DBOS answers a patch check with nothing recorded at its function id True (and writes the marker): the
# guards after the recv are first checked past the parked runs' history; the one wrapping the lookups sits on
# the classification every run recorded, and answers False.
DBOS_RESUME = {"audit_after_review": "new path", "lookup_first": "old path", "escalate_large": "new path"}
RESUME_TEXT = {"new path": "2 in-flight runs take the new path", "old path": "2 in-flight runs take the old path"}


def verified_guard_applied(kit: ScenarioKit, change: str, guard_call: str, resume: str) -> tuple[str, dict]:
    """The change's one guard: shown verified on every recorded run, with the path a new run takes (the
    engine's fresh run of the guarded code) and the path the parked runs take on resume, then applied with
    ``--fix``; its patch id and its ``fresh_run``."""
    kit.switch(change)
    code, _, workflow = impact_json(kit, "--base", kit.base)
    assert code == 1
    [group] = workflow["groups"]
    guard = group["guard"]
    assert guard is not None, group["guard_note"]
    assert (guard["engine"], guard["path"]) == (kit.engine, kit.code_file)
    assert guard["verified"] == {"histories": 5, "passed": 5, "ok": True, "failing": []}
    fresh = guard["fresh_run"]
    assert fresh is not None and fresh["path"] == "new path", fresh
    assert fresh["history"].startswith("histories/") and fresh["command"], fresh
    assert guard["verification"] == ("verified: 5 of 5 histories replay green; a new run, as the engine rehearsed it, "
                                     f"takes the new path ({fresh['command']} next); on resume of the guarded code, as "
                                     f"the engine rehearsed it: {RESUME_TEXT[resume]}")
    assert sorted(entry["path"] for entry in guard["resume"]) == [resume, resume]
    assert guard["diff"].startswith("---"), guard["diff"]
    patch_id = guard["patch_id"]
    # --diff prints it as a patch git accepts for this checkout; nothing is written yet.
    shown = run_replaytest(kit.root, "impact", "--base", kit.base, "--diff")
    assert shown.returncode in (0, 1), shown.stdout + shown.stderr
    assert guard["diff"] in shown.stdout
    (kit.root / "guard.patch").write_text(shown.stdout, encoding="utf-8")
    git(kit.root, "apply", "--check", "guard.patch")
    assert (kit.root / kit.code_file).read_text() == kit.changes[change]
    fixed = run_replaytest(kit.root, "impact", "--base", kit.base, "--fix")
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    assert f'{guard_call}("{patch_id}")' in (kit.root / kit.code_file).read_text()
    code, results = replay_json(kit)
    assert (code, {run: r["status"] for run, r in results.items()}) == (0, dict.fromkeys(kit.run_ids, "passed"))
    return patch_id, fresh


def _named(fresh: dict) -> str:
    """The name in a fresh run's command (``activity 'record_audit' (disputes.py:88)``)."""
    return str(fresh["command"]).split("'")[1]


def _temporal_source(kit: ScenarioKit, fresh: dict) -> tuple[float, str]:
    """The amount and the review decision of the recorded run whose input impact's fresh run started from."""
    events = json.loads((kit.root / fresh["history"]).read_text())["events"]
    [dispute] = [json.loads(base64.b64decode(payload["data"]))
                 for payload in events[0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"]]
    [decision] = [json.loads(base64.b64decode(event["workflowExecutionSignaledEventAttributes"]["input"]["payloads"][0]["data"]))
                  for event in events if "workflowExecutionSignaledEventAttributes" in event]
    return dispute["amount"], decision


def _temporal_after_marker(history: dict, patch_id: str) -> str:
    """The activity the server scheduled first after the guard's patch marker."""
    names = []
    for event in history["events"]:
        if "activityTaskScheduledEventAttributes" in event:
            names.append(event["activityTaskScheduledEventAttributes"]["activityType"]["name"])
        elif impact_temporal_kit.patch_markers({"events": [event]}) == [patch_id]:
            names.append("<marker>")
    return names[names.index("<marker>") + 1]


def _dbos_source(kit: ScenarioKit, fresh: dict) -> tuple[float, str]:
    history = json.loads((kit.root / fresh["history"]).read_text())
    [dispute] = history["input"]["args"]
    [decision] = [event["result"] for event in history["events"] if event["name"] == "DBOS.recv"]
    return dispute["amount"], decision


@pytest.mark.temporal_server
@pytest.mark.slow
@pytest.mark.parametrize("change", list(TEMPORAL_NEW_PATH))
def test_temporal_guard_verifies_applies_and_marks_new_runs(temporal_kit: ScenarioKit, change: str) -> None:
    patch_id, fresh = verified_guard_applied(temporal_kit, change, "workflow.patched", TEMPORAL_RESUME[change])
    amount, activities = TEMPORAL_NEW_PATH[change]
    _, history = impact_temporal_kit.fresh_run(temporal_kit, f"dispute-guarded-{change}", "approve", amount)
    assert impact_temporal_kit.patch_markers(history) == [patch_id]
    assert impact_temporal_kit.scheduled_activities(history) == activities
    # The server runs a new dispute with the input and decision impact's fresh run started from: the activity it
    # schedules right after the guard's marker is the command impact's fresh run issued after the check.
    amount, decision = _temporal_source(temporal_kit, fresh)
    _, same_input = impact_temporal_kit.fresh_run(temporal_kit, f"dispute-fresh-{change}", decision, amount)
    assert _temporal_after_marker(same_input, patch_id) == _named(fresh)


@pytest.mark.parametrize("change", list(DBOS_NEW_PATH))
def test_dbos_guard_verifies_applies_and_marks_new_runs(dbos_kit: ScenarioKit, change: str) -> None:
    patch_id, fresh = verified_guard_applied(dbos_kit, change, "DBOS.patch", DBOS_RESUME[change])
    amount, operations = DBOS_NEW_PATH[change]
    _, history_file = impact_dbos_kit.fresh_run(dbos_kit, f"dispute-guarded-{change}", "approve", amount)
    assert impact_dbos_kit.step_names(history_file) == [
        f"patched {patch_id}" if name == "patched" else name for name in operations
    ]
    # DBOS runs a new dispute with the input and decision impact's fresh run started from: the operation it
    # records right after the guard's patch marker is the command impact's fresh run issued after the check.
    amount, decision = _dbos_source(dbos_kit, fresh)
    _, same_input = impact_dbos_kit.fresh_run(dbos_kit, f"dispute-fresh-{change}", decision, amount)
    names = impact_dbos_kit.step_names(same_input)
    assert names[names.index(f"patched {patch_id}") + 1] == _named(fresh)


# The threads each LangGraph change leaves needing a version stamp: (in flight, finished).
LANGGRAPH_NEED = {
    "audit_after_review": ("none", "dispute-1, dispute-2, dispute-3"),
    "lookup_first": ("dispute-4, dispute-5", "dispute-1, dispute-2, dispute-3"),
}


@pytest.mark.parametrize("change", list(LANGGRAPH_NEED))
def test_langgraph_gets_guidance_naming_the_threads_and_no_code_guard(langgraph_kit: ScenarioKit, change: str) -> None:
    langgraph_kit.switch(change)
    code, _, workflow = impact_json(langgraph_kit, "--base", langgraph_kit.base)
    assert code == 1
    in_flight, finished = LANGGRAPH_NEED[change]
    guidance = workflow["guidance"]
    assert guidance.startswith("LangGraph's functional API has no patch marker: stamp a version into the thread's input"), guidance
    assert guidance.endswith(f"; in-flight threads that need it: {in_flight}; finished threads "
                             f"(for forks and replays from a checkpoint): {finished}"), guidance
    assert [(group["guard"], group["guard_note"]) for group in workflow["groups"]] == [(None, guidance)]
    # Nothing to apply: --fix leaves the code as it is.
    fixed = run_replaytest(langgraph_kit.root, "impact", "--base", langgraph_kit.base, "--fix")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert (langgraph_kit.root / langgraph_kit.code_file).read_text() == langgraph_kit.changes[change]


@pytest.mark.temporal_server
@pytest.mark.slow
def test_a_renamed_temporal_activity_keeps_its_recorded_type_name_and_new_runs_use_it(temporal_kit: ScenarioKit) -> None:
    """lookup_invoice renamed find_invoice: no patch, the activity keeps its recorded type name through
    @activity.defn(name=...), every recorded run replays green on the fixed code, and a fresh run on the server
    schedules the activity under the recorded name."""
    renamed = (temporal_kit.v1.replace("async def lookup_invoice(", "async def find_invoice(")
               .replace("(lookup_invoice,", "(find_invoice,").replace(", lookup_invoice,", ", find_invoice,"))
    (temporal_kit.root / temporal_kit.code_file).write_text(renamed, encoding="utf-8")
    code, _, workflow = impact_json(temporal_kit, "--base", temporal_kit.base)
    assert code == 1
    [group] = workflow["groups"]
    guard = group["guard"]
    assert (guard["kind"], guard["patch_id"], guard["function"]) == ("keep-name", "lookup_invoice", "find_invoice")
    assert '-@activity.defn\n+@activity.defn(name="lookup_invoice")\n async def find_invoice(' in guard["diff"]
    assert guard["verified"] == {"histories": 5, "passed": 5, "ok": True, "failing": []}
    fixed = run_replaytest(temporal_kit.root, "impact", "--base", temporal_kit.base, "--fix")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # the exit code describes the code before the fix
    code, results = replay_json(temporal_kit)
    assert (code, {r["status"] for r in results.values()}) == (0, {"passed"})
    _, history = impact_temporal_kit.fresh_run(temporal_kit, "dispute-renamed", "approve")
    assert impact_temporal_kit.scheduled_activities(history)[:2] == ["classify_dispute", "lookup_invoice"]
    assert impact_temporal_kit.patch_markers(history) == []
