"""``replaytest replay`` and ``replaytest diff``: output, JSON, exit codes, configuration defaults."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import replay_apps as apps
from click.testing import CliRunner
from replaykit import record

from replaytest.cli import cli

REPO = Path(__file__).resolve().parents[2]
APP = "fixtures.journal_app.agent:support_agent"


def run(*args: str, cwd: Path | None = None) -> tuple[int, str]:
    """Invoke the CLI in-process (from ``cwd`` when given); returns exit code and combined output."""
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(previous)
    return result.exit_code, result.output


def test_fixture_histories_replay_cleanly_against_the_example_app() -> None:
    code, out = run("replay", str(REPO / "fixtures/histories"), "--workflows", APP, cwd=REPO)
    assert code == 0, out
    assert "replayed 3 histories: 3 passed, 0 diverged, 0 stale, 0 error" in out


def test_divergence_exits_1_with_the_report(tmp_path: Path) -> None:
    history = record(tmp_path, apps.recorded, {"text": "x"}, name="orders")
    code, out = run("replay", str(history), "--workflows", "replay_apps:renamed_step")
    assert code == 1
    assert "command-mismatch at event #2" in out and "replay_apps.py:" in out


def test_json_format(tmp_path: Path) -> None:
    history = record(tmp_path, apps.recorded, {"text": "x"}, name="orders")
    code, out = run("replay", str(history), "--workflows", "replay_apps:reworded_prompt", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["version"] == 1
    assert data["summary"] == {
        "histories": 1, "passed": 1, "diverged": 0, "stale": 0, "error": 0, "warnings": 1, "notes": [],
        "diverged_in_flight": 0, "diverged_finished": 0, "diverged_run_status_unknown": 0,
        "diverged_by_run_status": {"completed": 0, "failed": 0, "running": 0, "parked": 0, "unknown": 0},
        "excluded": 0,
    }
    assert data["excluded"] == []
    [entry] = data["results"]
    assert entry["workflow"] == {"type": "orders", "id": "wf-orders"}
    assert (entry["run_status"], entry["in_flight"]) == ("completed", False)
    assert entry["warnings"][0]["kind"] == "prompt-drift"


def test_prompts_and_strict_args_options(tmp_path: Path) -> None:
    history = record(tmp_path, apps.recorded, {"text": "x"}, name="orders")
    assert run("replay", str(history), "-w", "replay_apps:reworded_prompt", "--prompts", "fail")[0] == 1
    assert run("replay", str(history), "-w", "replay_apps:changed_args")[0] == 0
    assert run("replay", str(history), "-w", "replay_apps:changed_args", "--strict-args")[0] == 1


def test_stale_and_malformed_exit_2(tmp_path: Path) -> None:
    history = record(tmp_path, apps.recorded, {"text": "x"}, name="orders")
    code, out = run("replay", str(history), "-w", "replay_apps:billing_v1")
    assert code == 2 and "stale" in out and "'orders'" in out
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "replaytest-history", "format_version": 9}')
    code, out = run("replay", str(broken), "-w", "replay_apps:recorded")
    assert code == 2 and "newer replaytest" in out


def test_a_module_named_alone_for_journal_workflows_is_said_to_need_module_attr() -> None:
    # The journal takes each workflow as module:attr; "give --workflows" would read as if none had been given.
    code, out = run("replay", str(REPO / "fixtures/histories"), "--workflows", "fixtures.journal_app.agent", cwd=REPO)
    assert code == 2, out
    assert ("known types: none: 'fixtures.journal_app.agent' names a module alone, which serves the engines that "
            "find their workflows in a module (Temporal and Restate among them); name each of this engine's "
            "workflows as module:attr") in out
    assert "configure replay_workflows" not in out


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    history = record(tmp_path, apps.recorded, {"text": "x"}, name="orders")
    code, out = run("replay", str(history), "-w", "no_such_module_here:thing")
    assert code == 2 and "cannot import 'no_such_module_here:thing'" in out
    code, out = run("replay", cwd=tmp_path)
    assert code == 2 and "no history paths" in out


def test_paths_and_workflows_default_to_the_project_configuration(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO / "fixtures/journal_app", project / "cli_example_shop", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "fixtures/histories", project / "histories")
    (project / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["cli_example_shop.agent:support_agent"]\n'
    )
    code, out = run("replay", cwd=project)
    assert code == 0, out
    assert "replayed 3 histories: 3 passed" in out


def test_diff_identical_and_different(tmp_path: Path) -> None:
    a = record(tmp_path, apps.recorded, {"text": "x"}, name="a")
    b = record(tmp_path, apps.recorded, {"text": "x"}, name="b")
    code, out = run("diff", str(a), str(b))
    assert code == 0 and "identical command streams" in out
    c = record(tmp_path, apps.added_step, {"text": "x"}, name="c")
    code, out = run("diff", str(a), str(c))
    assert code == 1
    assert "extra-command at event #4" in out
    assert "A         nothing" in out and "B         step 'audit'" in out
    code, out = run("diff", str(a), str(c), "--format", "json")
    assert code == 1 and json.loads(out)["divergence"]["position"] == 4


def test_diff_shows_args_and_prompt_changes(tmp_path: Path) -> None:
    a = record(tmp_path, apps.recorded, {"text": "x"}, name="a")
    other = record(tmp_path, apps.recorded, {"text": "y"}, name="other")
    code, out = run("diff", str(a), str(other))
    assert code == 1 and "args-mismatch at event #1" in out
    assert run("diff", str(a), str(other), "--ignore-args")[0] == 0
    reworded = record(tmp_path, apps.reworded_prompt, {"text": "x"}, name="reworded")
    code, out = run("diff", str(a), str(reworded))
    assert code == 1 and "prompt-drift at event #1" in out


def test_diff_of_different_workflows_exits_2(tmp_path: Path) -> None:
    a = record(tmp_path, apps.recorded, {"text": "x"}, name="a")
    b = record(tmp_path, apps.billing_v1, 3, name="b")
    code, out = run("diff", str(a), str(b))
    assert code == 2 and "different workflow types" in out


@pytest.mark.parametrize("path", sorted((REPO / "fixtures/histories").glob("*.json")), ids=lambda p: p.name)
def test_each_fixture_history_diffs_identical_with_itself(path: Path) -> None:
    assert run("diff", str(path), str(path))[0] == 0


def test_results_stored_as_blobs_replay_and_blob_files_are_not_histories(tmp_path: Path) -> None:
    history = record(tmp_path, apps.reporting, 20_000, name="reporting")
    assert '"result_ref": "sha256:' in history.read_text()
    assert list((tmp_path / "blobs").iterdir())
    code, out = run("replay", str(tmp_path), "-w", "replay_apps:reporting")
    assert code == 0, out
    assert "replayed 1 histories: 1 passed" in out


def test_a_file_no_replayer_recognises_is_an_error(tmp_path: Path) -> None:
    other = tmp_path / "settings.json"
    other.write_text('{"theme": "dark"}')
    code, out = run("replay", str(other), "-w", "replay_apps:recorded")
    assert code == 2 and "not a history any replayer recognises" in out


def test_diff_ignoring_args_shows_where_two_fixture_runs_take_different_paths() -> None:
    histories = REPO / "fixtures/histories"
    code, out = run(
        "diff", str(histories / "support_agent-question.json"), str(histories / "support_agent-refund-approved.json"), "--ignore-args"
    )
    assert code == 1
    assert "command-mismatch at event #3: A recorded model 'write reply', B signal 'approved'" in out


def test_quiet_prints_only_histories_that_need_attention(tmp_path: Path) -> None:
    shutil.copytree(REPO / "fixtures/histories", tmp_path / "histories")
    record(tmp_path / "histories", apps.recorded, {"text": "x"}, name="orders")
    code, out = run("replay", str(tmp_path / "histories"), "-w", APP, "-w", "replay_apps:renamed_step", "-q", cwd=REPO)
    assert code == 1
    lines = out.splitlines()
    assert not any("support_agent" in line for line in lines)
    assert any(line.endswith("orders.json: orders id wf-orders: diverged (3 recorded events), finished run (completed)") for line in lines)
    assert lines[-3:] == [
        "replayed 4 histories: 3 passed, 1 diverged, 0 stale, 0 error; 0 warning(s)",
        "in-flight runs that break: 0",
        "finished runs that diverge: 1 (1 completed)",
    ]


def test_no_workflows_configured_is_one_usage_error_not_a_stale_block_per_history(tmp_path: Path) -> None:
    (tmp_path / "histories").mkdir()
    for name in ("a", "b", "c"):
        record(tmp_path / "histories", apps.recorded, {"text": name}, name=f"orders-{name}")
    (tmp_path / "pyproject.toml").write_text('[tool.replaytest.replay]\npaths = ["histories"]\n', encoding="utf-8")
    code, out = run("replay", cwd=tmp_path)
    assert code == 2, out
    assert out.count("error:") == 1 and "no current code to replay against" in out and "--workflows" in out
    assert "stale" not in out
