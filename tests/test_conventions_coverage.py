"""``replaytest check --coverage`` as a machine reads it and as a person reads it: with
``--output-format json`` the coverage is part of the JSON document (per workflow type: lines, branches,
missing lines and missing branches), and the text table lists the missing lines next to the missing
branches.

The project is an invoice-dispute agent on the real journal runtime, with one recorded history that
keeps the invoice (so the refund path never runs) and a reminder workflow no history reaches. The
expected line numbers are found by the text of the lines, the counts written out by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

AGENT = '''
"""An invoice-dispute agent: a model assesses the dispute, a refund is issued when it is justified, and
the customer is told the outcome; a reminder workflow chases unpaid invoices."""

from typing import Any

from replaytest.journal import Prompt, workflow

ASSESS = Prompt("assess-dispute", "Is this invoice dispute justified? Answer refund or keep.\\n{text}")
REFUNDS: dict[str, str] = {}
OUTBOX: list[tuple[str, str]] = []


def assess(text: str) -> str:
    return "refund" if "charged twice" in text else "keep"


def refund(invoice: str, idempotency_key: str) -> str:
    return REFUNDS.setdefault(idempotency_key, f"CN-{invoice}")


def notify(customer: str, note: str) -> bool:
    OUTBOX.append((customer, note))
    return True


@workflow(name="dispute_agent")
def dispute_agent(ctx: Any, dispute: dict[str, Any]) -> str:
    verdict = ctx.model("assess", assess, ASSESS.render(text=dispute["text"]), prompt=ASSESS)
    if verdict == "refund":
        credit = ctx.step("refund", refund, dispute["invoice"], idempotency_key=ctx.idempotency_key())

        note = f"refunded as {credit}"
    else:
        note = "kept: the invoice is correct"
    ctx.step("notify", notify, dispute["customer"], note)
    return note


@workflow(name="reminder_agent")
def reminder_agent(ctx: Any, invoice: dict[str, Any]) -> None:
    ctx.sleep(7 * 86400)
    ctx.step("remind", notify, invoice["customer"], f"invoice {invoice['id']} is due")
'''

CONFIG = """
[tool.replaytest.replay]
paths = ["histories"]
workflows = ["disputes:dispute_agent", "disputes:reminder_agent"]
"""

RECORD = """
from pathlib import Path

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

import disputes

dispute = {"invoice": "INV-7", "customer": "kim@example.com", "text": "The hours look fine but the rate is wrong"}
with Journal(Path("journal.sqlite3")) as journal:
    journal.start(disputes.dispute_agent, dispute, run_id="run-kept", workflow_id="dispute-kept")
    Worker(journal, [disputes.dispute_agent]).run_until_idle()
    save_history(journal.export("run-kept"), Path("histories/dispute-kept.json"))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "disputes.py").write_text(AGENT.lstrip("\n"), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(CONFIG.lstrip("\n"), encoding="utf-8")
    (tmp_path / "histories").mkdir()
    recorded = subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    return tmp_path


def line_of(project: Path, text: str) -> int:
    numbers = [n for n, line in enumerate((project / "disputes.py").read_text().splitlines(), 1) if text in line]
    assert len(numbers) == 1, (text, numbers)
    return numbers[0]


def check(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--no-cache", *args, "disputes.py"],
        cwd=project, capture_output=True, text=True, timeout=180,
    )


def test_check_json_holds_the_coverage_per_workflow_type(project: Path) -> None:
    run = check(project, "--coverage", "--output-format", "json")
    assert run.returncode == 0, run.stdout + run.stderr
    document: dict[str, Any] = json.loads(run.stdout)
    decision = line_of(project, 'if verdict == "refund":')
    refund_step = line_of(project, 'credit = ctx.step("refund"')
    refund_note = line_of(project, 'note = f"refunded as {credit}"')
    sleep = line_of(project, "ctx.sleep(7 * 86400)")
    remind = line_of(project, 'ctx.step("remind"')
    # Seven statements in the dispute agent's body; the kept invoice skips the two of the refund path.
    function = {
        "function": "disputes.dispute_agent",
        "path": "disputes.py",
        "lines": {"covered": 5, "total": 7},
        "branches": {"covered": 1, "total": 2},
        "missing_lines": [refund_step, refund_note],
        "missing_branches": [[decision, refund_step]],
    }
    assert document["coverage"] == {
        "workflow_types": [{
            "workflow_type": "dispute_agent",
            "lines": {"covered": 5, "total": 7},
            "branches": {"covered": 1, "total": 2},
            "functions": [function],
        }],
        "unreached": [{
            "function": "disputes.reminder_agent",
            "path": "disputes.py",
            "lines": {"covered": 0, "total": 2},
            "branches": {"covered": 0, "total": 0},
            "missing_lines": [sleep, remind],
            "missing_branches": [],
        }],
        "changed_lines": None,
        "threshold": None,
        "failed": False,
        "html": None,
    }
    assert document["replay"]["summary"]["passed"] == 1, document["replay"]
    # The JSON has it all: nothing of the table on stderr any more.
    assert "replay coverage" not in run.stderr, run.stderr


def test_check_json_without_coverage_says_null(project: Path) -> None:
    run = check(project, "--output-format", "json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["coverage"] is None


def test_text_table_lists_missing_lines_next_to_missing_branches(project: Path) -> None:
    run = check(project, "--coverage")
    assert run.returncode == 0, run.stdout + run.stderr
    decision = line_of(project, 'if verdict == "refund":')
    refund_step = line_of(project, 'credit = ctx.step("refund"')
    refund_note = line_of(project, 'note = f"refunded as {credit}"')
    assert refund_note == refund_step + 2  # a blank line between them does not split the range
    sleep, remind = line_of(project, "ctx.sleep(7 * 86400)"), line_of(project, 'ctx.step("remind"')
    table = run.stdout[run.stdout.index("replay coverage of orchestration code:"):].splitlines()
    assert [line.split() for line in table[:4]] == [
        ["replay", "coverage", "of", "orchestration", "code:"],
        ["workflow", "type", "orchestration", "function", "lines", "branches", "missing", "lines", "missing",
         "branches"],
        ["dispute_agent", "disputes.dispute_agent", "5/7", "1/2", f"{refund_step}-{refund_note}",
         f"{decision}->{refund_step}"],
        ["(no", "history)", "disputes.reminder_agent", "0/2", "0/0", f"{sleep}-{remind}", "-"],
    ]


def test_check_json_lists_changed_lines_no_history_reaches(project: Path) -> None:
    git = ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "disputes.py", "pyproject.toml", "histories"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "dispute agent"], cwd=project, check=True)
    source = (project / "disputes.py").read_text()
    old = '        note = f"refunded as {credit}"\n'
    assert old in source
    (project / "disputes.py").write_text(source.replace(old, '        note = f"credit note {credit} issued"\n'))
    run = check(project, "--diff-base", "HEAD", "--output-format", "json")
    assert run.returncode == 1, run.stdout + run.stderr
    coverage = json.loads(run.stdout)["coverage"]
    changed = line_of(project, 'note = f"credit note {credit} issued"')
    assert coverage["changed_lines"] == {
        "total": 1,
        "percent": 0.0,
        "unreached": [{"path": "disputes.py", "line": changed, "function": "disputes.dispute_agent"}],
    }
    assert (coverage["threshold"], coverage["failed"]) == (100.0, True)
