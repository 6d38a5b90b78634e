"""The DBOS scenario: the invoice-dispute desk (``dbos_dispute_desk/app.py``) run for real on a SQLite
system database, five runs imported with ``replaytest import dbos`` — three decided by the reviewer
(SUCCESS) and two left PENDING in ``DBOS.recv`` — and three changed versions of its code, the same
changes as the Temporal scenario's:

- ``audit_after_review``: an audit step inserted right after the recv;
- ``lookup_first``: the invoice lookup moved before the classification (both before the recv);
- ``escalate_large``: approved disputes over 500 are escalated to finance instead of credited.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from impact_kit import ScenarioKit, clean_environment, commit_everything, edit_once, run_replaytest

HERE = Path(__file__).resolve().parent
PACKAGE = "dbos_dispute_desk"
APP_FILE = f"{PACKAGE}/app.py"
V1 = (HERE / APP_FILE).read_text(encoding="utf-8")
RECORDER = HERE / "impact_dbos_recorder.py"
WORKFLOW_TYPE = "resolve_dispute"

CLASSIFY = '    category = classify_dispute(dispute["text"])\n'
LOOKUP = '    invoice = lookup_invoice(dispute["invoice_id"])\n'
RECV = '    decision = DBOS.recv("review", timeout_seconds=REVIEW_WAIT_S)\n'
AUDIT = '    record_audit(dispute["invoice_id"], decision)\n'
APPROVED = '    if decision == "approve":\n'
ESCALATE = (
    '    if decision == "approve" and dispute["amount"] > 500:\n'
    '        credit = escalate_to_finance(dispute["invoice_id"], dispute["amount"])\n'
    '    elif decision == "approve":\n'
)


CHANGES = {
    "audit_after_review": edit_once(V1, RECV, RECV + AUDIT),
    "lookup_first": edit_once(V1, CLASSIFY + LOOKUP, LOOKUP + CLASSIFY),
    "escalate_large": edit_once(V1, APPROVED, ESCALATE),
}
IN_FLIGHT = ("dispute-4", "dispute-5")
FINISHED = ("dispute-1", "dispute-2", "dispute-3")

PYPROJECT = f"""[project]
name = "dispute-desk"
version = "1.0"

[tool.replaytest.replay]
paths = ["histories"]
workflows = ["{PACKAGE}.replay:CONFIG"]
"""
REPLAY_CONFIG = f'''"""What replaytest replays the dispute desk's histories against."""

from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("{PACKAGE}.app",))
'''


def run_recorder(root: Path, system_db: Path, effects: Path, *args: str) -> list[str]:
    """The recorder in a fresh process (DBOS keeps one registry per process) on ``root``'s code: its output lines."""
    done = subprocess.run(
        [sys.executable, str(RECORDER), str(system_db), str(effects), *args],
        capture_output=True, text=True, timeout=180, cwd=root, env=clean_environment(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def import_runs(root: Path, system_db: Path, out: str) -> dict[str, Path]:
    imported = run_replaytest(
        root, "import", "dbos", "--database-url", f"sqlite:///{system_db}", "--name", WORKFLOW_TYPE, "--out", out,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    return {json.loads(path.read_text())["workflow"]["id"]: path for path in sorted((root / out).glob("*.json"))}


def record(root: Path) -> ScenarioKit:
    """The desk's project in ``root``: v1 run for real, its runs imported, v1 and the histories committed."""
    root.mkdir(parents=True)
    shutil.copytree(HERE / PACKAGE, root / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    (root / PACKAGE / "replay.py").write_text(REPLAY_CONFIG, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / ".gitignore").write_text("*.sqlite3\n*.log\n", encoding="utf-8")
    system_db, effects = root / "system.sqlite3", root / "recording-effects.log"
    outcomes = [json.loads(line) for line in run_recorder(root, system_db, effects, "record")]
    assert outcomes == [
        {"dispute-1": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-101-120.00"}},
        {"dispute-2": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-102-900.00"}},
        {"dispute-3": {"category": "service-complaint", "decision": "reject", "credit": None}},
    ]
    files = import_runs(root, system_db, "histories")
    assert sorted(files) == sorted(IN_FLIGHT + FINISHED), files
    base = commit_everything(root, "Dispute desk v1")
    return ScenarioKit(
        engine="dbos", workflow_type=WORKFLOW_TYPE, root=root, code_file=APP_FILE, base=base, v1=V1,
        changes=CHANGES, in_flight=IN_FLIGHT, finished=FINISHED, history_files=files,
        extra={"system_db": system_db},
    )


def fresh_run(kit: ScenarioKit, run_id: str, decision: str, amount: float = 75.0) -> tuple[dict, Path]:
    """A new run of the code now in ``kit``'s working tree on a new system database (a dispute of
    ``amount`` on INV-200), decided at once: its output, and its history imported into ``fresh-histories``."""
    system_db = kit.root / f"fresh-{run_id}.sqlite3"
    [output] = run_recorder(kit.root, system_db, kit.root / f"fresh-{run_id}.log", "fresh", run_id, decision, str(amount))
    files = import_runs(kit.root, system_db, "fresh-histories")
    return json.loads(output), files[run_id]


def step_names(history_file: Path) -> list[str]:
    """The recorded operations of an imported history in function-id order; the importer turns DBOS's
    patch step (``DBOS.patch-<id>``) into a ``patched`` marker event, shown here as ``patched <id>``."""
    events = sorted(json.loads(history_file.read_text())["events"], key=lambda event: event["function_id"])
    return [f"patched {event['patch_id']}" if event["kind"] == "marker" else event["name"] for event in events]


def write(kit: ScenarioKit, source: str) -> str:
    (kit.root / kit.code_file).write_text(source, encoding="utf-8")
    shutil.rmtree((kit.root / kit.code_file).parent / "__pycache__", ignore_errors=True)
    return source


def recover(kit: ScenarioKit, decisions: dict[str, str]) -> tuple[dict[str, dict], list[str], Path]:
    """DBOS's own recovery of the parked runs under the code in the working tree, on a copy of the
    recorded system database, each sent its decision: each run's outcome, the step bodies that really ran,
    and the copy."""
    recorded = kit.root / "system.sqlite3"
    copy = kit.root / "recovery.sqlite3"
    for suffix in ("", "-wal", "-shm"):  # an un-checkpointed write-ahead log holds recorded rows too
        if Path(f"{recorded}{suffix}").exists():
            shutil.copyfile(f"{recorded}{suffix}", f"{copy}{suffix}")
    effects = kit.root / "recovery-effects.log"
    lines = run_recorder(kit.root, copy, effects, "recover", *(f"{run}={decision}" for run, decision in decisions.items()))
    outcomes = {outcome.pop("run"): outcome for outcome in map(json.loads, lines)}
    ran = sorted(effects.read_text(encoding="utf-8").splitlines()) if effects.exists() else []
    return outcomes, ran, copy


def recorded_steps(system_db: Path, run_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(system_db) as db:
        rows = db.execute(
            "SELECT function_id, function_name FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id",
            (run_id,),
        ).fetchall()
    return [(function_id, name) for function_id, name in rows]
