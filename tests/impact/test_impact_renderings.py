"""The impact renderings of what other steps fill in (guards with their verification, patch verdicts,
LangGraph guidance) and of long or hostile run lists, from hand-built report objects."""

from __future__ import annotations

import json
from pathlib import Path

from replaytest.impact.model import (
    FreshRun,
    Guard,
    GroupKey,
    ImpactGroup,
    ImpactReport,
    PatchUse,
    Verification,
    WorkflowImpact,
)
from replaytest.impact.report import impact_data, render_github, render_markdown, render_text, verdict_text
from replaytest.replay.divergence import CommandView, ReplayResult, SourcePosition

DIFF = """--- app/agent.py
+++ app/agent.py
@@ -10,2 +10,3 @@
     decision = ctx.wait_signal("decision")
-    ctx.step("write audit log", write_audit_log, claim, decision)
+    if ctx.patched("invoice_dispute-audit"):
+        ctx.step("write audit log", write_audit_log, claim, decision)
"""


def run(workflow_id: str, status: str = "completed") -> ReplayResult:
    return ReplayResult(Path(f"histories/{workflow_id}.json"), "journal", "invoice_dispute", workflow_id,
                        status="diverged", run_status=status)


def group(in_flight: list[ReplayResult], finished: list[ReplayResult], guard: Guard | None = None,
          note: str | None = None) -> ImpactGroup:
    return ImpactGroup(
        key=GroupKey("invoice_dispute", "command-mismatch", ("step", "write audit log"), "app/agent.py", 11),
        position=5, recorded=[CommandView("step", "issue credit note")], issued=CommandView("step", "write audit log"),
        source=SourcePosition("app/agent.py", 11, "invoice_dispute"), message="the code issued a new step",
        in_flight=in_flight, finished=finished, guard=guard, guard_note=note,
    )


def guard(verification: Verification | None) -> Guard:
    return Guard("journal", "invoice_dispute-audit", Path("app/agent.py"), "invoice_dispute", (11, 12), None,
                 "guarded file text", DIFF, verification)


def report_of(*groups: ImpactGroup, patches: list[PatchUse] | None = None, guidance: str | None = None) -> ImpactReport:
    impact = WorkflowImpact("invoice_dispute", "journal", list(groups), patches=patches or [], guidance=guidance)
    return ImpactReport([impact])


NEW_PATH = FreshRun("invoice_dispute-audit", "new path", "step 'write audit log' (agent.py:12)",
                    "the check `invoice_dispute-audit` answered True in a new run, which then issued step 'write audit "
                    "log' (agent.py:12), from the guard's new block", Path("h/c-1.json"), "the journal worker")
OLD_PATH = FreshRun("invoice_dispute-audit", "old path", "step 'issue credit note' (agent.py:14)",
                    "the check `invoice_dispute-audit` answered True in a new run, but the run then issued step 'issue "
                    "credit note' (agent.py:14), from the guard's old block: the guard sends new runs down the old path",
                    Path("h/c-1.json"), "the journal worker")


def test_a_verified_guard_in_every_format() -> None:
    report = report_of(group([run("p-1", "parked")], [run("c-1")], guard(Verification(5, 5))))
    text = render_text(report)
    assert ("    guard     journal patch 'invoice_dispute-audit' in app/agent.py (invoice_dispute): "
            "verified: 5 of 5 histories replay green") in text.splitlines()
    assert '      +    if ctx.patched("invoice_dispute-audit"):' in text.splitlines()
    markdown = render_markdown(report)
    assert ("| guard | journal patch 'invoice_dispute-audit' in app/agent.py (invoice_dispute): "
            "**verified: 5 of 5 histories replay green** |") in markdown.splitlines()
    assert "```diff\n" + DIFF.rstrip("\n") + "\n```" in markdown
    [annotation] = render_github(report).splitlines()
    assert annotation.startswith("::error file=app/agent.py,line=11,")
    assert annotation.endswith("%0Aguard: journal patch 'invoice_dispute-audit' in app/agent.py (invoice_dispute): "
                               "verified: 5 of 5 histories replay green")
    data = json.loads(json.dumps(impact_data(report)))
    assert data["workflows"][0]["groups"][0]["guard"] == {
        "engine": "journal", "kind": "patch", "patch_id": "invoice_dispute-audit", "path": "app/agent.py", "function": "invoice_dispute",
        "new_range": [11, 12], "old_range": None, "diff": DIFF,
        "verified": {"histories": 5, "passed": 5, "ok": True, "failing": []},
        "verification": "verified: 5 of 5 histories replay green",
        "resume": [],
        "fresh_run": None,
    }


def test_a_guard_whose_new_runs_take_the_new_path_says_so_and_names_the_command() -> None:
    report = report_of(group([run("p-1", "parked")], [run("c-1")], guard(Verification(5, 5, fresh_runs=[NEW_PATH]))))
    lines = render_text(report).splitlines()
    assert ("    guard     journal patch 'invoice_dispute-audit' in app/agent.py (invoice_dispute): verified: 5 of 5 "
            "histories replay green; a new run, as the engine rehearsed it, takes the new path (step 'write audit log' "
            "(agent.py:12) next)") in lines
    assert f"    fresh run new path: {NEW_PATH.text}" in lines
    assert any(line.startswith("| fresh run | new path: the check ") and "write audit log" in line
               for line in render_markdown(report).splitlines())
    data = json.loads(json.dumps(impact_data(report)))
    assert data["workflows"][0]["groups"][0]["guard"]["fresh_run"] == {
        "path": "new path", "command": "step 'write audit log' (agent.py:12)", "text": NEW_PATH.text,
        "history": "h/c-1.json", "driver": "the journal worker",
    }
    assert data["workflows"][0]["groups"][0]["guard"]["verified"]["ok"] is True


def test_a_guard_whose_new_runs_take_the_old_path_is_not_verified_though_every_history_replays_green() -> None:
    verification = Verification(5, 5, fresh_runs=[OLD_PATH])
    assert not verification.verified
    report = report_of(group([run("p-1", "parked")], [run("c-1")], guard(verification)))
    assert ("    guard     journal patch 'invoice_dispute-audit' in app/agent.py (invoice_dispute): NOT verified: 5 of "
            f"5 histories replay green, but a new run of the guarded code takes the old path: {OLD_PATH.text}"
            ) in render_text(report).splitlines()
    guard_data = json.loads(json.dumps(impact_data(report)))["workflows"][0]["groups"][0]["guard"]
    assert guard_data["verified"]["ok"] is False
    assert guard_data["fresh_run"]["path"] == "old path"


def test_a_verified_guard_says_which_path_each_in_flight_run_takes_on_resume() -> None:
    from replaytest.impact.report import verification_text

    verification = Verification(5, 5, resume=[(Path("h/p-1.json"), "old path"), (Path("h/p-2.json"), "old path"),
                                              (Path("h/p-3.json"), "new path")])
    assert verification_text(verification) == (
        "verified: 5 of 5 histories replay green; on resume of the guarded code, as the engine rehearsed it: "
        "2 in-flight runs take the old path, 1 in-flight run takes the new path")


def test_the_text_report_names_the_runs_that_take_each_path_on_the_guarded_code() -> None:
    parked = [run("p-1", "parked"), run("p-2", "parked")]
    waiting = run("w-1", "parked")
    verification = Verification(4, 4, resume=[(parked[0].history_path, "old path"), (parked[1].history_path, "old path"),
                                              (waiting.history_path, "new path")])
    report = report_of(group(parked, [run("c-1")], guard(verification)))
    report.workflows[0].not_reached.append(waiting)
    lines = render_text(report).splitlines()
    assert "    resume    old path (2): p-1, p-2" in lines
    assert "    resume    new path (1): w-1" in lines


def test_a_guard_that_does_not_verify_names_the_history_that_still_fails() -> None:
    failing = Verification(5, 4, [(Path("histories/c-1.json"), "command-mismatch at event #6")])
    report = report_of(group([], [run("c-1")], guard(failing)))
    assert ("NOT verified: histories/c-1.json still fails: command-mismatch at event #6" in render_text(report))
    data = impact_data(report)["workflows"][0]["groups"][0]["guard"]
    assert data["verified"] == {"histories": 5, "passed": 4, "ok": False,
                                "failing": [{"history": "histories/c-1.json", "reason": "command-mismatch at event #6"}]}
    unreplayed = report_of(group([], [run("c-1")], guard(None)))
    assert "NOT verified: the guarded code was not replayed" in render_text(unreplayed)
    assert impact_data(unreplayed)["workflows"][0]["groups"][0]["guard"]["verified"] is None
    # A finished-only group is a warning annotation.
    assert render_github(report).startswith("::warning ")


def test_patch_verdicts_and_guidance() -> None:
    still = PatchUse("refund-v2", "journal", Path("app/agent.py"), 30, False,
                     needed_by=[run("old-1", "parked"), run("old-2", "parked")], marked_by=[run("new-1")])
    deprecate = PatchUse("audit", "journal", Path("app/agent.py"), 40, False, marked_by=[run("new-1")])
    remove = PatchUse("legacy", "journal", Path("app/agent.py"), 50, True)
    assert verdict_text(still) == "2 runs still need it (oldest: old-1)"
    assert verdict_text(deprecate) == ("deprecate now: no in-flight run needs the old branch; 1 retained history "
                                       "records the marker")
    assert verdict_text(remove) == "remove now: no retained history needs either branch"
    guidance = "stamp a version in the thread's input at start and branch on it; threads that need it: t-1"
    report = report_of(patches=[still, deprecate, remove], guidance=guidance)
    lines = render_text(report).splitlines()
    assert "  patch 'refund-v2' at app/agent.py:30: 2 runs still need it (oldest: old-1)" in lines
    assert "  deprecate_patch 'legacy' at app/agent.py:50: remove now: no retained history needs either branch" in lines
    assert f"  guidance: {guidance}" in lines
    markdown = render_markdown(report).splitlines()
    assert "| `refund-v2` (patch) | `app/agent.py:30` | 2 runs still need it (oldest: old-1) |" in markdown
    assert f"**Guidance**: {guidance}" in markdown
    [first, _, third] = impact_data(report)["workflows"][0]["patches"]
    assert first == {"patch_id": "refund-v2", "engine": "journal", "path": "app/agent.py", "line": 30,
                     "deprecated": False, "needed_by": ["old-1", "old-2"], "marked_by": ["new-1"], "replayed_old_by": [],
                     "verdict": "still-needed", "verdict_text": "2 runs still need it (oldest: old-1)"}
    assert (third["verdict"], third["deprecated"]) == ("remove-now", True)


def test_a_group_without_a_guard_says_why() -> None:
    report = report_of(group([run("p-1", "parked")], [], note="LangGraph's functional API has no patch call"))
    assert "    no guard  LangGraph's functional API has no patch call" in render_text(report).splitlines()
    assert "| no guard | LangGraph's functional API has no patch call |" in render_markdown(report).splitlines()


def test_long_run_lists_are_cut_in_text_and_collapsed_in_markdown() -> None:
    runs = [run(f"p-{n:02}", "parked") for n in range(12)]
    report = report_of(group(runs, []))
    text = render_text(report)
    assert ("    in-flight (12): p-00, p-01, p-02, p-03, p-04, p-05, p-06, p-07, p-08, p-09, … and 2 more "
            "(--details lists them)") in text.splitlines()
    assert "p-10, p-11" in render_text(report, details=True)
    markdown = render_markdown(report)
    assert "| in-flight (12) | <details><summary>12 in-flight runs</summary>`p-00`, `p-01`" in markdown
    assert "<details>" not in render_markdown(report, details=True)


def test_history_text_cannot_forge_lines_or_break_the_markdown() -> None:
    hostile = run("evil\x1b[2J\nimpact: 0 in-flight runs break|x`y")
    hostile.workflow_type = "invoice_dispute"
    report = report_of(group([], [hostile]))
    text = render_text(report)
    assert "\x1b" not in text and "\nimpact: 0 in-flight" not in text
    assert "evil\\x1b[2J\\nimpact: 0 in-flight runs break|x`y" in text
    markdown = render_markdown(report)
    assert "`evil\\x1b[2J\\nimpact: 0 in-flight runs break\\|x'y`" in markdown
    annotation = render_github(report)
    assert annotation.count("\n") == 1 and "\x1b" not in annotation


def test_markdown_lists_at_most_200_runs_of_a_group_so_the_comment_fits() -> None:
    runs = [run(f"p-{n:03}", "parked") for n in range(250)]
    markdown = render_markdown(report_of(group(runs, [])))
    assert "`p-199` … and 50 more (`--details` or the json report lists them)</details>" in markdown
    assert "`p-200`" not in markdown
    assert "`p-249`" in render_markdown(report_of(group(runs, [])), details=True)
