"""Redacted LangGraph threads replay as the recorded ones do (``redaction_kit``): threads of the redaction
desk recorded into a real SqliteSaver, imported as stored (``--no-redact``), redacted by ``replaytest
redact``, and both replayed against the unchanged desk and changed ones. The threads hold an e-mail and an
API key redaction rewrites and a random token that later tasks take as an argument."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from types import ModuleType

from conftest import import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import redaction_desk
from redaction_kit import assert_same_verdicts, redact, redacted_paths

from replaytest.plugins.langgraph.replayer import LangGraphReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

SOURCE = Path(redaction_desk.__file__)


def _record(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = redaction_desk.redaction_desk.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "closed" in graph.invoke({"customer": "ann"}, thread("done"))
        assert "__interrupt__" in graph.invoke({"customer": "bob", "needs_approval": True}, thread("waiting"))
    finally:
        conn.close()


def _variant(folder: Path, old: str, new: str) -> ModuleType:
    source = SOURCE.read_text(encoding="utf-8")
    assert source.count(old) == 1
    path = folder / f"redaction_desk_{abs(hash(new))}.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replayer(module: ModuleType):  # type: ignore[no-untyped-def]
    return lambda path: LangGraphReplayer().replay(path, WorkflowSet((module.redaction_desk,)), ReplayOptions())


def test_redacted_threads_replay_as_the_recorded_ones(tmp_path: Path) -> None:
    db = tmp_path / "desk.sqlite"
    _record(db)
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.redaction_desk:redaction_desk", "--no-redact")
    assert code == 0, output
    recorded = sorted((tmp_path / "histories").glob("*.json"))
    assert len(recorded) == 2
    assert all("sk-live-0123456789abcdefXYZ" in path.read_text() for path in recorded)
    redacted = redact(recorded, tmp_path / "clean" / "histories")
    assert all(paths for paths in redacted_paths(redacted).values()), redacted_paths(redacted)
    assert not any("sk-live-0123456789abcdefXYZ" in path.read_text() for path in redacted)
    unchanged = assert_same_verdicts(recorded, redacted, _replayer(redaction_desk))
    assert [verdict[0] for verdict in unchanged] == ["passed", "passed"]
    swapped = _variant(
        tmp_path,
        '    token = new_token().result()\n    profile = load_profile(ticket["customer"]).result()\n',
        '    profile = load_profile(ticket["customer"]).result()\n    token = new_token().result()\n',
    )
    changed = assert_same_verdicts(recorded, redacted, _replayer(swapped))
    assert [verdict[0] for verdict in changed] == ["diverged", "diverged"], changed
    # The contact (a redacted value) passed on to a task: the same verdict either way.
    shouted = _variant(tmp_path, 'open_case(token, profile["email"])', 'open_case(token, profile["email"].upper())')
    assert_same_verdicts(recorded, redacted, _replayer(shouted))
