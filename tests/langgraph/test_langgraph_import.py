"""``replaytest import langgraph`` and ``histories_from_saver``: one neutral history per thread, task
names recovered from the ids, interrupts with their resume values, statuses, refusals."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from conftest import AGENT_SPEC, ASYNC_NEEDS_311, import_histories, thread
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import agent, more
from test_langgraph_facts import has_task_paths

from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import histories_from_saver


def steps(path: Path) -> list[tuple[str, object]]:
    return [(e.name, e.result) for e in load_history(path).events if e.kind == "step"]


def test_a_completed_thread_is_its_task_calls_in_order_its_resume_value_and_its_result(recorded) -> None:
    history = load_history(recorded.histories / "order_agent-approved.json")
    assert (history.workflow.type, history.workflow.id, history.workflow.engine) == ("order_agent", "approved", "langgraph")
    assert history.status == "completed"
    assert history.input == {"item": "lamp"}
    assert [(e.kind, e.name) for e in history.events] == [
        ("step", "fetch_price"), ("step", "draft"), ("step", "draft"), ("step", "notify"), ("signal", "interrupt"),
    ]
    # LangGraph keeps the latest interrupt's value: here the one interrupt, which was resumed.
    assert history.events[-1].extra == {"interrupt_index": 0, "interrupt_value": {"item": "lamp", "price": 40.0}}
    assert [e.result for e in history.events] == [
        40.0, "intro about the lamp", "body about the lamp",
        {"sent": True, "summary": "intro about the lamp / body about the lamp"}, {"approved": True},
    ]
    assert [e.extra.get("call_index") for e in history.events[:4]] == [0, 1, 2, 3]
    assert history.result["receipt"] == {"sent": True, "summary": "intro about the lamp / body about the lamp"}


def test_a_thread_left_at_its_interrupt_is_parked_with_the_calls_made_before_it(recorded) -> None:
    history = load_history(recorded.histories / "order_agent-waiting.json")
    assert history.status == "parked"
    assert [(e.kind, e.name, e.result) for e in history.events] == [
        ("step", "fetch_price", 250.0), ("step", "draft", "intro about the desk"), ("step", "draft", "body about the desk"),
        ("signal", "interrupt", None),
    ]
    # Where it waits: interrupt #1, raised by the entrypoint itself, with the value it was given.
    assert history.events[-1].extra == {
        "interrupt_index": 0, "pending": True, "interrupt_value": {"item": "desk", "price": 250.0},
    }


def test_calls_no_current_task_name_explains_are_reported_not_guessed(recorded, tmp_path: Path) -> None:
    # No --workflows: the project's configured workflows (the journal example) define no @task.
    code, output = import_histories(
        recorded.db, tmp_path, "--thread-id", "approved", "--task-name", "fetch_price", "--task-name", "notify"
    )
    assert code == 2
    assert "2 task call(s) match no @task name of the current code (fetch_price, notify)" in output
    named = steps(tmp_path / "order_agent-approved.json")
    if has_task_paths():  # the call counter places the unnamed calls
        assert [name for name, _ in named] == ["fetch_price", "?", "?", "notify"]
        assert named[1] == ("?", "intro about the lamp")
    else:  # neither name nor position known: left out, and what follows them too, and said so
        assert [name for name, _ in named] == ["fetch_price"]
        assert "left out: this saver stores no task paths" in output
        assert "call #2 has no recorded result; the 1 later recorded result(s) are left out" in output


def test_thread_selection_by_id_and_by_limit(recorded, tmp_path: Path) -> None:
    code, output = import_histories(recorded.db, tmp_path / "one", "--thread-id", "approved", "--workflows", AGENT_SPEC)
    assert code == 0, output
    assert [p.name for p in (tmp_path / "one").glob("*.json")] == ["order_agent-approved.json"]
    code, output = import_histories(recorded.db, tmp_path / "latest", "--limit", "1", "--workflows", AGENT_SPEC)
    assert code == 0, output
    assert [p.name for p in (tmp_path / "latest").glob("*.json")] == ["order_agent-waiting.json"]  # checkpointed last
    code, output = import_histories(recorded.db, tmp_path / "x", "--limit", "1", "--thread-id", "a")
    assert code == 2 and "exclude each other" in output


def test_a_missing_file_and_a_url_of_another_store_are_errors(tmp_path: Path) -> None:
    code, output = import_histories(tmp_path / "nope.sqlite", tmp_path / "out")
    assert code == 2 and "no such SQLite file" in output
    from click.testing import CliRunner

    from replaytest.cli import cli

    # sqlite:/// and postgresql:// are read from the command line (tests/langgraph_postgres); other stores are not.
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", "redis://cache:6379/0", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert ("error: --checkpointer 'redis://cache:6379/0': the command line reads sqlite:///PATH (SqliteSaver) or "
            "postgresql://USER@HOST:PORT/DATABASE (PostgresSaver); other savers: "
            "replaytest.plugins.langgraph.importer.histories_from_saver(saver, out)") in result.output


def test_pickled_values_are_refused_and_never_unpickled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "pickled.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=JsonPlusSerializer(pickle_fallback=True))
        graph = more.opaque_agent.copy(update={"checkpointer": saver})
        assert graph.invoke("x", thread("p")) == "x"
        stored = conn.execute("SELECT type FROM writes WHERE channel = '__return__'").fetchall()
    finally:
        conn.close()
    assert stored == [("pickle",)]  # the test really stores a pickled value
    unpickled: list[str] = []
    monkeypatch.setattr(more.Opaque, "__setstate__", lambda self, state: unpickled.append("!"), raising=False)
    code, output = import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:opaque_agent")
    assert code == 2
    assert "value stored with pickle" in output and "never unpickles" in output and "thread 'p'" in output
    assert unpickled == []


def test_any_saver_object_imports_the_same_history_without_task_paths(tmp_path: Path) -> None:
    saver = InMemorySaver()
    graph = agent.order_agent.copy(update={"checkpointer": saver})
    graph.invoke({"item": "lamp"}, thread("approved"))
    graph.invoke(Command(resume={"approved": True}), thread("approved"))
    written, refused = histories_from_saver(saver, tmp_path, workflows=[agent.order_agent])
    assert refused == []
    [(path, _)] = written
    assert steps(path) == [
        ("fetch_price", 40.0), ("draft", "intro about the lamp"), ("draft", "body about the lamp"),
        ("notify", {"sent": True, "summary": "intro about the lamp / body about the lamp"}),
    ]
    assert load_history(path).status == "completed"


def test_several_invocations_the_latest_one_with_its_previous_value(tmp_path: Path) -> None:
    saver = InMemorySaver()
    graph = more.tally.copy(update={"checkpointer": saver})
    assert [graph.invoke(n, thread("t")) for n in (5, 7)] == [5, 12]
    [(path, item)], _ = histories_from_saver(saver, tmp_path, workflows=[more.tally])
    history = load_history(path)
    assert [(e.kind, e.name, e.result) for e in history.events] == [("side-effect", "previous", 5), ("step", "add", 12)]
    assert (history.input, history.result) == (7, 12)
    assert "thread has 2 invocations; the history is the latest one" in item.notes


def test_nested_task_calls_belong_to_their_parent_task(tmp_path: Path) -> None:
    db = tmp_path / "nested.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        more.nested_agent.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(3, thread("n"))
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:nested_agent")
    assert code == 0, output
    assert "2 task result(s) of calls made inside task bodies (nested tasks) are part of their parent task" in output
    assert steps(tmp_path / "out/nested_agent-n.json") == [("outer", 7), ("outer", 9)]


def test_a_failed_run_records_the_task_failure_and_the_error(tmp_path: Path) -> None:
    db = tmp_path / "failed.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        with pytest.raises(ValueError, match="cannot handle 4"):
            more.failing_agent.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(4, thread("f"))
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:failing_agent")
    assert code == 0, output
    history = load_history(tmp_path / "out/failing_agent-f.json")
    assert history.status == "failed"
    assert (history.error.type, history.error.message) == ("ValueError", "cannot handle 4")
    assert [(e.name, e.result, e.error) for e in history.events][0] == ("add", 5, None)
    assert history.events[1].error is not None and history.events[1].error.message == "cannot handle 4"


def record_async(db: Path) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            graph = more.async_agent.copy(update={"checkpointer": saver})
            await graph.ainvoke("bolt", thread("a"))
            await graph.ainvoke(Command(resume="ok"), thread("a"))
            await graph.ainvoke("nut", thread("b"))

    asyncio.run(run())


@ASYNC_NEEDS_311
def test_async_entrypoints_import_like_sync_ones(tmp_path: Path) -> None:
    db = tmp_path / "async.sqlite"
    record_async(db)
    code, output = import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:async_agent")
    assert code == 0, output
    done = json.loads((tmp_path / "out/async_agent-a.json").read_text())
    assert done["status"] == "completed" and done["result"] == {"code": "bolt-42", "answer": "ok", "done": "confirmed bolt-42"}
    assert steps(tmp_path / "out/async_agent-b.json") == [("lookup", "nut-42")]


def test_secrets_are_redacted_on_import_and_the_redacted_history_still_replays(tmp_path: Path) -> None:
    db = tmp_path / "secret.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        graph.invoke({"item": "lamp", "password": "hunter2"}, thread("s"))
        final = graph.invoke(Command(resume={"approved": True}), thread("s"))
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "out", "--workflows", AGENT_SPEC, "--redact-path", "$.result.receipt")
    assert code == 0, output
    assert "2 value(s) redacted" in output
    text = (tmp_path / "out/order_agent-s.json").read_text()
    assert "hunter2" not in text
    history = load_history(tmp_path / "out/order_agent-s.json")
    assert history.input["item"] == "lamp" and history.input["password"].startswith("[redacted")
    # Shape-preserving pseudonyms: the receipt keeps its form but not its recorded content.
    assert history.result["receipt"] != final["receipt"]
    from click.testing import CliRunner

    from replaytest.cli import cli

    replayed = CliRunner().invoke(cli, ["replay", str(tmp_path / "out"), "--workflows", AGENT_SPEC])
    assert replayed.exit_code == 0, replayed.output
    code, output = import_histories(db, tmp_path / "raw", "--workflows", AGENT_SPEC, "--no-redact")
    assert code == 0 and "hunter2" in (tmp_path / "raw/order_agent-s.json").read_text()


def test_an_interrupt_inside_a_task_parks_the_thread_at_that_call(tmp_path: Path, effects: Path) -> None:
    saver = InMemorySaver()
    graph = more.asking_agent.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke("colour?", thread("q"))
    [(path, item)], _ = histories_from_saver(saver, tmp_path, workflows=[more.asking_agent])
    history = load_history(path)
    assert history.status == "parked" and [e.name for e in history.events] == ["add", "interrupt"]
    # Parked inside the body of call #2, ask(): LangGraph wrote the interrupt under that call's task id.
    assert history.events[-1].extra == {
        "interrupt_index": 0, "pending": True, "task": "ask", "call_index": 1, "interrupt_value": "colour?",
    }
    assert 'parked at interrupt #1 ("colour?")' in item.notes  # LangGraph bubbles it up to the entrypoint
    effects.unlink()
    from click.testing import CliRunner

    from replaytest.cli import cli

    replayed = CliRunner().invoke(cli, ["replay", str(path), "--workflows", "lg_apps.more:asking_agent"])
    assert replayed.exit_code == 0, replayed.output  # stops at the ask() call, which has no result yet
    assert not effects.exists()


def test_results_after_a_call_still_in_flight_are_left_out(recorded) -> None:
    # The recorded thread as read, minus the result of call #2: what a checkpoint read while that call
    # (started in parallel with later ones) was still running looks like.
    from replaytest.plugins.langgraph.importer import SqliteThreads, build_history, current_code

    source = SqliteThreads(recorded.db)
    try:
        checkpoints, writes = source.read("approved")
    finally:
        source.close()
    second = next(w for w in writes if w.channel == "__return__" and w.value == "intro about the lamp")
    kept = [w for w in writes if w is not second]
    item = build_history("approved", checkpoints, kept, current_code([agent.order_agent]))
    assert [e["name"] for e in item.document["events"] if e["kind"] == "step"] == ["fetch_price"]
    assert "call #2 has no recorded result; the 2 later recorded result(s) are left out" in item.notes


def test_thread_ids_that_clash_as_file_names_get_files_of_their_own(tmp_path: Path) -> None:
    saver = InMemorySaver()
    graph = more.tally.copy(update={"checkpointer": saver})
    graph.invoke(1, thread("a/b"))
    graph.invoke(2, thread("a:b"))
    written, refused = histories_from_saver(saver, tmp_path, workflows=[more.tally])
    assert refused == [] and len({path for path, _ in written}) == 2
    assert sorted(load_history(path).workflow.id for path, _ in written) == ["a/b", "a:b"]
