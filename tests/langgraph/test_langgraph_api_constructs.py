"""Functional-API forms no other app uses, recorded on real LangGraph into a SqliteSaver and replayed:
parallel tasks (two task calls started before either result is read), a task retried by its
``RetryPolicy`` (one call, the attempt that succeeded), and ``entrypoint.final`` (the returned value
compared; the value saved for ``previous`` is not, as the next invocation reads it from the checkpoint)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import effect_lines, import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import fanout, fanout_saved, retrying
from test_langgraph_replay import replay

from replaytest.history import load_history


def record(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        started = fanout.fanout_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert started.invoke("lamp", thread("parallel")) == {"price": 40.0, "intro": "intro about the lamp"}
        final = fanout.final_tally.copy(update={"checkpointer": SqliteSaver(conn)})
        assert [final.invoke(n, thread("final")) for n in (5, 7)] == ["added 5", "added 7"]
    finally:
        conn.close()


def imported(tmp_path: Path, effects: Path) -> Path:
    db = tmp_path / "fanout.sqlite"
    record(db)
    out = tmp_path / "out"
    for name in ("fanout_agent", "final_tally"):
        code, output = import_histories(db, out, "--workflows", f"lg_apps.fanout:{name}")
        assert code == 0, output
    effects.unlink()
    return out


def test_parallel_tasks_replay_in_the_order_they_were_started(tmp_path: Path, effects: Path) -> None:
    out = imported(tmp_path, effects)
    history = out / "fanout_agent-parallel.json"
    assert [e.name for e in load_history(history).events] == ["fetch_price", "draft"]
    assert replay([history], "lg_apps.fanout:fanout_agent")[0] == 0
    code, report = replay([history], "lg_apps.fanout_edited:fanout_agent")
    assert code == 1
    found = report["results"][0]["divergence"]
    assert (found["kind"], found["recorded"]["name"], found["issued"]["name"]) == ("command-mismatch", "fetch_price", "draft")
    assert (Path(found["source"]["path"]).name, found["source"]["line"]) == ("fanout_edited.py", 14)
    assert effect_lines(effects) == []  # no task body ran


def test_entrypoint_final_compares_the_returned_value_not_the_saved_one(tmp_path: Path, effects: Path) -> None:
    out = imported(tmp_path, effects)
    history = out / "final_tally-final.json"
    recorded = load_history(history)
    # previous is what the first invocation saved (5), the result what the second returned
    assert [(e.kind, e.name, e.result) for e in recorded.events] == [("side-effect", "previous", 5), ("step", "add", 12)]
    assert recorded.result == "added 7"
    assert replay([history], "lg_apps.fanout:final_tally")[0] == 0
    code, report = replay([history], "lg_apps.fanout_edited:final_tally")
    assert code == 1
    found = report["results"][0]["divergence"]
    assert (found["kind"], found["message"]) == (
        "result-mismatch", 'the code now returns "added 7 to 5"; the history recorded "added 7"'
    )
    # Another saved value alone passes: the thread's next invocation reads the stored one, not the code's.
    assert replay([history], "lg_apps.fanout_saved:final_tally")[0] == 0
    assert effect_lines(effects) == []
    # What LangGraph does: the next invocation under that code gets the stored 12 as previous.
    conn = sqlite3.connect(tmp_path / "fanout.sqlite", check_same_thread=False)
    try:
        saved = fanout_saved.final_tally.copy(update={"checkpointer": SqliteSaver(conn)})
        assert saved.invoke(1, thread("final")) == "added 1"
    finally:
        conn.close()
    assert effect_lines(effects) == ["add 12 1"]


def test_a_task_retried_by_its_retry_policy_is_one_call_with_the_result_that_succeeded(tmp_path: Path, effects: Path) -> None:
    retrying.ATTEMPTS.clear()
    db = tmp_path / "retrying.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = retrying.quoting_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert graph.invoke("lamp", thread("quote")) == {"price": 12.5, "intro": "intro about the lamp"}
    finally:
        conn.close()
    # LangGraph really retried: the first attempt failed inside the same task run.
    assert effect_lines(effects) == ["flaky_quote lamp attempt 1", "flaky_quote lamp attempt 2", "draft intro lamp"]
    code, output = import_histories(db, tmp_path / "out", "--workflows", "lg_apps.retrying:quoting_agent")
    assert code == 0, output
    history = tmp_path / "out" / "quoting_agent-quote.json"
    assert [(e.name, e.result, e.error) for e in load_history(history).events] == [
        ("flaky_quote", 12.5, None), ("draft", "intro about the lamp", None)
    ]
    effects.unlink()
    assert replay([history], "lg_apps.retrying:quoting_agent")[0] == 0
    code, report = replay([history], "lg_apps.retrying_edited:quoting_agent")
    assert code == 1
    found = report["results"][0]["divergence"]
    assert (found["kind"], found["recorded"]["name"], found["issued"]["name"]) == ("command-mismatch", "flaky_quote", "draft")
    assert (Path(found["source"]["path"]).name, found["source"]["line"]) == ("retrying_edited.py", 13)
    assert effect_lines(effects) == []
