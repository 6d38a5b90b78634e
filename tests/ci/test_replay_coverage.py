"""``replaytest check --coverage``: lines and branches of orchestration code the saved histories execute,
per workflow type; ``--diff-base`` lists changed orchestration lines no history reaches and fails the gate.

The project is the bundled journal example with its recorded histories; new histories are recorded by the
real journal runtime, as ``fixtures/journal_app/record.py`` records the bundled ones."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

REPO = Path(__file__).resolve().parents[2]
AGENT = REPO / "fixtures" / "journal_app" / "agent.py"
CONFIG = '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(AGENT, tmp_path / "agent.py")
    shutil.copytree(REPO / "fixtures" / "histories", tmp_path / "histories")
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    return tmp_path


def _check(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--no-cache", *args, "agent.py"],
        cwd=project, capture_output=True, text=True, timeout=180,
    )


def _line(project: Path, text: str) -> int:
    return next(n for n, line in enumerate((project / "agent.py").read_text().splitlines(), 1) if text in line)


def _row(output: str) -> str:
    return next(line for line in output.splitlines() if "agent.support_agent" in line)


def _record_rejected_refund(project: Path) -> None:
    """Run the agent on a refund ticket whose approval comes back negative, and save its history."""
    spec = importlib.util.spec_from_file_location("coverage_agent", project / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with Journal(project / "journal.sqlite3") as journal:
        worker = Worker(journal, [module.support_agent])
        ticket = {"customer": "bob@example.com", "text": "The parcel came damaged, refund please."}
        journal.start(module.support_agent, ticket, run_id="run-rejected", workflow_id="ticket-rejected")
        worker.run_until_idle()
        journal.signal("run-rejected", "approved", {"ok": False, "by": "ops@example.com"})
        worker.run_until_idle()
        save_history(journal.export("run-rejected"), project / "histories" / "support_agent-refund-rejected.json")


@pytest.mark.slow
def test_report_names_the_uncovered_branch_and_a_history_taking_it_covers_it(project: Path) -> None:
    html = project / "html"
    run = _check(project, "--coverage", "--coverage-html", str(html))
    assert run.returncode == 0, run.stdout + run.stderr
    approval = _line(project, 'if approval and approval.get("ok")')
    reply = _line(project, 'reply = ctx.model("write reply"')
    row = _row(run.stdout)
    # No saved history has a refused approval: the branch from the approval test to the reply is missing.
    assert row.split()[0] == "support_agent"
    assert f"{approval}->{reply}" in row and "3/4" in row, run.stdout
    assert (html / "index.html").is_file() and "agent_py" in " ".join(p.name for p in html.iterdir())

    _record_rejected_refund(project)
    run = _check(project, "--coverage")
    assert run.returncode == 0, run.stdout + run.stderr
    row = _row(run.stdout)
    assert "4/4" in row and f"{approval}->" not in row, run.stdout
    assert "replayed 4 histories: 4 passed" in run.stdout


@pytest.mark.slow
def test_diff_base_lists_a_changed_line_no_history_reaches_and_fails_the_gate(project: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "agent.py", "pyproject.toml", "histories"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=project, check=True)
    unchanged = _check(project, "--diff-base", "HEAD")
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "changed orchestration lines" not in unchanged.stdout

    # A pull request adds a step on the refused-approval path, which no saved history takes.
    source = (project / "agent.py").read_text()
    refund = '            refunded = ctx.step(\n                "issue refund", issue_refund, order["id"], order["total"], idempotency_key=ctx.idempotency_key()\n            )\n'
    assert refund in source
    added = '        else:\n            ctx.step("log refusal", fetch_orders, ticket["customer"])\n'
    (project / "agent.py").write_text(source.replace(refund, refund + added))
    line = _line(project, 'ctx.step("log refusal"')
    run = _check(project, "--diff-base", "HEAD")
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(rf"agent\.py:{line} in agent\.support_agent: changed, no saved history reaches it", run.stdout), run.stdout
    assert "replay coverage of changed orchestration lines 0% < 100%" in run.stdout
    # A threshold the change meets passes; the list is still shown.
    lenient = _check(project, "--diff-base", "HEAD", "--fail-under", "0")
    assert lenient.returncode == 0 and f"agent.py:{line}" in lenient.stdout
    # In CI formats the line is an annotation: an error when it fails the gate, a warning when it does not.
    github = _check(project, "--diff-base", "HEAD", "--output-format", "github")
    assert f"::error file=agent.py,line={line},title=changed line no history reaches::" in github.stdout
    github = _check(project, "--diff-base", "HEAD", "--fail-under", "0", "--output-format", "github")
    assert f"::warning file=agent.py,line={line}," in github.stdout


def test_unknown_revision_is_a_usage_error(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    run = _check(project, "--diff-base", "no-such-rev")
    assert run.returncode == 2 and "no-such-rev" in run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_pytest_replay_coverage_combines_every_process(project: Path, workers: list[str]) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["agent:support_agent"]\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--replay-coverage", *workers],
        cwd=project, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    row = _row(run.stdout)
    # Every branch but the refused approval needs histories from both sides of each test: the question
    # (no refund) and the approved refund. Under xdist they ran in different workers.
    approval, reply = _line(project, 'if approval and approval.get("ok")'), _line(project, 'reply = ctx.model("write reply"')
    assert row.split()[:3] == ["support_agent", "agent.support_agent", "11/11"] and "3/4" in row, run.stdout
    assert f"{approval}->{reply}" in row
    from coverage import CoverageData

    data = CoverageData(basename=str(project / ".replaytest_cache" / "replay-coverage" / ".coverage"))
    data.read()
    assert sorted(c for c in data.measured_contexts() if c) == sorted(
        f"histories/{p.name}" for p in (project / "histories").iterdir()
    )
    assert not list((project / ".replaytest_cache" / "replay-coverage").glob(".coverage.*"))  # combined
    assert (project / ".replaytest_cache" / "replay-coverage" / "html" / "index.html").is_file()


@pytest.mark.slow
def test_coverage_traces_workflow_code_inside_the_temporal_sandbox(tmp_path: Path) -> None:
    """Temporal's sandbox re-executes the workflow module; its lines still count for the workflow type."""
    temporal = REPO / "tests" / "temporal"
    shutil.copy(temporal / "temporal_wf_hello.py", tmp_path / "hello_flows.py")
    (tmp_path / "histories").mkdir()
    shutil.copy(temporal / "histories" / "hello_timer_history.json", tmp_path / "histories")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["hello_flows:Hello"]\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--no-cache", "--coverage", "histories"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert "replayed 1 histories: 1 passed" in run.stdout, run.stdout + run.stderr
    rows = [line.split() for line in run.stdout.splitlines() if "hello_flows." in line]
    assert ["Hello", "hello_flows.Hello.run", "3/3"] == rows[0][:3], run.stdout
    # The other classes of the module are orchestration code too, and no history reaches them.
    assert any(r[:2] == ["(no", "history)"] and r[2] == "hello_flows.HelloTimerFirst.run" for r in rows)
