"""A replay reads its history file once: the runner reads the bytes, recognises the file from them, hands
them to the replayer (``replay_loaded``) and takes a divergence's redacted paths from the same loaded
history. Counted with an audit hook on every ``open`` (``file_opens``), through ``replay_file`` and the
CLI; a replayer that only has ``replay(path, …)`` still works."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import redacted_apps
import restock_app
from click.testing import CliRunner
from replaykit import record
from restock_app import restock_agent

from replaytest.cli import cli
from replaytest.history import Redactor, history_to_dict, load_history, redact_file
from replaytest.plugins import load_plugins
from replaytest.replay.adapter import (
    HistoryReplayer,
    LoadedHistoryReplayer,
    ReplayOptions,
    WorkflowSet,
)
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import render_text
from replaytest.replay.runner import load_workflows, replay_file

CUSTOMER = {"order": 7, "customer": {"email": "ann@vip.example", "name": "Ann"}}


def builtin_replayers() -> list[HistoryReplayer]:
    return [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]


def replay_with_every_replayer(path: Path, *workflows: Any) -> ReplayResult:
    return replay_file(path, builtin_replayers(), load_workflows((), None, workflows), ReplayOptions())


def test_a_journal_history_with_a_blob_is_opened_once_per_replay(tmp_path: Path, file_opens) -> None:
    path = record(tmp_path, restock_agent, "north", name="restock")
    ref = json.loads(path.read_text())["events"][0]["result_ref"]
    blob = tmp_path / "blobs" / "sha256" / ref.removeprefix("sha256:")
    file_opens.watch(tmp_path)
    result = replay_with_every_replayer(path, restock_agent)
    assert result.status == "passed", render_text(result)
    assert file_opens.of(path) == 1
    # The large result still comes from its blob, read when the replay needs it (checked at load too).
    assert file_opens.of(blob) >= 1


def test_a_diverging_redacted_history_is_opened_once_and_lists_its_redacted_paths(tmp_path: Path, file_opens) -> None:
    source = record(tmp_path, redacted_apps.routing, CUSTOMER, name="routing")
    target = tmp_path / "clean" / "routing.json"
    redact_file(source, target, Redactor.build())
    file_opens.watch(tmp_path / "clean")
    result = replay_with_every_replayer(target, redacted_apps.routing_by_address)
    assert result.status == "diverged"
    assert result.redacted == ("$.events[0].result.api_key", "$.events[0].result.contact", "$.input.customer.email")
    assert file_opens.of(target) == 1


def test_a_history_recognised_from_its_whole_document_is_opened_once(tmp_path: Path, file_opens) -> None:
    recorded = load_history(record(tmp_path, restock_agent, "south", name="restock"))
    # Hand-ordered: the events (a catalogue past the first 64 KiB, inline) before "format" and "workflow",
    # so neither the head sniff nor the engine lookup in the head can decide.
    data = history_to_dict(recorded)
    data["events"][0]["result"] = recorded.event_result(recorded.events[0])
    del data["events"][0]["result_ref"]
    reordered = {"events": data.pop("events"), **dict(reversed(list(data.items())))}
    path = tmp_path / "hand-ordered" / "restock.json"
    path.parent.mkdir()
    text = json.dumps(reordered, indent=1)
    assert text.index('"format"') > 64 * 1024
    path.write_text(text, encoding="utf-8")
    file_opens.watch(path.parent)
    result = replay_with_every_replayer(path, restock_agent)
    assert result.status == "passed", render_text(result)
    assert file_opens.of(path) == 1


class AcmeReplayer:
    """A third-party replayer of neutral histories of engine ``acme`` written before ``replay_loaded``:
    it reads the file itself. It passes a run whose recorded result is the one its workflow returns."""

    engine = "acme"

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def sniff(self, head: bytes) -> bool:
        return False

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        self.paths.append(path)
        history = load_history(path)
        result = ReplayResult(path, self.engine, history.workflow.type, history.workflow.id, events=len(history.events))
        [current] = [obj for obj in workflows.objects if getattr(obj, "__name__", "") == history.workflow.type]
        if current(history.input) != history.result:
            result.status, result.error = "error", "result differs"
        return result


def greet(customer: dict[str, Any]) -> str:
    return f"Dear {customer['name']}"


def test_a_replayer_with_only_replay_of_a_path_still_replays(tmp_path: Path) -> None:
    path = tmp_path / "greet.json"
    path.write_text(json.dumps({
        "format": "replaytest-history", "format_version": 1,
        "workflow": {"type": "greet", "id": "greet-1", "engine": "acme"},
        "status": "completed", "input": {"name": "Ann"}, "events": [], "result": "Dear Ann",
    }), encoding="utf-8")  # fmt: skip
    acme = AcmeReplayer()
    assert isinstance(acme, HistoryReplayer) and not isinstance(acme, LoadedHistoryReplayer)
    result = replay_file(path, [*builtin_replayers(), acme], load_workflows((), None, [greet]), ReplayOptions())
    assert (result.status, result.engine, result.workflow_type, result.events) == ("passed", "acme", "greet", 0)
    assert acme.paths == [path]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project holding the restock agent (as ``restock_shop.py``) and two histories it recorded."""
    shutil.copy(Path(restock_app.__file__), tmp_path / "restock_shop.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["restock_shop:restock_agent"]\n'
    )
    histories = tmp_path / "histories"
    histories.mkdir()
    return record(histories, restock_agent, "north", name="north"), record(histories, restock_agent, "south", name="south")


def _invoke(cwd: Path, *args: str) -> str:
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        ran = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(previous)
        sys.modules.pop("restock_shop", None)
    assert ran.exit_code == 0, ran.output
    return ran.output


def test_replay_on_the_command_line_reads_each_history_once(tmp_path: Path, file_opens) -> None:
    first, second = _project(tmp_path)
    file_opens.watch(tmp_path / "histories")
    assert "replayed 2 histories: 2 passed" in _invoke(tmp_path, "replay")
    assert (file_opens.of(first), file_opens.of(second)) == (1, 1)


def test_check_reads_each_history_once_for_its_cache_key_and_its_replay(tmp_path: Path, file_opens) -> None:
    first, second = _project(tmp_path)
    file_opens.watch(tmp_path / "histories")
    assert "replayed 2 histories: 2 passed" in _invoke(tmp_path, "check", "restock_shop.py")
    assert (file_opens.of(first), file_opens.of(second)) == (1, 1)
    # Unchanged since they passed: the cache skips both, after reading each once for its key.
    file_opens.clear()
    assert "skipped 2 histories that replayed green before" in _invoke(tmp_path, "check", "restock_shop.py")
    assert (file_opens.of(first), file_opens.of(second)) == (1, 1)
