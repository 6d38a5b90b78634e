"""Neutral histories go to the replayer of their ``workflow.engine``; an engine without one is an error
that names it (CLI and pytest), never a replay by another engine's replayer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_cli import run

from replaytest.history.sniff import DEFAULT_ENGINE, UNKNOWN_ENGINE, neutral_engine
from replaytest.plugins import load_plugins
from replaytest.plugins.journal.replayer import JournalReplayer
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.runner import find_replayer, load_workflows, read_head

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures/histories/support_agent-question.json"
APP = "fixtures.journal_app.agent:support_agent"


def with_engine(tmp_path: Path, engine: str | None, name: str = "run.json") -> Path:
    document = json.loads(FIXTURE.read_text())
    if engine is None:
        del document["workflow"]["engine"]
    else:
        document["workflow"]["engine"] = engine
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=2))
    return path


def test_head_sniffing_reads_the_engine() -> None:
    assert neutral_engine(FIXTURE.read_bytes()) == "journal"
    assert neutral_engine(b'{"format": "replaytest-history", "workflow": {"type": "t", "id": "i"}}') == DEFAULT_ENGINE
    assert neutral_engine(b'{"format":"replaytest-history","workflow":{"type":"t","id":"{x}","engine":"dbos"}}') == "dbos"
    # The workflow object is past the head: neutral, engine unknown until the file is parsed.
    assert neutral_engine(b'{"format": "replaytest-history", "input": {"text": "') == UNKNOWN_ENGINE
    assert neutral_engine(b'{"events": []}') is None


def test_an_engine_without_a_replayer_is_an_error_naming_it(tmp_path: Path) -> None:
    path = with_engine(tmp_path, "inngest")
    code, out = run("replay", str(path), "-w", APP)
    assert code == 2
    assert "no replayer for engine 'inngest' ($.workflow.engine)" in out
    assert ": stale" not in out and "0 stale, 1 error" in out


def test_the_engine_is_found_when_the_workflow_object_lies_past_the_head(tmp_path: Path) -> None:
    document = json.loads(FIXTURE.read_text())
    document["workflow"]["engine"] = "inngest"
    document["input"]["text"] = "x" * 70_000
    reordered = {"format": document.pop("format"), "input": document.pop("input"), **document}
    path = tmp_path / "late.json"
    path.write_text(json.dumps(reordered))
    assert neutral_engine(read_head(path)) == UNKNOWN_ENGINE
    code, out = run("replay", str(path), "-w", APP)
    assert code == 2 and "no replayer for engine 'inngest'" in out


def test_journal_histories_still_replay_with_and_without_the_engine_key(tmp_path: Path) -> None:
    explicit = with_engine(tmp_path, "journal", "explicit.json")
    default = with_engine(tmp_path, None, "default.json")
    code, out = run("replay", str(explicit), str(default), "-w", APP)
    assert code == 0, out
    assert "2 passed" in out


def test_dispatch_picks_the_replayer_of_the_engine_not_the_first_neutral_one(tmp_path: Path) -> None:
    replayers = [p.replayer for p in load_plugins() if p.replayer is not None]
    assert find_replayer(with_engine(tmp_path, "journal").read_bytes(), replayers).engine == "journal"  # type: ignore[union-attr]
    assert find_replayer(with_engine(tmp_path, "inngest").read_bytes(), replayers) is None


def test_the_journal_replayer_refuses_another_engines_history(tmp_path: Path) -> None:
    result = JournalReplayer().replay(with_engine(tmp_path, "inngest"), load_workflows([APP], REPO), ReplayOptions())
    assert result.status == "error" and result.error == "a history of engine 'inngest', not 'journal'"


def test_pytest_collects_a_history_of_an_unknown_engine_and_fails_it(pytester: pytest.Pytester) -> None:
    root = pytester.path
    shutil.copytree(REPO / "fixtures/journal_app", root / "shop")
    (root / "histories").mkdir()
    with_engine(root / "histories", "inngest")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["shop.agent:support_agent"]\n'
    )
    result = pytester.runpytest("histories")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no replayer for engine 'inngest'*"])
