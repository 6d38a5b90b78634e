"""What replay says about the prompts a parked graph thread has not reached yet, on the real engine
(SqliteSaver): the model desk (``graph_apps/model_desk.py``) is started with ``with_prompts`` and parks in
``review``, after ``triage`` used TRIAGE and before ``draft`` renders REPLY. The history is imported and
replayed, and ``replaytest impact`` run, against copies of the desk with one prompt edited; no node body may
run during replay.

The start manifest keeps a prompt's parameters as a digest only, but the current code declares them: a
parameter change of REPLY is said as "parameters now temperature 0.9", as on DBOS and the functional API,
not as a change of two digests whose values "were not recorded". A prompt the thread already used, only
renamed (same text, model and parameters), is a rename: a note, no drift, no prompt group. A prompt it already
used on another model is drift whose report rows name the prompt, as the functional API's do. A prompt added
since, rendered now by ``triage`` (which the thread already ran), is drift at that node, not a prompt the
thread "will use"."""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graph_apps import effects, model_desk
from graph_kit import import_histories, run_cli, thread
from langgraph.checkpoint.sqlite import SqliteSaver

from replaytest.plugins.langgraph.prompts import with_prompts

APPS = Path(__file__).resolve().parent / "graph_apps"
REPLY_LINE = 'REPLY = Prompt("reply", "Write a friendly reply about {ticket}, routed to {route}", model="gpt-4o-mini", params={"temperature": 0.2})'
REPLY_WARMER = (REPLY_LINE, REPLY_LINE.replace("0.2", "0.9"))
TRIAGE_RENAMED = ('TRIAGE = Prompt("triage",', 'TRIAGE = Prompt("sorter",')
TRIAGE_LINE = 'TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini"'
TRIAGE_SWITCHED = (TRIAGE_LINE, TRIAGE_LINE.replace("gpt-4o-mini", "gpt-4.1"))


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("graph-pending-prompt-words")
    effects.EFFECTS = root / "effects.log"
    conn = sqlite3.connect(root / "threads.sqlite", check_same_thread=False)
    try:
        graph = model_desk.graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke({"ticket": "my invoice was charged twice"}, with_prompts(thread("waiting"), graph))
    finally:
        conn.close()
        effects.EFFECTS = None
    assert [line.split()[0] for line in (root / "effects.log").read_text().splitlines()] == ["triage"]
    code, output = import_histories(root / "threads.sqlite", root / "histories", "--workflows", "graph_apps.model_desk:graph")
    assert code == 0, output
    yield root / "histories"


_copies = itertools.count()


def desk_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str]) -> str:
    """A fresh copy of the desk with ``edits`` made to its prompt module or its graph module (each edit
    to the one file holding its text once); the spec of its graph."""
    package = f"pending_words_desk_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    files = {name: (APPS / name).read_text() for name in ("model_desk.py", "model_desk_texts.py")}
    for old, new in edits:
        [name] = [name for name, text in files.items() if text.count(old) == 1]
        files[name] = files[name].replace(old, new)
    for name, text in files.items():
        (target / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(effects, "EFFECTS", tmp_path / "replay-effects.log")
    return f"{package}.model_desk:graph"


def replay(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str]) -> dict[str, Any]:
    spec = desk_copy(tmp_path, monkeypatch, *edits)
    code, stdout, stderr = run_cli("replay", str(histories), "--workflows", spec, "--format", "json")
    assert code in (0, 1), stderr
    assert not (tmp_path / "replay-effects.log").exists(), "replay ran a node body"
    sys.modules.pop(spec.split(":")[0], None)
    [result] = json.loads(stdout)["results"]
    return result


def test_a_parameter_change_of_a_prompt_not_reached_yet_names_the_new_values(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = replay(tmp_path, histories, monkeypatch, REPLY_WARMER)
    assert (result["status"], result["divergence"]["kind"]) == ("diverged", "prompt-drift")
    message = result["divergence"]["message"]
    assert message.startswith("the parked thread has not reached these prompts yet: will use reply "), message
    assert "(parameters now temperature 0.9; the run recorded only their digest " in message, message
    assert "were not recorded" not in message and "parameters changed" not in message
    assert result["divergence"]["source"]["function"] == "draft"


def test_a_renamed_prompt_the_thread_already_used_is_a_rename_in_replay_and_impact(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = replay(tmp_path / "replay", histories, monkeypatch, TRIAGE_RENAMED)
    assert (result["status"], result["warnings"], result["prompt_changes"]) == ("passed", [], [])
    assert any(note.startswith("prompt triage is now named sorter at the same version ") for note in result["notes"])
    spec = desk_copy(tmp_path / "impact", monkeypatch, TRIAGE_RENAMED)
    code, stdout, stderr = run_cli("impact", str(histories), "--workflows", spec)
    assert "prompt sorter" not in stdout and "added since" not in stdout, stdout
    assert " 0 groups" in stdout, stdout


def test_the_rows_of_a_node_drift_name_the_prompt(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = desk_copy(tmp_path, monkeypatch, TRIAGE_SWITCHED)
    code, stdout, stderr = run_cli("impact", str(histories), "--workflows", spec)
    assert "    recorded  node 'triage' prompt triage sha256:" in stdout, stdout
    assert "    code now  node 'triage' prompt triage sha256:" in stdout, stdout
    assert "(gpt-4.1, params " in stdout.split("code now  node 'triage'")[1].splitlines()[0]


TONE_IN_TRIAGE = (
    ('REPLY = Prompt(', 'TONE = Prompt("tone", "Be warm and concise.", model="gpt-4o-mini")\nREPLY = Prompt('),
    ("from .model_desk_texts import REPLY, TRIAGE", "from .model_desk_texts import REPLY, TONE, TRIAGE"),
    ('text = TRIAGE.render(ticket=state["ticket"])', 'text = TRIAGE.render(ticket=state["ticket"]) + TONE.render()'),
)


def test_a_prompt_added_to_a_node_the_thread_already_ran_is_drift_at_that_node_not_pending(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = replay(tmp_path, histories, monkeypatch, *TONE_IN_TRIAGE)
    assert (result["status"], result["divergence"]["kind"]) == ("diverged", "prompt-drift")
    message = result["divergence"]["message"]
    assert message.startswith("node 'triage' now also uses prompt tone sha256:"), message
    assert message.endswith(", which its recorded execution did not use; the parked thread keeps what that node wrote "
                            "and resumes at node 'review'"), message
    assert result["divergence"]["source"]["function"] == "triage"
    assert not [w for w in result["warnings"] if "will use tone" in w["message"]]
    assert result["prompt_changes"] == []
