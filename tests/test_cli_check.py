"""``replaytest check``: lint and replay as one CI gate, with one exit code and one report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "fixtures" / "journal_app" / "agent.py"
HISTORIES = REPO / "fixtures" / "histories"
REPLAY_CONFIG = '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The bundled journal example with its recorded histories, as a project of its own."""
    shutil.copy(AGENT, tmp_path / "agent.py")
    shutil.copytree(HISTORIES, tmp_path / "histories")
    (tmp_path / "pyproject.toml").write_text(REPLAY_CONFIG, encoding="utf-8")
    return tmp_path


def _check(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--no-cache", *args, "."],
        cwd=project, capture_output=True, text=True, timeout=120,
    )


def test_clean_code_and_histories_exit_0(project: Path) -> None:
    run = _check(project)
    assert run.returncode == 0, run.stdout + run.stderr
    # The lint's verdict line says it is the lint's: the replay's verdict follows it.
    assert "\nlint: All checks passed" in "\n" + run.stdout
    assert "replayed 3 histories: 3 passed, 0 diverged" in run.stdout


def test_a_lint_finding_fails_the_gate_even_when_replay_passes(project: Path) -> None:
    agent = project / "agent.py"
    source = agent.read_text(encoding="utf-8")
    agent.write_text(source.replace("    refunded = None\n", "    refunded = None\n    started = time.time()\n")
                     .replace("from typing import Any\n", "import time\nfrom typing import Any\n"), encoding="utf-8")
    run = _check(project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "RT101" in run.stdout
    # The replay itself trips on the new clock read: the runtime guard catches it too.
    assert "nondeterministic-call" in run.stdout


def test_a_divergence_fails_the_gate_and_is_shown(project: Path) -> None:
    agent = project / "agent.py"
    source = agent.read_text(encoding="utf-8")
    step = '    orders = ctx.step("fetch orders", fetch_orders, ticket["customer"])\n'
    assert step in source
    agent.write_text(source.replace(step, step + '    ctx.step("load profile", fetch_orders, "x")\n'), encoding="utf-8")
    run = _check(project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "All checks passed" in run.stdout
    assert "command-mismatch at event #3" in run.stdout
    assert "3 diverged" in run.stdout  # the parked run waits at 'approved', after the new step
    assert "in-flight runs that break: 1 (1 parked)" in run.stdout


def test_a_malformed_history_is_exit_2_naming_file_and_json_path(project: Path) -> None:
    broken = project / "histories" / "broken.json"
    document = json.loads((HISTORIES / "support_agent-question.json").read_text(encoding="utf-8"))
    document["events"][1]["kind"] = "sleep"
    broken.write_text(json.dumps(document), encoding="utf-8")
    run = _check(project)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "broken.json" in run.stdout + run.stderr
    assert "$.events[1].kind" in run.stdout + run.stderr


def test_json_report_holds_both_sides(project: Path) -> None:
    run = _check(project, "--format", "json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["lint"]["version"] == 1
    assert document["lint"]["summary"]["diagnostics"] == 0
    replay = document["replay"]
    assert replay["summary"] == {
        "histories": 3, "passed": 3, "diverged": 0, "stale": 0, "error": 0, "warnings": 0, "notes": [],
        "diverged_in_flight": 0, "diverged_finished": 0, "diverged_run_status_unknown": 0,
        "diverged_by_run_status": {"completed": 0, "failed": 0, "running": 0, "parked": 0, "unknown": 0},
        "excluded": 0,
    }
    assert replay["excluded"] == []
    assert sorted((Path(item["history"]).name, item["status"], item["divergence"]) for item in replay["results"]) == [
        ("support_agent-question.json", "passed", None),
        ("support_agent-refund-approved.json", "passed", None),
        ("support_agent-refund-waiting.json", "passed", None),
    ]
    assert {item["workflow"]["type"] for item in replay["results"]} == {"support_agent"}


def test_without_histories_configured_only_lint_runs(tmp_path: Path) -> None:
    shutil.copy(AGENT, tmp_path / "agent.py")
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    run = _check(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "replay skipped" in run.stdout


def test_prompts_policy_options_apply_to_check_as_to_replay(project: Path) -> None:
    """A reworded planner prompt: the parked history fails the gate by default (it already called the planner
    and uses the writer next); `--prompts warn` makes the called prompt a warning, and `--prompts-pending` is
    accepted alongside, as on `replay`."""
    agent = project / "agent.py"
    source = agent.read_text(encoding="utf-8")
    old = '"You are a support agent. Decide the next steps for this ticket:\\n{ticket}"'
    assert old in source
    agent.write_text(source.replace(old, '"You are a careful support agent. Decide the next steps:\\n{ticket}"'),
                     encoding="utf-8")
    assert _check(project).returncode == 1
    relaxed = _check(project, "--prompts", "warn", "--prompts-pending", "warn")
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert "prompt-drift" in relaxed.stdout or "warning" in relaxed.stdout
    wrong = _check(project, "--prompts", "sometimes")
    assert wrong.returncode == 2 and "--prompts" in wrong.stderr


@pytest.mark.parametrize("flags", [("--diff-base", "HEAD"), ("--fail-under", "50"), ("--coverage",)])
def test_coverage_flags_without_histories_name_the_flag_given(tmp_path: Path, flags: tuple[str, ...]) -> None:
    shutil.copy(AGENT, tmp_path / "agent.py")
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    run = _check(tmp_path, *flags)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"error: {flags[0]} needs histories" in run.stderr
    if flags[0] != "--coverage":
        assert "--coverage" not in run.stderr


def test_no_lint_replays_only_and_says_the_lint_was_skipped(project: Path) -> None:
    """The CI recipe's shard jobs: a lint finding is the lint job's, not reported again per shard."""
    (project / "agent.py").write_text((project / "agent.py").read_text(encoding="utf-8")
                                      + "\nimport random\n\n\n@workflow(name='extra', version='1')\n"
                                        "def extra(ctx, data):\n    return random.random()\n", encoding="utf-8")
    assert _check(project).returncode == 1  # the finding fails the gate that lints
    run = _check(project, "--no-lint")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lint not run (--no-lint)" in run.stdout and "All checks passed" not in run.stdout
    assert "RT102" not in run.stdout and "replayed 3 histories: 3 passed" in run.stdout
    github = _check(project, "--no-lint", "--output-format", "github")
    assert github.returncode == 0 and "::error" not in github.stdout and "lint not run" in github.stderr
    document = json.loads(_check(project, "--no-lint", "--output-format", "json").stdout)
    assert document["lint"]["skipped"] == "--no-lint" and document["lint"]["diagnostics"] == []


def test_no_lint_without_histories_is_a_usage_error(tmp_path: Path) -> None:
    shutil.copy(AGENT, tmp_path / "agent.py")
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    run = _check(tmp_path, "--no-lint")
    assert run.returncode == 2 and "would check nothing" in run.stderr


def test_replay_settings_from_replaytest_toml(project: Path) -> None:
    """The `[replay]` table of a replaytest.toml (keys at the top level) is what check replays, as the
    `[tool.replaytest.replay]` table of pyproject.toml is; the file in the same folder wins over pyproject's."""
    (project / "pyproject.toml").write_text('[tool.replaytest.replay]\npaths = ["nowhere"]\n', encoding="utf-8")
    (project / "replaytest.toml").write_text('[replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n',
                                             encoding="utf-8")
    run = _check(project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "replayed 3 histories: 3 passed" in run.stdout
