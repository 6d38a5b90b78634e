"""Parked threads are checked where they wait, and interrupts by the question they ask.

Each case records real threads with a SqliteSaver, resumes a copy with LangGraph itself under the changed
code (to show what LangGraph really does), and replays the history imported before the change."""

from __future__ import annotations

import re

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import ASYNC_NEEDS_311, effect_lines, import_histories, thread
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import more, more_edited, research, support, support_autopay, support_confirm, writer, writer_swapped
from test_langgraph_import import record_async
from test_langgraph_replay import replay

from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import histories_from_saver

APPS = Path(__file__).parent / "lg_apps"
SUPPORT = ("--workflows", "lg_apps.support:support_agent")


def line_of(module: str, statement: str) -> int:
    """The line holding exactly ``statement`` (stripped) in ``lg_apps/<module>.py``, its first one."""
    lines = (APPS / f"{module}.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if line.strip() == statement)


def record(db: Path, graph, runs: list[tuple[str, object]]) -> None:
    """Invoke ``graph`` (with a SqliteSaver on ``db``) once per (thread id, input or Command)."""
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saved = graph.copy(update={"checkpointer": SqliteSaver(conn)})
        for thread_id, value in runs:
            saved.invoke(value, thread(thread_id))
    finally:
        conn.close()


def resume_with(db: Path, graph, thread_id: str, answer: object) -> dict:
    """What LangGraph itself does when ``graph`` (the changed code) resumes the parked thread."""
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        return graph.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(Command(resume=answer), thread(thread_id))
    finally:
        conn.close()


@pytest.fixture
def refunds(tmp_path: Path, effects: Path) -> Path:
    """Refund tickets parked at the approval (small: A-17, 20.0; large: B-90, 400.0) and one approved
    and completed (done: A-17), imported into ``tmp_path / "histories"``; the effects file emptied."""
    db = tmp_path / "support.sqlite"
    record(db, support.support_agent, [
        ("small", {"order_id": "A-17"}), ("large", {"order_id": "B-90"}),
        ("done", {"order_id": "A-17"}), ("done", Command(resume="approve")),
    ])
    code, output = import_histories(db, tmp_path / "histories", *SUPPORT)
    assert code == 0, output
    effects.unlink()
    return db


def result_of(report: dict) -> dict:
    [result] = report["results"]
    return result


def test_unchanged_code_replays_parked_and_completed_refunds(refunds: Path, effects: Path) -> None:
    code, report = replay([refunds.parent / "histories"], "lg_apps.support:support_agent")
    assert code == 0, report
    assert [r["status"] for r in report["results"]] == ["passed"] * 3
    assert not effects.exists()


def test_a_task_added_before_the_approval_fails_the_thread_parked_there(refunds: Path, effects: Path) -> None:
    """LangGraph resumes the small refund under the auto-approve code by paying it, although the human
    answers "reject": the new pay_refund() call runs before the interrupt the answer was meant for."""
    histories = refunds.parent / "histories"
    code, report = replay([histories / "support_agent-small.json"], "lg_apps.support_autopay:support_agent")
    assert code == 1, report
    found = result_of(report)["divergence"]
    assert (found["kind"], found["position"]) == ("extra-command", 2)
    assert found["issued"]["name"] == "pay_refund"
    assert (found["recorded"]["kind"], found["recorded"]["name"], found["recorded"]["position"]) == ("signal", "interrupt", 2)
    assert found["message"] == (
        "the code issued step 'pay_refund' before reaching interrupt #1 "
        '({"amount": 20.0, "order_id": "A-17", "question": "approve the refund?"}), where this parked history waits '
        "in the entrypoint; on resume LangGraph would run it for real before the answer is read"
    )
    assert found["source"]["path"].endswith("support_autopay.py")
    assert found["source"]["line"] == line_of("support_autopay", 'refund = pay_refund(order["order_id"], order["amount"]).result()')
    # The large refund still waits for the same approval under the new code.
    assert replay([histories / "support_agent-large.json"], "lg_apps.support_autopay:support_agent")[0] == 0
    assert not effects.exists()
    # What LangGraph does with the parked small refund after the deploy: pays it, whatever the answer.
    resumed = resume_with(refunds, support_autopay.support_agent, "small", "reject")
    assert resumed["refund"] == {"refunded": 20.0}
    assert effect_lines(effects) == ["pay_refund A-17 20.0", "close_ticket A-17 approve"]


def test_a_question_inserted_before_the_approval_is_an_interrupt_mismatch(refunds: Path, effects: Path) -> None:
    """LangGraph resumes the parked ticket under the new code by handing the reviewer's "approve" to the
    new address question, and parks again at the approval: interrupts are matched by index."""
    histories = refunds.parent / "histories"
    code, report = replay([histories / "support_agent-small.json"], "lg_apps.support_confirm:support_agent")
    assert code == 1, report
    found = result_of(report)["divergence"]
    assert (found["kind"], found["position"]) == ("interrupt-mismatch", 2)
    assert (found["recorded"]["kind"], found["issued"]["kind"]) == ("signal", "signal")
    # The customer's address reaches the code as the importer's pseudonym (same domain, default redaction).
    assert re.match(
        r'interrupt #1 now asks \{"customer": "user-[0-9a-f]{10}@example\.org", "question": "confirm the customer\'s '
        r'address\?"\}; the history recorded \{"amount": 20\.0, "order_id": "A-17", "question": "approve the refund\?"\} there',
        found["message"],
    ), found["message"]
    assert found["message"].endswith("(the answer the reviewer gives on resume would go to this new question)")
    address_line = line_of(
        "support_confirm",
        'address = interrupt({"question": "confirm the customer\'s address?", "customer": order["customer"]})',
    )
    assert found["source"]["line"] == address_line
    # The completed ticket's answer was given to the approval question, not to the new one.
    code, report = replay([histories / "support_agent-done.json"], "lg_apps.support_confirm:support_agent")
    found = result_of(report)["divergence"]
    assert (code, found["kind"], found["position"]) == (1, "interrupt-mismatch", 4)
    assert found["message"].endswith("(the recorded answer was given to the recorded question)")
    assert not effects.exists()
    resumed = resume_with(refunds, support_confirm.support_agent, "small", "approve")
    [waiting] = resumed["__interrupt__"]
    assert waiting.value == {"question": "approve the refund?", "order_id": "A-17", "amount": 20.0}
    assert effect_lines(effects) == []  # "approve" answered the address question; nothing paid yet


def test_swapped_drafts_fail_the_thread_parked_at_their_review(tmp_path: Path, effects: Path) -> None:
    """LangGraph stores no task inputs, so the two draft_section() calls cannot be told apart by what they
    were asked; LangGraph resumes the swapped code by feeding each call the other's recorded draft and
    publishes the article body first. The review interrupt's value holds the drafts: that shows it."""
    db = tmp_path / "writer.sqlite"
    record(db, writer.writer_agent, [("owls", {"topic": "owls"})])
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.writer:writer_agent")
    assert code == 0, output
    effects.unlink()
    history = tmp_path / "histories/writer_agent-owls.json"
    assert replay([history], "lg_apps.writer:writer_agent")[0] == 0
    code, report = replay([history], "lg_apps.writer_swapped:writer_agent")
    assert code == 1, report
    found = result_of(report)["divergence"]
    assert (found["kind"], found["position"]) == ("interrupt-mismatch", 3)
    assert found["message"].startswith(
        'interrupt #1 now asks {"body": "intro on owls", "intro": "body on owls", "review": "publish this article?"}; '
        'the history recorded {"body": "body on owls", "intro": "intro on owls", "review": "publish this article?"}'
    )
    assert found["source"]["line"] == line_of(
        "writer_swapped", 'verdict = interrupt({"review": "publish this article?", "intro": intro, "body": body})'
    )
    assert not effects.exists()
    resumed = resume_with(db, writer_swapped.writer_agent, "owls", "publish")
    assert resumed["post"] == {"published": "body on owls | intro on owls"}


def test_histories_imported_before_interrupts_were_recorded_still_replay_and_say_so(refunds: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for name in ("support_agent-small.json", "support_agent-done.json"):
        document = json.loads((refunds.parent / "histories" / name).read_text())
        # What the importer wrote before: resumed interrupts without values, no event for the pending one.
        document["events"] = [e for e in document["events"] if not e.get("pending")]
        for event in document["events"]:
            event.pop("interrupt_value", None)
        (old / name).write_text(json.dumps(document))
    assert [e.kind for e in load_history(old / "support_agent-small.json").events] == ["step"]
    code, report = replay([old], "lg_apps.support_confirm:support_agent")
    # By count only: the parked ticket passes (the new question is interrupt #1, where it waits); the
    # completed one's single answer goes to the new question and the code then waits at interrupt #2.
    assert code == 1, report
    assert [(r["workflow"]["id"], r["status"]) for r in report["results"]] == [("done", "diverged"), ("small", "passed")]
    assert report["results"][0]["divergence"]["kind"] == "extra-command"
    assert "the code now waits at interrupt #2" in report["results"][0]["divergence"]["message"]
    notes = report["summary"]["notes"]
    assert "2 histories: no interrupt values recorded (imported before replaytest recorded them): interrupts were compared by count only" in notes
    assert (
        "1 history: the history does not record where the run is parked (imported before replaytest recorded it): a task "
        "call past the recorded ones was taken as the resume point; import the thread again to check it"
    ) in notes


def test_only_the_latest_interrupt_value_is_stored_and_earlier_ones_are_counted(tmp_path: Path, effects: Path) -> None:
    """Parked at the second of two questions: LangGraph replaced the first one's value with the second's."""
    db = tmp_path / "confirm.sqlite"
    record(db, support_confirm.support_agent, [("two", {"order_id": "B-90"}), ("two", Command(resume="bo's address ok"))])
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.support_confirm:support_agent")
    assert code == 0, output
    path = tmp_path / "histories/support_agent-two.json"
    [first, pending] = [e for e in load_history(path).events if e.kind == "signal"]
    assert "interrupt_value" not in first.extra
    assert pending.extra["interrupt_value"] == {"question": "approve the refund?", "order_id": "B-90", "amount": 400.0}
    code, report = replay([path], "lg_apps.support_confirm:support_agent")
    assert code == 0, report
    assert "1 history: LangGraph keeps only the latest interrupt's value: earlier interrupts were compared by count only" in (
        report["summary"]["notes"]
    )
    # The original code asks only the approval: the recorded answer to the address question becomes its
    # decision (interrupt #1 is compared by count), and it closes the ticket before reaching interrupt #2.
    code, report = replay([path], "lg_apps.support:support_agent")
    found = result_of(report)["divergence"]
    assert (code, found["kind"], found["issued"]["name"]) == (1, "extra-command", "close_ticket")
    assert found["message"].startswith("the code issued step 'close_ticket' before reaching interrupt #2 (")


def test_a_nested_entrypoint_is_replayed_from_its_recorded_run_and_never_runs(tmp_path: Path, effects: Path) -> None:
    db = tmp_path / "report.sqlite"
    record(db, research.report_agent, [("owls", "owls")])
    # Recording really runs both entrypoints' tasks: the effects file is live.
    assert effect_lines(effects) == ["search_web owls", "write_report owls"]
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.research:report_agent")
    assert code == 0, output
    effects.unlink()
    code, report = replay([tmp_path / "histories/report_agent-owls.json"], "lg_apps.research:report_agent")
    assert code == 0, report
    assert not effects.exists()  # search_web's body did not run


def test_a_nested_entrypoint_imported_without_its_run_stops_the_replay_at_the_call(tmp_path: Path, effects: Path) -> None:
    """A saver read through its API (here an InMemorySaver) gives no nested runs: replay stops where the code
    invokes the nested entrypoint, after the calls before it, and says why."""
    saver = InMemorySaver()
    research.report_agent.copy(update={"checkpointer": saver}).invoke("owls", thread("owls"))
    [(path, _)], _ = histories_from_saver(saver, tmp_path, workflows=[research.report_agent])
    effects.unlink()
    code, report = replay([path], "lg_apps.research:report_agent")
    assert code == 2, report
    result = result_of(report)
    assert result["status"] == "error"
    invoke_line = line_of("research", "findings = research_agent.invoke(question)")
    assert result["error"].startswith("the entrypoint starts another LangGraph graph ('research_agent') at ")
    # The code already calls it with invoke(): the message says what is missing, the import's record of the
    # nested runs, and advises no other call.
    assert f"lg_apps/research.py:{invoke_line} from its own code: the history holds no graph run #1 " in result["error"]
    assert "does not say which nested runs its import found" in result["error"]
    assert "Import the thread again (from its SQLite or Postgres checkpoints) to tell" in result["error"]
    assert "Call it with invoke()" not in result["error"]
    assert "Replay checked the 0 task call(s) before it and stopped at this call" in result["error"]
    assert not effects.exists()  # search_web's body did not run


def test_an_entrypoint_invoked_inside_a_task_is_fed_from_the_task_result(tmp_path: Path, effects: Path) -> None:
    db = tmp_path / "briefing.sqlite"
    record(db, research.briefing_agent, [("owls", "owls")])
    assert effect_lines(effects) == ["gather owls", "search_web owls", "write_report owls"]
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.research:briefing_agent")
    assert code == 0, output
    effects.unlink()
    code, report = replay([tmp_path / "histories/briefing_agent-owls.json"], "lg_apps.research:briefing_agent")
    assert code == 0, report
    assert not effects.exists()


@ASYNC_NEEDS_311
def test_an_async_entrypoint_parked_at_an_interrupt_records_and_compares_its_value(tmp_path: Path) -> None:
    db = tmp_path / "async.sqlite"
    record_async(db)
    import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:async_agent")
    parked = tmp_path / "out/async_agent-b.json"
    assert load_history(parked).events[-1].extra["interrupt_value"] == {"code": "nut-42"}
    document = json.loads(parked.read_text())
    document["events"][-1]["interrupt_value"] = {"code": "nut-41"}
    changed = tmp_path / "changed/async_agent-b.json"
    changed.parent.mkdir()
    changed.write_text(json.dumps(document))
    code, report = replay([changed], "lg_apps.more:async_agent")
    found = result_of(report)["divergence"]
    assert (code, found["kind"]) == (1, "interrupt-mismatch")
    assert 'interrupt #1 now asks {"code": "nut-42"}; the history recorded {"code": "nut-41"}' in found["message"]
    shutil.rmtree(changed.parent)


@ASYNC_NEEDS_311
@pytest.mark.parametrize("agent", ["async_report_agent", "async_desk_agent"])
def test_a_nested_entrypoint_awaited_from_an_async_entrypoint_is_replayed_too(agent: str, tmp_path: Path, effects: Path) -> None:
    """``await research_agent.ainvoke(…)`` (a synchronous nested entrypoint) and ``await
    async_research_agent.ainvoke(…)`` (an async one), each with a task call of the nested run."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db = tmp_path / "async-report.sqlite"

    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            await getattr(research, agent).copy(update={"checkpointer": saver}).ainvoke("owls", thread("owls"))

    asyncio.run(run())
    assert effect_lines(effects) == ["search_web owls", "write_report owls"]
    code, output = import_histories(db, tmp_path / "histories", "--workflows", f"lg_apps.research:{agent}")
    assert code == 0, output
    effects.unlink()
    code, report = replay([tmp_path / f"histories/{agent}-owls.json"], f"lg_apps.research:{agent}")
    assert (code, result_of(report)["status"]) == (0, "passed"), report
    assert not effects.exists()
    # The nested run's task call is compared: the search renamed inside the nested entrypoint diverges there.
    code, report = replay([tmp_path / f"histories/{agent}-owls.json"], f"lg_apps.research_renamed:{agent}")
    found = result_of(report)["divergence"]
    assert (code, found["kind"], found["recorded"]["name"], found["issued"]["name"]) == (
        1, "command-mismatch", "search_web", "search_archive")
    assert found["source"]["path"].endswith("research_renamed.py")
    assert not effects.exists()


def test_a_thread_parked_inside_a_task_fails_when_another_call_comes_first(tmp_path: Path, effects: Path) -> None:
    """The thread waits inside ask() (call #2). LangGraph resumes the edited code by running the new
    add() call for real as call #2, then runs ask()'s body again as call #3, which takes the answer."""
    saver = InMemorySaver()
    graph = more.asking_agent.copy(update={"checkpointer": saver})
    graph.invoke("colour?", thread("q"))
    [(path, _)], _ = histories_from_saver(saver, tmp_path, workflows=[more.asking_agent])
    effects.unlink()
    code, report = replay([path], "lg_apps.more:asking_agent")
    assert code == 0, report
    assert (
        "1 history: the run is parked at an interrupt inside a task body, which replay never runs: that interrupt's "
        "value was not compared"
    ) in report["summary"]["notes"]
    code, report = replay([path], "lg_apps.more_edited:asking_agent")
    found = result_of(report)["divergence"]
    assert (code, found["kind"], found["position"], found["issued"]["name"]) == (1, "extra-command", 2, "add")
    assert found["message"].startswith(
        "the code issued step 'add' before reaching interrupt #1 (\"colour?\"), where this parked history waits "
        "inside step 'ask' (task call #2)"
    )
    assert found["source"]["line"] == line_of("more_edited", "second = add(first, 3).result()  # a new call before the task whose body waits for the answer")
    assert not effects.exists()
    resumed = more_edited.asking_agent.copy(update={"checkpointer": saver}).invoke(Command(resume="blue"), thread("q"))
    assert resumed == "colour? 6 blue"
    assert effect_lines(effects) == ["add 3 3", "ask colour?"]


def test_a_saver_without_task_paths_records_the_pending_interrupt_too(tmp_path: Path, effects: Path) -> None:
    """InMemorySaver, read through the saver API (no task paths): the same pending interrupt and value."""
    saver = InMemorySaver()
    support.support_agent.copy(update={"checkpointer": saver}).invoke({"order_id": "A-17"}, thread("small"))
    [(path, _)], refused = histories_from_saver(saver, tmp_path, workflows=[support.support_agent])
    assert refused == []
    pending = load_history(path).events[-1]
    assert (pending.kind, pending.name, pending.extra) == ("signal", "interrupt", {
        "interrupt_index": 0, "pending": True,
        "interrupt_value": {"question": "approve the refund?", "order_id": "A-17", "amount": 20.0},
    })
    effects.unlink()
    code, report = replay([path], "lg_apps.support_autopay:support_agent")
    assert (code, result_of(report)["divergence"]["kind"]) == (1, "extra-command")
    assert not effects.exists()
