"""An ``@entrypoint`` given a store (``store=InMemoryStore()``) and a thread recorded through ``stream``
rather than ``invoke``, recorded on real LangGraph into a SqliteSaver, imported and replayed; a parked
thread is also resumed by LangGraph itself from a copy of its checkpoint under the changed code.

The store: no checkpoint keeps what it held. Tasks reading or writing it are answered from their recorded
results (their bodies never run); a write in the entrypoint's own code is discarded (a note counts it); a
read there stops the replay at its line (the history is an ``error``). Replay never reaches the store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import effect_lines, import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import memory_desk, memory_desk_direct, memory_desk_lookup, progress, progress_drafts_first
from test_langgraph_replay import line_of, replay

from replaytest.cli import cli
from replaytest.history import load_history

STREAM_MODES: list[Any] = ["values", "updates", "custom", "debug", "tasks", "checkpoints", ["updates", "custom"]]


def stored_items() -> list[tuple[tuple[str, ...], str, dict]]:
    return [(tuple(i.namespace), i.key, i.value) for i in memory_desk.STORE.search(("prefs",), limit=100)]


def empty_store() -> None:
    for item in memory_desk.STORE.search(("prefs",), limit=100):
        memory_desk.STORE.delete(tuple(item.namespace), item.key)


@pytest.fixture
def memory(tmp_path: Path, effects: Path) -> Path:
    """Thread ``ann`` asked for a tone, was answered and remembered it; ``ann-again`` recalled it; ``bob`` is
    parked at the question; ``greet`` read the store in the entrypoint's own code. The store is emptied after
    recording, so any write replay made would show."""
    empty_store()
    db = tmp_path / "memory.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        agent = memory_desk.memory_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in agent.invoke("ann", thread("ann"))
        assert agent.invoke(Command(resume="warm"), thread("ann")) == "a warm reply to ann"
        assert agent.invoke("ann", thread("ann-again")) == "a warm reply to ann"
        assert "__interrupt__" in agent.invoke("bob", thread("bob"))
        greeting = memory_desk.greeting_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert greeting.invoke("ann", thread("greet")) == "a warm reply to ann"
    finally:
        conn.close()
    assert stored_items() == [(("prefs", "ann"), "tone", {"tone": "warm"})]  # the tasks really used the store
    out = tmp_path / "out"
    for name in ("memory_agent", "greeting_agent"):
        code, output = import_histories(db, out, "--workflows", f"lg_apps.memory_desk:{name}")
        assert code == 0, output
    empty_store()
    effects.unlink()
    return out


def memory_histories(out: Path) -> list[Path]:
    return [out / f"memory_agent-{name}.json" for name in ("ann", "ann-again", "bob")]


def resume_bob(out: Path, module: Any) -> Any:
    """Resume a copy of the parked thread ``bob`` with ``module``'s entrypoint, answering "brisk"."""
    copy = out.parent / f"resume-{module.__name__.rsplit('.', 1)[-1]}.sqlite"
    shutil.copy(out.parent / "memory.sqlite", copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        return module.memory_agent.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(
            Command(resume="brisk"), thread("bob"))
    finally:
        conn.close()


def test_tasks_using_the_store_replay_from_their_results_and_never_touch_it(memory: Path, effects: Path) -> None:
    histories = memory_histories(memory)
    assert [e.name for e in load_history(histories[0]).events if e.kind == "step"] == ["recall", "remember", "reply"]
    code, report = replay(histories, "lg_apps.memory_desk:memory_agent")
    assert code == 0, report
    assert all(r["status"] == "passed" for r in report["results"])
    assert all(("the entrypoint has a store (store=...): what it holds is in no checkpoint, so store values were not "
                "compared (tasks using it were answered from their recorded results)") in r["notes"] for r in report["results"])
    assert effect_lines(effects) == []  # no task body ran: nothing read or wrote the store
    assert stored_items() == []


def test_a_store_write_moved_into_the_entrypoint_is_discarded_and_judged_as_langgraph_resumes(
    memory: Path, effects: Path
) -> None:
    result = CliRunner().invoke(cli, ["replay", *map(str, memory_histories(memory)), "--workflows",
                                      "lg_apps.memory_desk_direct:memory_agent", "--format", "json", "--rehearse"])
    assert result.exit_code == 1, result.output
    by_thread = {Path(r["history"]).stem: r for r in json.loads(result.output)["results"]}
    ann = by_thread["memory_agent-ann"]
    found = ann["divergence"]
    assert (found["kind"], found["recorded"]["name"], found["issued"]["name"]) == ("command-mismatch", "remember", "reply")
    assert ("the code wrote to LangGraph's store 1 time(s) during replay: the writes were discarded (replay never writes "
            "to a store) and store values were not compared") in ann["notes"]
    assert by_thread["memory_agent-ann-again"]["status"] == "passed"  # a remembered tone: no question, no write
    # The parked thread waits before the change: it passes, and LangGraph's own resume (the rehearsal) goes on.
    bob = by_thread["memory_agent-bob"]
    assert bob["status"] == "passed"
    assert (bob["rehearsal"]["outcome"], [c["name"] for c in bob["rehearsal"]["commands"]]) == ("continues", ["reply"])
    assert effect_lines(effects) == []
    assert stored_items() == []  # neither the replay nor the rehearsal wrote to the entrypoint's store
    # What LangGraph does: resumes bob under the new code with the recorded recall, writes the store, replies.
    assert resume_bob(memory, memory_desk_direct) == "a brisk reply to bob"
    assert effect_lines(effects) == ["reply bob brisk"]
    assert stored_items() == [(("prefs", "bob"), "tone", {"tone": "brisk"})]


def test_a_store_task_renamed_before_the_question_fails_the_parked_thread_as_langgraph_reruns_it(
    memory: Path, effects: Path
) -> None:
    code, report = replay([memory / "memory_agent-bob.json"], "lg_apps.memory_desk_lookup:memory_agent")
    assert code == 1, report
    found = report["results"][0]["divergence"]
    assert (found["kind"], found["recorded"]["name"], found["issued"]["name"]) == ("command-mismatch", "recall", "lookup_tone")
    assert found["source"]["line"] == line_of("memory_desk_lookup", "tone = lookup_tone(user).result()")
    assert effect_lines(effects) == []
    # What LangGraph does: the recorded recall result is not the new task's, so before the answer is read it runs
    # lookup_tone for real, reading the store again (no tone yet, so the answer still goes where it was meant).
    assert resume_bob(memory, memory_desk_lookup) == "a brisk reply to bob"
    assert effect_lines(effects) == ["lookup_tone bob", "remember bob brisk", "reply bob brisk"]


def test_a_store_read_in_the_entrypoint_stops_the_replay_at_its_line(memory: Path, effects: Path) -> None:
    code, report = replay([memory / "greeting_agent-greet.json"], "lg_apps.memory_desk:greeting_agent")
    assert code == 2, report
    [result] = report["results"]
    assert result["status"] == "error"
    line = line_of("memory_desk", "item = store.get((*TONES, user), \"tone\")")
    assert "the entrypoint reads LangGraph's store (get) at " in result["error"]
    assert f"memory_desk.py:{line} in its own code: no checkpoint keeps what the store held" in result["error"]
    assert "Read the store inside a @task" in result["error"]
    assert effect_lines(effects) == []


def record_progress(db: Path) -> None:
    """Thread ``invoked`` by ``invoke``, one thread per stream mode by ``stream`` (parked, then resumed with
    ``stream(Command(resume=…))``), and ``parked-custom`` streamed to its interrupt and left there."""
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        agent = progress.progress_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in agent.invoke("lamp", thread("invoked"))
        done = agent.invoke(Command(resume=True), thread("invoked"))
        for mode in STREAM_MODES:
            name = "-".join(mode) if isinstance(mode, list) else mode
            assert list(agent.stream("lamp", thread(name), stream_mode=mode))
            assert list(agent.stream(Command(resume=True), thread(name), stream_mode=mode))
            assert agent.get_state(thread(name)).values == done
        custom = list(agent.stream("lamp", thread("parked-custom"), stream_mode="custom"))
        assert custom == [{"stage": "pricing", "item": "lamp"}, {"stage": "drafting", "price": 40.0}]
    finally:
        conn.close()


def test_threads_run_by_stream_import_and_replay_as_invoked_ones(tmp_path: Path, effects: Path) -> None:
    db = tmp_path / "progress.sqlite"
    record_progress(db)
    out = tmp_path / "out"
    code, output = import_histories(db, out, "--workflows", "lg_apps.progress:progress_agent")
    assert code == 0, output
    effects.unlink()
    invoked = load_history(out / "progress_agent-invoked.json")
    streamed = [out / f"progress_agent-{'-'.join(m) if isinstance(m, list) else m}.json" for m in STREAM_MODES]
    for path in streamed:
        history = load_history(path)
        assert [(e.kind, e.name, e.result) for e in history.events] == [(e.kind, e.name, e.result) for e in invoked.events]
        assert (history.status, history.result) == ("completed", invoked.result)
    parked = out / "progress_agent-parked-custom.json"
    assert load_history(parked).status == "parked"
    every = [out / "progress_agent-invoked.json", *streamed, parked]
    code, report = replay(every, "lg_apps.progress:progress_agent")
    assert code == 0, report
    code, report = replay(every, "lg_apps.progress_drafts_first:progress_agent")
    assert code == 1
    for result in report["results"]:
        found = result["divergence"]
        assert (found["kind"], found["recorded"]["name"], found["issued"]["name"]) == ("command-mismatch", "fetch_price", "draft")
    assert effect_lines(effects) == []
    # What LangGraph does with the parked streamed thread under the reordered code: neither recorded result fits
    # a call any more, so both tasks run again for real before the answer is read.
    copy = tmp_path / "resume.sqlite"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        agent = progress_drafts_first.progress_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        list(agent.stream(Command(resume=True), thread("parked-custom"), stream_mode="custom"))
    finally:
        conn.close()
    assert effect_lines(effects) == ["draft intro lamp", "fetch_price lamp", "notify intro about the lamp"]
