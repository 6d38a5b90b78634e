"""``replaytest impact`` end to end on the journal runtime: a project whose configured histories are five recorded
runs of the invoice-dispute agent, replayed against changed code; the exit codes, every output format,
``--in-flight-only``, a history that cannot be checked, and the grouped lines ``check`` ends with."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import impact_agent as agent
import pytest
from click.testing import CliRunner
from impactkit import record_runs, tagged_line

from replaytest.cli import cli

AGENT_FILE = str(Path(agent.__file__).resolve())
PARKED = ["dispute-parked-1", "dispute-parked-2"]
COMPLETED = ["dispute-approved-1", "dispute-approved-2", "dispute-rejected-1"]
# These projects are not git repositories: the report says it could not look for version guards.
NO_GIT = "no version guards: the current folder is not in a git repository, and version guards take the old code from git"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_runs(tmp_path_factory.mktemp("recorded"), agent.invoice_dispute)


def project(root: Path, recorded: Path, workflow: str, *, ini: bool = False) -> Path:
    """A project whose settings point at the recorded histories and at ``impact_agent:<workflow>``; with
    ``ini`` through pytest's ini options (which win over [tool.replaytest.replay], set to the v1 code)."""
    shutil.copytree(recorded, root / "histories")
    text = '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["impact_agent:%s"]\n'
    if ini:
        text = text % "invoice_dispute" + (
            '\n[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["impact_agent:%s"]\n' % workflow)
    else:
        text = text % workflow
    (root / "pyproject.toml").write_text(text)
    return root


def run(cwd: Path, *args: str) -> tuple[int, str]:
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(previous)
    return result.exit_code, result.output


def test_json_report_of_a_step_inserted_after_the_wait(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "audit_after_decision")
    code, out = run(root, "impact", "--output-format", "json")
    assert code == 1, out
    data = json.loads(out)
    [workflow] = data["workflows"]
    assert (workflow["type"], workflow["engine"], workflow["not_reached"], workflow["unaffected"], workflow["patches"],
            workflow["guidance"]) == ("invoice_dispute", "journal", PARKED, [], [], None)
    [group] = workflow["groups"]
    assert {key: group[key] for key in ("kind", "position", "path", "line", "function", "guard", "guard_note")} == {
        "kind": "command-mismatch", "position": 5, "path": AGENT_FILE,
        "line": tagged_line(agent.audit_after_decision, "audit"), "function": "audit_after_decision",
        "guard": None, "guard_note": None,
    }
    assert (group["issued"]["kind"], group["issued"]["name"]) == ("step", "write audit log")
    assert [(side["kind"], side["name"]) for side in group["recorded"]] == [
        ("step", "issue credit note"), ("step", "notify customer")]
    assert group["runs"] == {"in_flight": [], "finished": COMPLETED, "unknown_status": []}
    assert data["could_not_check"] == []
    assert data["summary"] == {
        "workflow_types": 1, "groups": 1, "in_flight_broken": 0, "finished_diverged": 3,
        "unknown_status_diverged": 0, "not_reached": 2, "unaffected": 0, "could_not_check": 0, "patches": 0, "resume_refused": 0,
        "notes": [NO_GIT],
    }


def test_in_flight_only_ignores_finished_runs_but_not_a_broken_parked_one(tmp_path: Path, recorded: Path) -> None:
    after = project(tmp_path / "after", recorded, "audit_after_decision")
    assert run(after, "impact")[0] == 1
    code, out = run(after, "impact", "--in-flight-only")
    assert code == 0
    # Said, not hidden: the finished runs are still reported, and the note says they do not fail the run.
    assert "    finished (3): dispute-approved-1, dispute-approved-2, dispute-rejected-1" in out.splitlines()
    assert "note: --in-flight-only: 3 finished runs diverge without failing this run" in out.splitlines()
    swapped = project(tmp_path / "swapped", recorded, "payments_first")
    assert run(swapped, "impact", "--in-flight-only")[0] == 1
    unchanged = project(tmp_path / "unchanged", recorded, "invoice_dispute")
    code, out = run(unchanged, "impact")
    assert code == 0, out
    assert out.splitlines() == [
        "invoice_dispute (journal): no run breaks; 0 in-flight not reached yet, 5 unaffected",
        # The parked runs resumed by the journal's own worker, with the decision another run recorded.
        "  on resume (2 in flight, rehearsed on the engine): resume cleanly: the engine issues step 'issue credit "
        "note' next: dispute-parked-1, dispute-parked-2",
        "",
        "impact: 1 workflow type, 0 groups: 0 in-flight runs break, 0 finished runs diverge, 0 in-flight not reached "
        "yet, 5 unaffected, 0 could not be checked",
    ]


def test_text_report_of_swapped_steps(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "payments_first")
    code, out = run(root, "impact")
    assert code == 1
    line = tagged_line(agent.payments_first, "swapped")
    assert out.splitlines() == [
        "invoice_dispute (journal): 1 divergence point, 5 runs break; 0 in-flight not reached yet, 0 unaffected",
        f"  command-mismatch at event #1, {AGENT_FILE}:{line} in payments_first",
        "    recorded  step 'load invoice'",
        "    code now  step 'load payments'",
        "    why       the code issued step 'load payments' where the history recorded step 'load invoice'",
        "    in-flight (2): dispute-parked-1, dispute-parked-2",
        "    finished (3): dispute-approved-1, dispute-approved-2, dispute-rejected-1",
        "",
        f"note: {NO_GIT}",
        "impact: 1 workflow type, 1 group: 2 in-flight runs break, 3 finished runs diverge, 0 in-flight not reached "
        "yet, 0 unaffected, 0 could not be checked",
    ]


def test_markdown_report_of_a_branch_change(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "credit_limit_check")
    code, out = run(root, "impact", "--output-format", "markdown")
    assert code == 1
    line = tagged_line(agent.credit_limit_check, "limit")
    lines = out.splitlines()
    assert lines[0] == "## replaytest impact"
    assert "### `invoice_dispute` (journal)" in lines
    assert f"#### 1. command-mismatch at event #5 — `{AGENT_FILE}:{line} in credit_limit_check`" in lines
    assert "| recorded | `step 'issue credit note'` |" in lines
    assert "| code now | `step 'check credit limit'` |" in lines
    assert "| finished (2) | `dispute-approved-1`, `dispute-approved-2` |" in lines
    assert "**Not reached yet** (2 in-flight): `dispute-parked-1`, `dispute-parked-2`" in lines
    # What they do on resume is the journal worker's answer: the approval another run recorded takes them to
    # the credit-limit check the change added.
    assert ("**On resume** (2 in-flight, rehearsed on the engine): take the new path: the engine issues step 'check "
            "credit limit' next: `dispute-parked-1`, `dispute-parked-2`") in lines
    assert "Unaffected: 1 run replays green." in lines
    assert not any(text.startswith("| in-flight") for text in lines)


def test_github_annotations_are_one_per_group_at_its_line(tmp_path: Path, recorded: Path) -> None:
    after = project(tmp_path / "after", recorded, "audit_after_decision")
    code, out = run(after, "impact", "--output-format", "github")
    assert code == 1
    [annotation] = out.splitlines()
    line = tagged_line(agent.audit_after_decision, "audit")
    assert annotation.startswith(f"::warning file={AGENT_FILE},line={line},title=replaytest impact%3A command-mismatch::"
                                 "invoice_dispute: 3 finished runs diverge at event #5 (command-mismatch)")
    assert annotation.endswith("%0Aruns: dispute-approved-1, dispute-approved-2, dispute-rejected-1")
    swapped = project(tmp_path / "swapped", recorded, "payments_first")
    [annotation] = run(swapped, "impact", "--output-format", "github")[1].splitlines()
    assert annotation.startswith(f"::error file={AGENT_FILE},line={tagged_line(agent.payments_first, 'swapped')},")
    assert "invoice_dispute: 2 in-flight and 3 finished runs break at event #1" in annotation


def test_pytest_ini_settings_win_over_the_replaytest_table(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "payments_first", ini=True)
    code, out = run(root, "impact", "--output-format", "json")
    assert code == 1
    [group] = json.loads(out)["workflows"][0]["groups"]
    assert group["function"] == "payments_first"
    # --workflows and PATHS win over both.
    code, out = run(root, "impact", "histories", "--workflows", "impact_agent:invoice_dispute")
    assert code == 0, out


def test_a_history_that_cannot_be_checked_exits_2_and_is_listed(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "audit_after_decision")
    (root / "histories/broken.json").write_text('{"format": "replaytest-history", "format_version": 9}')
    code, out = run(root, "impact")
    assert code == 2
    assert "could not check 1 history:" in out
    assert "  histories/broken.json: error: " in out
    assert out.splitlines()[-1].endswith(", 0 unaffected, 1 could not be checked")
    data = json.loads(run(root, "impact", "--output-format", "json")[1])
    [entry] = data["could_not_check"]
    assert (entry["history"], entry["status"]) == ("histories/broken.json", "error")
    assert data["summary"]["could_not_check"] == 1
    # Still grouped: the five others.
    assert data["workflows"][0]["groups"][0]["runs"]["finished"] == COMPLETED


def test_a_configuration_error_exits_2(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest.replay]\nworkflows = [\"impact_agent:nope\"]\n")
    code, out = run(tmp_path, "impact")
    assert code == 2 and out.startswith("error: ")


def test_check_ends_with_the_grouped_counts(tmp_path: Path, recorded: Path) -> None:
    swapped = project(tmp_path / "swapped", recorded, "payments_first")
    code, out = run(swapped, "check", "--no-cache")
    assert code == 1
    line = tagged_line(agent.payments_first, "swapped")
    assert out.splitlines()[-1] == (
        f"2 in-flight runs of invoice_dispute break at event #1 ({AGENT_FILE}:{line}), and 3 finished diverge there; "
        "run `replaytest impact` for the guard")
    after = project(tmp_path / "after", recorded, "audit_after_decision")
    code, out = run(after, "check", "--no-cache")
    assert code == 1
    assert out.splitlines()[-1] == (
        f"3 finished runs of invoice_dispute diverge at event #5 ({AGENT_FILE}:"
        f"{tagged_line(agent.audit_after_decision, 'audit')}); run `replaytest impact` for the guard")
    unchanged = project(tmp_path / "unchanged", recorded, "invoice_dispute")
    code, out = run(unchanged, "check", "--no-cache")
    assert code == 0
    assert "replaytest impact" not in out
    # Machine-readable formats are left as they were.
    code, out = run(swapped, "check", "--no-cache", "--output-format", "json")
    assert "replaytest impact" not in out


def test_a_stale_history_could_not_be_checked(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "invoice_dispute")
    document = json.loads((root / "histories/approved-1.json").read_text())
    document["workflow"]["type"] = "credit_review"  # a type the current code no longer has
    (root / "histories/approved-1.json").write_text(json.dumps(document))
    code, out = run(root, "impact", "--output-format", "json")
    assert code == 2
    data = json.loads(out)
    [entry] = data["could_not_check"]
    assert (entry["history"], entry["status"], entry["workflow"]) == (
        "histories/approved-1.json", "stale", {"type": "credit_review", "id": "dispute-approved-1"})
    assert data["workflows"][0]["unaffected"] == ["dispute-approved-2", "dispute-parked-1", "dispute-parked-2",
                                                  "dispute-rejected-1"]


def test_excluded_histories_are_left_out_and_the_report_says_so(tmp_path: Path, recorded: Path) -> None:
    root = project(tmp_path, recorded, "payments_first")
    code, out = run(root, "impact", "--exclude", "histories/parked-*", "--output-format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["workflows"][0]["groups"][0]["runs"] == {"in_flight": [], "finished": COMPLETED, "unknown_status": []}
    assert data["summary"]["notes"] == ["2 histories left out by the exclude settings (not replayed, not counted)", NO_GIT]
    # The exit code follows: no in-flight run is left to break.
    assert run(root, "impact", "--exclude", "histories/parked-*", "--in-flight-only")[0] == 0
