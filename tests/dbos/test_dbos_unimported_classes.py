"""A history never chooses what replay imports: the helpdesk ran for real on a SQLite system database,
and its escalation step returned an instance of a class whose module only the step body imports. Replay
runs no step body, so that module stays unimported: the value reaches the workflow as a dict, with a
note, while the triage dataclass the workflow module imports is rebuilt as before."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent
LEGACY_IMPORTED = "helpdesk.legacy_routing imported\n"
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("helpdesk.app",))
'''
PYPROJECT = """
[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["helpdesk.replay:CONFIG"]
"""
# Writes down, once the session ends, what the workflow received and which helpdesk modules got imported.
PROBE_CONFTEST = '''import json
import sys


def pytest_sessionfinish(session):
    app = sys.modules.get("helpdesk.app")
    modules = sorted(name for name in sys.modules if name.startswith("helpdesk"))
    with open("probe.json", "w", encoding="utf-8") as probe:
        json.dump({"seen": getattr(app, "SEEN", None), "modules": modules}, probe)
'''


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The helpdesk's runs ``ticket-42`` and ``ticket-43`` imported (default redaction) into a histories folder."""
    directory = tmp_path_factory.mktemp("helpdesk")
    system_db, import_log = directory / "system.sqlite3", directory / "recording-imports.log"
    environment = {**os.environ, "HELPDESK_IMPORT_LOG": str(import_log)}
    run = subprocess.run(
        [sys.executable, str(HERE / "record_helpdesk.py"), str(system_db)],
        capture_output=True, text=True, timeout=180, cwd=directory, env=environment,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert import_log.read_text() == LEGACY_IMPORTED  # while recording, the step body did import the rules
    histories = directory / "histories"
    result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out", str(histories)])
    assert result.exit_code == 0, result.output
    return histories


def project(pytester: pytest.Pytester, histories: Path) -> Path:
    """The helpdesk as it is, plus one probe line in the workflow recording the types it was handed."""
    root = pytester.path
    shutil.copytree(HERE / "helpdesk", root / "helpdesk", ignore=shutil.ignore_patterns("__pycache__"))
    app = (root / "helpdesk/app.py").read_text()
    line = "    escalation = escalate(ticket_id, queue) if decision.priority == 1 else None\n"
    assert app.count(line) == 1
    app = app.replace(line, line + "    SEEN.append([type(decision).__name__, type(escalation).__name__])\n")
    (root / "helpdesk/app.py").write_text(app.replace('ENTERPRISE_DOMAIN = "@acme.com"\n', 'ENTERPRISE_DOMAIN = "@acme.com"\nSEEN: list = []\n'))
    (root / "helpdesk/replay.py").write_text(REPLAY_CONFIG)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "conftest.py").write_text(PROBE_CONFTEST)
    shutil.copytree(histories, root / "histories")
    return root


def test_the_recorded_class_names_a_module_the_workflow_never_imports(recorded: Path) -> None:
    document = json.loads((recorded / "ticket-42.json").read_text())
    escalate = next(event for event in document["events"] if event["name"] == "escalate")
    assert escalate["result"] == {
        "$type": "object",
        "class": "helpdesk.legacy_routing.Escalation",
        "state": {"team": "enterprise-billing-tier2", "reason": "ticket-42 waited more than two days"},
    }
    triage = next(event for event in document["events"] if event["name"] == "triage")
    assert triage["result"]["class"] == "helpdesk.models.Triage"


def test_replay_imports_nothing_a_history_names_and_hands_the_code_a_dict(pytester: pytest.Pytester, recorded: Path) -> None:
    root = project(pytester, recorded)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HELPDESK_IMPORT_LOG", str(root / "replay-imports.log"))
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2)  # ticket-42 and ticket-43
    assert not (root / "replay-imports.log").exists()  # the module's top-level code never ran
    probe = json.loads((root / "probe.json").read_text())
    assert probe["modules"] == ["helpdesk", "helpdesk.app", "helpdesk.models", "helpdesk.replay"]
    # the imported dataclass is rebuilt; the escalation arrives as its recorded state
    assert probe["seen"] == [["Triage", "dict"]]
    summary = re.sub(r"\s+", " ", result.stdout.str())
    assert (
        "note: 1 history: 1 recorded object of a class the workflow code has not imported "
        "(helpdesk.legacy_routing.Escalation) reached the code as a dict (replay imports no module a history names)"
    ) in summary


def test_default_redaction_keeps_the_domain_the_workflow_branches_on(recorded: Path) -> None:
    """The replay above passes on the enterprise queue only because the pseudonym kept ``@acme.com``."""
    text = (recorded / "ticket-42.json").read_text()
    assert "dana.whitfield" not in text
    document = json.loads(text)
    email = document["input"]["args"][2]
    assert re.fullmatch(r"user-[0-9a-f]{10}@acme\.com", email), email
    assert document["result"]["queue"] == "enterprise-billing"
    assert "$.input.args[2]" in document["redacted"]


def test_an_address_in_a_recorded_error_gets_the_pseudonym_it_has_everywhere_else(recorded: Path) -> None:
    """One redaction pass per history: the error message, the recorded exception (which replay raises)
    and the workflow's output that quotes it agree, so the replay above passes on ticket-43."""
    text = (recorded / "ticket-43.json").read_text()
    assert "lee.moreau" not in text
    document = json.loads(text)
    email = document["input"]["args"][2]
    assert re.fullmatch(r"user-[0-9a-f]{10}@startup\.io", email), email
    [failed] = [event for event in document["events"] if event["name"] == "load_account"]
    assert failed["error"] == {"type": "AccountNotFound", "message": f"no account for {email}"}
    assert failed["exception"] == {
        "$type": "object", "class": "helpdesk.app.AccountNotFound", "call_args": [f"no account for {email}"],
    }  # fmt: skip
    assert document["result"] == {"ticket": "ticket-43", "queue": "signup", "note": f"no account for {email}"}
