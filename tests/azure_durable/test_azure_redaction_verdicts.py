"""Redacted Azure Durable histories replay as the recorded ones do (``redaction_kit``): runs of the
redaction desk recorded with the real SDK, written to the session's Azurite under a task hub of their own,
imported as stored (``--no-redact``), redacted by ``replaytest redact``, and both replayed against the
unchanged desk and changed ones. The runs hold an e-mail and an API key redaction rewrites and random ids
(``context.new_uuid()``, derived from the instance id and the orchestration's clock, and a ``uuid4`` token
from an activity) that a later activity takes; one run waits for its approval event."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from approvals import redaction_desk
from azure_kit import TESTS, Imported, record, run_cli, write_task_hub
from redaction_kit import assert_same_verdicts, redact, redacted_paths

from replaytest.plugins.azure_durable.replayer import AzureDurableReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

TASK_HUB = "RedactionHub"
SOURCE = (TESTS / "approvals" / "redaction_desk.py").read_text(encoding="utf-8")


def _variant(folder: Path, module: str, old: str, new: str) -> ModuleType:
    assert SOURCE.count(old) == 1
    (folder / f"{module}.py").write_text(SOURCE.replace(old, new), encoding="utf-8")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return importlib.import_module(module)


def _replayer(module: Any):  # type: ignore[no-untyped-def]
    return lambda path: AzureDurableReplayer().replay(path, WorkflowSet((module.app,)), ReplayOptions())


def test_redacted_azure_histories_replay_as_the_recorded_ones(imported: Imported, tmp_path: Path) -> None:
    runs = [
        record(redaction_desk.app, "redaction_desk", "desk-done", {"customer": "ann"}),
        record(redaction_desk.app, "redaction_desk", "desk-waiting", {"customer": "bob", "needs_approval": True}),
    ]
    assert [run.runtime_status for run in runs] == ["Completed", "Running"]
    write_task_hub(imported.azurite.service(), runs, TASK_HUB)
    histories = tmp_path / "histories"
    done = run_cli("import", "azure-durable", "--connection-string", imported.azurite.connection_string, "--task-hub", TASK_HUB,
                   "--out", str(histories), "--no-redact")
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = sorted(histories.glob("*.json"))
    assert [path.stem for path in recorded] == ["desk-done", "desk-waiting"], recorded
    assert all("sk-live-0123456789abcdefXYZ" in path.read_text() for path in recorded)
    redacted = redact(recorded, tmp_path / "clean" / "histories")
    assert all(paths for paths in redacted_paths(redacted).values()), redacted_paths(redacted)
    assert not any("sk-live-0123456789abcdefXYZ" in path.read_text() for path in redacted)

    unchanged = assert_same_verdicts(recorded, redacted, _replayer(redaction_desk))
    assert [verdict[:2] for verdict in unchanged] == [("passed", "completed"), ("passed", "running")], unchanged
    swapped = _variant(
        tmp_path, "azure_redaction_desk_swapped",
        '    token = yield context.call_activity("new_token", ticket["customer"])\n'
        '    profile = yield context.call_activity("load_profile", ticket["customer"])\n',
        '    profile = yield context.call_activity("load_profile", ticket["customer"])\n'
        '    token = yield context.call_activity("new_token", ticket["customer"])\n',
    )
    changed = assert_same_verdicts(recorded, redacted, _replayer(swapped))
    assert [verdict[0] for verdict in changed] == ["diverged", "diverged"], changed
    # One more deterministic uuid drawn: the reference changes, in both alike: the completed run returned it
    # (another result), the waiting one has not returned yet and its activity inputs are not compared.
    drawn = _variant(tmp_path, "azure_redaction_desk_drawn", "    reference = str(context.new_uuid())\n",
                     "    context.new_uuid()\n    reference = str(context.new_uuid())\n")
    by_draw = assert_same_verdicts(recorded, redacted, _replayer(drawn))
    assert [(verdict[0], verdict[3][:1]) for verdict in by_draw] == [("diverged", ("result-mismatch",)), ("passed", ())], by_draw
