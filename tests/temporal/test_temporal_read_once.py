"""Replaying Temporal history JSON reads the file once: the runner's read serves the head sniff, temporalio's
``WorkflowHistory`` and, after a failure, the events the report is built from. Counted with an audit hook
on every ``open`` (``file_opens``) through ``replay_file`` with every built-in replayer installed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import temporal_wf_hello as hello
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.plugins import load_plugins
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import render_text
from replaytest.replay.runner import replay_file

# Not imported from conftest: run together with tests/impact_e2e, the module named conftest may be that one.
HISTORIES = Path(__file__).resolve().parent / "histories"


def replay(path: Path, workflow: type) -> ReplayResult:
    replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
    return replay_file(path, replayers, WorkflowSet((workflow,)), ReplayOptions())


def test_a_passing_temporal_history_is_opened_once(tmp_path: Path, file_opens) -> None:
    path = tmp_path / "hello.json"
    shutil.copy(HISTORIES / "hello_timer_history.json", path)
    file_opens.watch(tmp_path)
    result = replay(path, hello.Hello)
    assert (result.status, result.engine, result.events) == ("passed", "temporal", 22), render_text(result)
    assert file_opens.of(path) == 1


def test_a_diverging_redacted_temporal_history_is_opened_once(tmp_path: Path, file_opens) -> None:
    document = json.loads((HISTORIES / "hello_timer_history.json").read_text(encoding="utf-8"))
    document["events"][0]["workflowExecutionStartedEventAttributes"]["memo"] = {"fields": {"contact": {
        "metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "ImRhbmFAY29ycC5leGFtcGxlIg=="}}}  # fmt: skip
    source = tmp_path / "hello.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    redacting = CliRunner().invoke(cli, ["redact", "--out", str(tmp_path / "out"), str(source)])
    assert redacting.exit_code == 0, redacting.output
    redacted = tmp_path / "out" / "hello.json"
    file_opens.watch(tmp_path / "out")
    # The reordered code starts its timer where the history scheduled activity `say`.
    result = replay(redacted, hello.HelloTimerFirst)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None
    assert (result.divergence.kind, result.divergence.position) == ("command-mismatch", 5)
    assert (result.divergence.recorded.kind, result.divergence.recorded.name) == ("activity", "say")
    assert file_opens.of(redacted) == 1
