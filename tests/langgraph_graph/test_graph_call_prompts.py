"""Per-call prompt versions of graph-API (StateGraph) threads, recorded on the real engine (SqliteSaver and
InMemorySaver): the model desk (``graph_apps/model_desk.py``) runs ``triage`` under TRIAGE, parks in ``review``
(``interrupt``), then ``draft`` renders REPLY and the thread parks again in ``confirm``. Threads:

* ``deployed``: started with REPLY on gpt-4o-mini (v1), parked in ``review``, resumed with ``Command(resume=…)``
  on the real engine after the deploy (REPLY on gpt-4.1, v2): its ``draft`` used v2; parked in ``confirm``;
* ``before``: started and resumed under v1 (its ``draft`` used v1), parked in ``confirm``;
* ``done``: like ``deployed``, then resumed once more to completion;
* ``unrecorded`` (another database): like ``deployed`` with the recorder off, as a thread recorded before
  per-call records.

The histories are imported and replayed against copies of the desk at v1 (a rollback for the threads resumed
after the deploy) and at v2; no node body may run during replay."""

from __future__ import annotations

import hashlib
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
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command, Interrupt

import replaytest.prompts as prompts_module
from replaytest.plugins.langgraph.graph_check import NO_NODE_PROMPTS_NOTE
from replaytest.plugins.langgraph.prompts import with_prompts
from replaytest.plugins.langgraph.recording import RECORD_CHANNEL
from replaytest.prompts import Prompt, compose_version

APPS = Path(__file__).resolve().parent / "graph_apps"
TRIAGE_TEXT = "Sort this ticket into billing, shipping or other: {ticket}"
REPLY_TEXT = "Write a friendly reply about {ticket}, routed to {route}"
PARAMS = {"temperature": 0.2}
V1_REPLY_LINE = 'REPLY = Prompt("reply", "Write a friendly reply about {ticket}, routed to {route}", model="gpt-4o-mini"'
V2_REPLY_LINE = V1_REPLY_LINE.replace("gpt-4o-mini", "gpt-4.1")
REPLY_V2 = Prompt("reply", REPLY_TEXT, model="gpt-4.1", params=PARAMS)
TICKET = {"ticket": "my invoice was charged twice"}


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def full(text: str, model: str) -> str:
    return compose_version(sha(text), model, PARAMS)


def short(text: str, model: str) -> str:
    """A full version as reports print it."""
    return f"{sha(text)[:19]} ({model}, params {full(text, model).rsplit('=', 1)[1][:8]})"


def record(saver: Any, *, deployed_only: bool = False) -> dict[str, Any]:
    """Run the threads for real; returns the state the resumed ``deployed`` thread parked with."""
    graph = model_desk.graph.copy(update={"checkpointer": saver})
    if not deployed_only:
        assert "__interrupt__" in graph.invoke(TICKET, with_prompts(thread("before"), graph))
        assert "__interrupt__" in graph.invoke(Command(resume="billing"), thread("before"))
        assert "__interrupt__" in graph.invoke(TICKET, with_prompts(thread("done"), graph))
    assert "__interrupt__" in graph.invoke(TICKET, with_prompts(thread("deployed"), graph))
    with pytest.MonkeyPatch.context() as deploy:  # the deploy: REPLY moves to gpt-4.1
        deploy.setattr(model_desk, "REPLY", REPLY_V2)
        parked = graph.invoke(Command(resume="billing"), thread("deployed"))
        assert "__interrupt__" in parked
        if not deployed_only:
            assert "__interrupt__" in graph.invoke(Command(resume="billing"), thread("done"))
            assert graph.invoke(Command(resume="send"), thread("done"))["sent"] == "yes"
    return dict(parked)


def recorder_off(patch: pytest.MonkeyPatch) -> None:
    """As before per-call records: no render or use_prompt hook."""
    patch.setattr(prompts_module, "_RENDER_HOOKS", [])
    patch.setattr(prompts_module, "_USE_HOOKS", [])


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("graph-call-prompts")
    effects.EFFECTS = root / "effects.log"
    try:
        for name, off in (("recorded", False), ("unrecorded", True)):
            conn = sqlite3.connect(root / f"{name}.sqlite", check_same_thread=False)
            try:
                with pytest.MonkeyPatch.context() as patch:
                    if off:
                        recorder_off(patch)
                    record(SqliteSaver(conn), deployed_only=off)
            finally:
                conn.close()
    finally:
        effects.EFFECTS = None
    lines = (root / "effects.log").read_text().splitlines()
    # The resumed thread's draft really ran under v2, the one resumed before the deploy under v1.
    assert "draft gpt-4.1 Write a friendly reply about my invoice was charged twice, routed to billing" in lines
    assert "draft gpt-4o-mini Write a friendly reply about my invoice was charged twice, routed to billing" in lines
    for name, out in (("recorded", "histories"), ("unrecorded", "unrecorded")):
        code, output = import_histories(root / f"{name}.sqlite", root / out, "--workflows", "graph_apps.model_desk:graph")
        assert code == 0, output
    (root / "unrecorded" / "model_desk-deployed.json").rename(root / "histories" / "model_desk-unrecorded.json")
    yield root / "histories"


_copies = itertools.count()


def replay(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str],
           args: tuple[str, ...] = (), command: str = "replay") -> dict[str, Any]:
    """The histories replayed against a fresh copy of the desk with ``edits`` made to its prompt module; results
    keyed by history file (the unrecorded thread's history keeps its thread id, ``deployed``)."""
    package = f"model_desk_copy_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "model_desk.py", target / "model_desk.py")
    texts = (APPS / "model_desk_texts.py").read_text()
    for old, new in edits:
        assert texts.count(old) == 1
        texts = texts.replace(old, new)
    (target / "model_desk_texts.py").write_text(texts)
    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / "replay-effects.log"
    monkeypatch.setattr(effects, "EFFECTS", log)
    spec = f"{package}.model_desk:graph"
    if command == "replay":
        code, stdout, stderr = run_cli("replay", str(histories), "--workflows", spec, "--format", "json", *args)
        results = json.loads(stdout)["results"]
    else:
        project = tmp_path / f"project-{package}"
        project.mkdir()
        (project / "pyproject.toml").write_text(
            f'[tool.replaytest.replay]\npaths = ["{histories.as_posix()}"]\nworkflows = ["{spec}"]\n'
        )
        monkeypatch.chdir(project)
        code, stdout, stderr = run_cli("check", "--no-cache", "-q", "--format", "json", *args, str(histories))
        results = json.loads(stdout)["replay"]["results"]
    assert code in (0, 1), stderr
    assert not log.exists(), "replay ran a node body"
    sys.modules.pop(f"{package}.model_desk", None)
    out = {Path(r["history"]).stem.removeprefix("model_desk-"): r for r in results}
    out["_copy"] = {"file": str(target / "model_desk.py")}
    return out


def messages(result: dict[str, Any]) -> list[str]:
    found = [w["message"] for w in result["warnings"]]
    if result.get("divergence"):
        found.append(result["divergence"]["message"])
    return found


def document(histories: Path, thread_id: str) -> dict[str, Any]:
    return json.loads((histories / f"model_desk-{thread_id}.json").read_text())


def node_prompts(histories: Path, thread_id: str) -> list[tuple[str, Any, Any]]:
    return [(e["name"], e.get("prompt"), [p["version"] for p in e["prompts"]] if "prompts" in e else None)
            for e in document(histories, thread_id)["events"] if e["kind"] == "step" and e["name"] != "__start__"]


def draft_line() -> int:
    """The line of ``draft`` that renders REPLY (where the report points)."""
    lines = (APPS / "model_desk.py").read_text().splitlines()
    return next(number for number, text in enumerate(lines, start=1) if "REPLY.render(" in text)


TRIAGE_V1 = {"name": "triage", "version": full(TRIAGE_TEXT, "gpt-4o-mini"), "params": PARAMS}
REPLY_V1 = {"name": "reply", "version": full(REPLY_TEXT, "gpt-4o-mini"), "params": PARAMS}
REPLY_V2_REF = {"name": "reply", "version": full(REPLY_TEXT, "gpt-4.1"), "params": PARAMS}


def test_each_node_execution_carries_the_version_it_actually_used(histories: Path) -> None:
    t1, r1, r2 = TRIAGE_V1["version"], REPLY_V1["version"], REPLY_V2_REF["version"]
    assert node_prompts(histories, "deployed") == [
        ("triage", TRIAGE_V1, [t1]), ("review", None, []), ("draft", REPLY_V2_REF, [r2]), ("confirm", None, []),
    ]
    assert node_prompts(histories, "before")[2] == ("draft", REPLY_V1, [r1])
    assert [name for name, _, _ in node_prompts(histories, "done")] == ["triage", "review", "draft", "confirm"]
    assert node_prompts(histories, "done")[2] == ("draft", REPLY_V2_REF, [r2])
    # Every record names the node that rendered it; how, and the model, are kept with it.
    draft = next(e for e in document(histories, "deployed")["events"] if e["name"] == "draft")
    assert draft["prompts"] == [{**REPLY_V2_REF, "model": "gpt-4.1", "via": "render"}]
    # Recorded without the recorder: no per-call versions at all (not "used none"), and the start manifest.
    unrecorded = document(histories, "unrecorded")
    assert all(prompt is None and listed is None for _, prompt, listed in node_prompts(histories, "unrecorded"))
    assert unrecorded["prompt_manifest"] == {"triage": t1, "reply": r1}
    assert document(histories, "deployed")["prompt_manifest"] == {"triage": t1, "reply": r1}  # the start's


def test_replayed_against_the_deployed_code_nothing_is_reported_for_a_thread_resumed_after_it(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = replay(tmp_path, histories, monkeypatch, (V1_REPLY_LINE, V2_REPLY_LINE))
    for thread_id in ("deployed", "done"):
        result = results[thread_id]
        # Not the false "node 'draft' already called prompt reply: the run started under v1" of the start manifest.
        assert (result["status"], messages(result), result["prompt_changes"]) == ("passed", [], []), thread_id
        assert NO_NODE_PROMPTS_NOTE not in result["notes"]
    # A parked thread whose draft used v1: it already used a prompt that changed, which fails it by default.
    before = results["before"]
    assert (before["status"], before["divergence"]["kind"]) == ("diverged", "prompt-drift")
    assert before["divergence"]["message"] == (
        f"node 'draft' used prompt reply {short(REPLY_TEXT, 'gpt-4o-mini')} (recorded when it ran); the code now has "
        f"{short(REPLY_TEXT, 'gpt-4.1')} (model gpt-4o-mini → gpt-4.1); the parked thread keeps what that node wrote "
        "and resumes at node 'confirm'"
    )


def test_a_rollback_reports_the_node_that_used_the_newer_version(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = replay(tmp_path, histories, monkeypatch)  # the code back at v1
    deployed = results["deployed"]
    # Parked, and its draft already used gpt-4.1: drift at that node (the start manifest would say nothing).
    assert (deployed["status"], deployed["divergence"]["kind"]) == ("diverged", "prompt-drift")
    divergence = deployed["divergence"]
    assert divergence["message"] == (
        f"node 'draft' used prompt reply {short(REPLY_TEXT, 'gpt-4.1')} (recorded when it ran); the code now has "
        f"{short(REPLY_TEXT, 'gpt-4o-mini')} (model gpt-4.1 → gpt-4o-mini); the parked thread keeps what that node "
        "wrote and resumes at node 'confirm'"
    )
    draft = next(e for e in document(histories, "deployed")["events"] if e["name"] == "draft")
    assert divergence["position"] == draft["seq"]
    assert divergence["source"]["line"] == draft_line()
    assert Path(divergence["source"]["path"]).name == "model_desk.py"
    assert deployed["prompt_changes"] == [{
        "prompt": "reply", "started": full(REPLY_TEXT, "gpt-4.1"), "current": full(REPLY_TEXT, "gpt-4o-mini"),
        "called": True, "compared": "call",
    }]
    assert NO_NODE_PROMPTS_NOTE not in deployed["notes"]
    # Completed: a warning by the default policy, the same words; resumed before the deploy: nothing to say.
    done = results["done"]
    assert done["status"] == "passed"
    assert messages(done) == [divergence["message"].replace("parked thread keeps what that node wrote and resumes at "
                                                            "node 'confirm'", "completed thread keeps what that node wrote")]
    assert (results["before"]["status"], messages(results["before"])) == ("passed", [])


@pytest.mark.parametrize("policy", ["fail", "warn"])
def test_the_prompts_policy_decides_for_a_parked_and_a_completed_thread(
    policy: str, tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = replay(tmp_path, histories, monkeypatch, args=("--prompts", policy))
    for thread_id in ("deployed", "done"):
        result = results[thread_id]
        [message] = messages(result)
        assert message.startswith("node 'draft' used prompt reply") and "(model gpt-4.1 → gpt-4o-mini)" in message
        if policy == "fail":
            assert (result["status"], result["divergence"]["kind"]) == ("diverged", "prompt-drift"), thread_id
        else:
            assert (result["status"], result["divergence"]) == ("passed", None), thread_id
            assert [w["severity"] for w in result["warnings"]] == ["warning"]
    ignored = replay(tmp_path, histories, monkeypatch, args=("--prompts", "ignore"))
    assert [messages(ignored[t]) for t in ("deployed", "done")] == [[], []]


def test_check_gives_the_same_verdict(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = replay(tmp_path, histories, monkeypatch, command="check")
    assert results["deployed"]["divergence"]["kind"] == "prompt-drift"
    assert "node 'draft' used prompt reply" in results["deployed"]["divergence"]["message"]
    assert results["before"]["status"] == "passed"


def test_a_thread_recorded_before_per_call_records_falls_back_to_the_manifest_with_a_note(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for edits in ((), ((V1_REPLY_LINE, V2_REPLY_LINE),)):  # a rollback, and the deployed code
        unrecorded = replay(tmp_path, histories, monkeypatch, *edits)["unrecorded"]
        assert unrecorded["status"] == "passed", edits
        assert unrecorded["notes"].count(NO_NODE_PROMPTS_NOTE) == 1, edits
        # What the start manifest gives, as before: "already called" with the manifest's version.
        said = messages(unrecorded)
        if edits:
            assert len(said) == 1 and said[0].startswith("node 'draft' already called prompt reply")
            assert "from the run's start manifest" in said[0]
        else:
            assert said == []


# --- the records leave the run unchanged ------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A stored value with LangGraph's interrupt ids (derived from the run's checkpoint ids) left out."""
    if isinstance(value, Interrupt):
        return ("interrupt", _plain(value.value))
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _run_writes(saver: Any, thread_id: str) -> tuple[list[tuple[str, Any]], list[Any]]:
    """The thread's writes on its own checkpoints (prompt records apart), and the records."""
    writes: list[tuple[str, Any]] = []
    records: list[Any] = []
    for item in saver.list(thread(thread_id)):
        for _, channel, value in item.pending_writes or ():
            if channel == RECORD_CHANNEL:
                records.append(value)
            else:
                writes.append((channel, _plain(value)))
    return sorted(writes, key=repr), records


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_records_do_not_change_the_run(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(effects, "EFFECTS", tmp_path / "effects.log")
    outcomes = {}
    for mode in ("recorded", "off"):
        saver: Any = (InMemorySaver() if kind == "memory"
                      else SqliteSaver(sqlite3.connect(tmp_path / f"{mode}.sqlite", check_same_thread=False)))
        with pytest.MonkeyPatch.context() as patch:
            if mode == "off":
                recorder_off(patch)
            parked = record(saver, deployed_only=True)
            graph = model_desk.graph.copy(update={"checkpointer": saver})
            state = graph.get_state(thread("deployed"))
            writes, records = _run_writes(saver, "deployed")
            history = [(_plain(s.values), s.next, s.metadata.get("step")) for s in graph.get_state_history(thread("deployed"))]
            with pytest.MonkeyPatch.context() as deploy:
                deploy.setattr(model_desk, "REPLY", REPLY_V2)
                final = graph.invoke(Command(resume="send"), thread("deployed"))
        outcomes[mode] = (_plain(parked), _plain(state.values), state.next, [_plain(t.interrupts) for t in state.tasks],
                          writes, history, _plain(final))
        assert bool(records) == (mode == "recorded")
    assert outcomes["recorded"] == outcomes["off"]
    assert outcomes["recorded"][-1] == {**TICKET, "queue": "billing", "route": "billing", "reply": "[gpt-4.1] billing",
                                        "sent": "yes"}


# --- a node running a subgraph ------------------------------------------------------------------------


def test_a_node_running_a_subgraph_is_compared_at_what_its_subgraph_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt desk's ``writer`` node runs a subgraph whose ``draft`` renders REPLY: that record goes to the
    subgraph's own checkpoints, which the import reads onto the ``writer`` step. Without it (a thread recorded
    before per-call records: the subgraph's rows deleted here) the node is compared at the start manifest's
    version (never silently "used no prompt"), and the report says so."""
    from graph_apps import prompt_desk

    monkeypatch.setattr(effects, "EFFECTS", tmp_path / "effects.log")
    db = tmp_path / "nested.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        nested = prompt_desk.nested_graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in nested.invoke(TICKET, with_prompts(thread("nested-done"), nested))
        assert nested.invoke(Command(resume="approve"), thread("nested-done"))["sent"] == "yes"
    finally:
        conn.close()
    package = f"prompt_desk_copy_subgraph_{next(_copies)}"
    target = tmp_path / package
    target.mkdir()
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "prompt_desk.py", target / "prompt_desk.py")
    texts = (APPS / "prompt_desk_texts.py").read_text()
    (target / "prompt_desk_texts.py").write_text(texts.replace("Write a friendly reply", "Write a short reply"))
    monkeypatch.syspath_prepend(str(tmp_path))
    old = Prompt("r", prompt_desk.REPLY.template).version[:19]
    new = Prompt("r", prompt_desk.REPLY.template.replace("friendly", "short")).version[:19]
    triage = {"name": "triage", "version": prompt_desk.TRIAGE.full_version, "via": "render"}

    def imported_and_replayed(name: str) -> tuple[list[Any], dict[str, Any]]:
        code, output = import_histories(db, tmp_path / name, "--workflows", "graph_apps.prompt_desk:nested_graph")
        assert code == 0, output
        events = json.loads((tmp_path / name / "nested_desk-nested-done.json").read_text())["events"]
        steps = [(e["name"], e.get("prompts")) for e in events if e["kind"] == "step" and e["name"] in ("triage", "writer")]
        monkeypatch.setattr(effects, "EFFECTS", tmp_path / "replay-effects.log")
        code, stdout, stderr = run_cli("replay", str(tmp_path / name), "--workflows", f"{package}.prompt_desk:nested_graph",
                                       "--format", "json")
        assert code == 0, stderr
        assert not (tmp_path / "replay-effects.log").exists()
        [result] = json.loads(stdout)["results"]
        return steps, result

    steps, result = imported_and_replayed("histories")
    assert steps == [
        ("triage", [triage]),
        ("writer", [{"name": "reply", "version": prompt_desk.REPLY.full_version, "via": "render", "subgraph_node": "draft"}]),
    ]
    [warning] = result["warnings"]
    assert warning["message"] == (
        f"node 'writer' used prompt reply {old} (in its subgraph's node 'draft', recorded when it ran); the code now has "
        f"{new}; the completed thread keeps what that subgraph node wrote"
    )
    assert [(c["prompt"], c["compared"]) for c in result["prompt_changes"]] == [("reply", "call")]

    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM writes WHERE checkpoint_ns != '' AND channel = ?", (RECORD_CHANNEL,))
    steps, result = imported_and_replayed("before-records")
    assert steps == [("triage", [triage]), ("writer", [])]
    [warning] = result["warnings"]
    assert warning["message"] == (
        f"node 'writer' used prompt reply {old} (at the start manifest's version); the code now has {new}; the completed "
        "thread keeps what that node wrote"
    )
    assert ("node 'writer' runs a subgraph, and no prompt record of its nodes was found in the subgraph's own "
            "checkpoints (recorded before per-call records, or read from a thread source that does not read subgraph "
            "checkpoints): its prompt reply was taken at the start manifest's version") in result["notes"]
    assert [(c["prompt"], c["compared"]) for c in result["prompt_changes"]] == [("reply", "manifest")]


def test_a_saver_without_task_paths_gives_the_same_node_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """InMemorySaver, read through its API (no task paths): the records name the node's task, so the same
    versions land on the same nodes."""
    from replaytest.plugins.langgraph.importer import histories_from_saver

    monkeypatch.setattr(effects, "EFFECTS", tmp_path / "effects.log")
    saver = InMemorySaver()
    record(saver, deployed_only=True)
    written, refused = histories_from_saver(saver, tmp_path / "histories", workflows=[model_desk.graph])
    assert refused == [] and len(written) == 1
    assert node_prompts(tmp_path / "histories", "deployed") == [
        ("triage", TRIAGE_V1, [TRIAGE_V1["version"]]), ("review", None, []),
        ("draft", REPLY_V2_REF, [REPLY_V2_REF["version"]]), ("confirm", None, []),
    ]
