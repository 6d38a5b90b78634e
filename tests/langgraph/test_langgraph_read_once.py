"""Replaying an imported LangGraph thread reads its history file once, a redacted thread that diverges
included (its redacted paths come from the history the replay loaded). Counted with an audit hook on
every ``open`` (``file_opens``) through ``replay_file`` with every built-in replayer installed."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import AGENT_SPEC

from replaytest.history import Redactor, load_history, redact_file
from replaytest.plugins import load_plugins
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import render_text
from replaytest.replay.runner import load_workflows, replay_file


def replay(path: Path, spec: str) -> ReplayResult:
    replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
    return replay_file(path, replayers, load_workflows([spec]), ReplayOptions())


def test_an_imported_thread_is_opened_once(recorded, tmp_path: Path, file_opens) -> None:
    path = tmp_path / "approved.json"
    shutil.copy(recorded.histories / "order_agent-approved.json", path)
    file_opens.watch(tmp_path)
    result = replay(path, AGENT_SPEC)
    assert (result.status, result.engine, result.events) == ("passed", "langgraph", 5), render_text(result)
    assert file_opens.of(path) == 1


def test_a_diverging_redacted_thread_is_opened_once_and_lists_what_the_code_could_read(
    recorded, tmp_path: Path, file_opens
) -> None:
    path = tmp_path / "approved.json"
    # The item the customer ordered and the third task's result (the drafted body) are redacted.
    redact_file(recorded.histories / "order_agent-approved.json", path,
                Redactor.build(json_paths=["$.input.item", "$.events[2].result"]))  # fmt: skip
    assert load_history(path).redacted == ("$.events[2].result", "$.input.item")
    file_opens.watch(tmp_path)
    # The reordered agent drafts before it fetches the price: a command mismatch at the first task call,
    # before the code could read the redacted third result.
    result = replay(path, "lg_apps.agent_reordered:order_agent")
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None
    assert (result.divergence.kind, result.divergence.position) == ("command-mismatch", 1)
    assert result.redacted == ("$.input.item",)
    assert file_opens.of(path) == 1
