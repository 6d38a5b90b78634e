"""Redacted journal histories replay as the recorded ones do (``redaction_kit``): the desk's runs, holding an
e-mail and an API key that redaction rewrites and random ids (``ctx.uuid()``, a ``uuid4`` token from a step)
that later steps take as arguments, replayed against the unchanged desk and a changed one."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import journal_redaction_desk as redaction_desk
from redaction_kit import assert_same_verdicts, redact, redacted_paths

from replaytest.history import save_history
from replaytest.journal import Journal, Worker
from replaytest.plugins.journal.replayer import JournalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

HERE = Path(__file__).resolve().parent


def _record(folder: Path) -> list[Path]:
    paths = []
    with Journal(folder / "journal.sqlite3") as journal:
        worker = Worker(journal, [redaction_desk.desk])
        for name, ticket in {"done": {"customer": "ann"}, "waiting": {"customer": "bob", "needs_approval": True}}.items():
            journal.start(redaction_desk.desk, ticket, run_id=f"run-{name}", workflow_id=f"desk-{name}")
        worker.run_until_idle()
        for name in ("done", "waiting"):
            path = folder / "histories" / f"desk-{name}.json"
            path.parent.mkdir(exist_ok=True)
            save_history(journal.export(f"run-{name}"), path)
            paths.append(path)
    return paths


def _variant(folder: Path, old: str, new: str) -> ModuleType:
    source = (HERE / "journal_redaction_desk.py").read_text(encoding="utf-8")
    assert source.count(old) == 1
    path = folder / "journal_redaction_desk_changed.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replayer(module: ModuleType):  # type: ignore[no-untyped-def]
    return lambda path: JournalReplayer().replay(path, WorkflowSet((module.desk,)), ReplayOptions())


def test_redacted_journal_histories_replay_as_the_recorded_ones(tmp_path: Path) -> None:
    recorded = _record(tmp_path)
    redacted = redact(recorded, tmp_path / "clean" / "histories")
    # Redaction did rewrite the contact data, and the random ids are in the histories.
    assert all("$.events[2].result.email" in paths for paths in redacted_paths(redacted).values()), redacted_paths(redacted)
    assert "sk-live-0123456789abcdefXYZ" not in redacted[0].read_text() and "sk-live" in recorded[0].read_text()
    unchanged = assert_same_verdicts(recorded, redacted, _replayer(redaction_desk))
    assert [verdict[0] for verdict in unchanged] == ["passed", "passed"]
    renamed = assert_same_verdicts(recorded, redacted, _replayer(_variant(tmp_path, '"open case"', '"open ticket"')))
    assert [(verdict[0], verdict[3][0]) for verdict in renamed] == [("diverged", "command-mismatch")] * 2
    # Code that draws one more random id issues other arguments after it: a divergence in both, the same one.
    drawn = _variant(tmp_path, '    reference = str(ctx.uuid())\n', '    ctx.uuid()\n    reference = str(ctx.uuid())\n')
    extra = assert_same_verdicts(recorded, redacted, _replayer(drawn))
    assert all(verdict[0] == "diverged" for verdict in extra), extra
