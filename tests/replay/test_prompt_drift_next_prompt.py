"""A changed prompt at a model call an unfinished run already made: the report names what the run keeps,
where it resumes and the prompt it will actually use next, not the call it finished.

Two small agents on the real journal runtime: an expense agent parked on a manager's approval after
its summarising model call, and a triage agent whose worker died during its last model call (the
run is still running there). Each is recorded with one set of prompts and replayed against a version
of the code with another; the expected reports are written out here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replaykit import record, replay

from replaytest.history import load_history, save_history
from replaytest.journal import Journal, Timing, Worker, workflow
from replaytest.prompts import Prompt


def summarise(text: str) -> str:
    return "Taxi 42.00 EUR, client dinner 180.00 EUR" if "Summarise" in text else "Your expenses were approved."


def expense_agent(summary_version: str = "v1", notice_version: str = "v1") -> Any:
    """The expense agent as deployed with these prompt versions."""
    summary = Prompt("expense-summary", "Summarise these receipts for a manager:\n{receipts}", version=summary_version)
    notice = Prompt("approval-notice", "Tell the employee their claim was decided: {decision}", version=notice_version)

    @workflow(name="expense_agent")
    def run(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
        digest = ctx.model("summarise receipts", summarise, summary.render(receipts=claim["receipts"]), prompt=summary)
        decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
        message = ctx.model("write notice", summarise, notice.render(decision=decision), prompt=notice)
        return {"summary": digest, "notice": message}

    return run


CLAIM = {"employee": "eve@example.com", "receipts": ["taxi 42.00", "dinner 180.00"]}


def test_a_parked_run_names_the_prompt_it_uses_after_its_wait(tmp_path: Path) -> None:
    path = record(tmp_path, expense_agent(), CLAIM, name="expense-waiting")
    assert load_history(path).status == "parked"
    result = replay(path, expense_agent(summary_version="v2"))
    assert result.status == "diverged"
    assert result.divergence is not None and result.divergence.kind == "prompt-drift"
    assert result.divergence.position == 1
    assert result.divergence.message == (
        "model 'summarise receipts' now uses prompt version v2 but the history recorded v1 (prompt expense-summary) "
        "(this parked run keeps the result of model 'summarise receipts' recorded under v1 and resumes at "
        "signal 'manager decision'; the next prompt it uses is approval-notice v1, the only one of its prompts "
        "no recorded call used)"
    )
    assert "resumes with the new prompt" not in result.divergence.message


def test_both_prompts_changed_the_next_one_is_named_at_its_new_version(tmp_path: Path) -> None:
    path = record(tmp_path, expense_agent(), CLAIM, name="expense-waiting")
    result = replay(path, expense_agent(summary_version="v2", notice_version="v3"))
    assert result.divergence is not None and result.divergence.kind == "prompt-drift"
    assert result.divergence.message.endswith(
        "resumes at signal 'manager decision'; the next prompt it uses is approval-notice v3, the only one of "
        "its prompts no recorded call used)"
    )


def test_a_completed_run_still_only_warns(tmp_path: Path) -> None:
    path = record(tmp_path, expense_agent(), CLAIM, name="expense-done", signals=[("manager decision", "approved")])
    result = replay(path, expense_agent(summary_version="v2"))
    assert result.status == "passed"
    assert [warning.message for warning in result.warnings if warning.kind == "prompt-drift"] == [
        "model 'summarise receipts' now uses prompt version v2 but the history recorded v1 (prompt expense-summary)"
    ]


class WorkerDied(BaseException):
    """The worker process dying in the middle of a model call (nothing records a result)."""


def triage_model(text: str) -> str:
    if text.startswith("Reply"):
        raise WorkerDied()
    return "billing"


def triage_agent(triage_version: str = "v1") -> Any:
    triage = Prompt("triage", "Classify this ticket: {ticket}", version=triage_version)
    reply = Prompt("reply", "Reply to this {kind} ticket: {ticket}", version="v1")

    @workflow(name="triage_agent")
    def run(ctx: Any, ticket: str) -> str:
        kind = ctx.model("classify", triage_model, triage.render(ticket=ticket), prompt=triage)
        account = ctx.step("load account", lambda: {"plan": "pro"})
        text = reply.render(kind=f"{kind} ({account['plan']} plan)", ticket=ticket)
        return str(ctx.model("draft reply", triage_model, text, prompt=reply))

    return run


def record_crashed(directory: Path) -> Path:
    """The triage agent's run, its worker killed during the 'draft reply' model call."""
    agent = triage_agent()
    with Journal(directory / "triage.sqlite3") as journal:
        run_id = journal.start(agent, "My invoice lists a seat I never added", run_id="run-triage", workflow_id="t-1")
        worker = Worker(journal, [agent], timing=Timing(sleep=lambda seconds: None))
        try:
            worker.run_until_idle()
        except WorkerDied:
            pass
        path = directory / "triage.json"
        save_history(journal.export(run_id), path)
    return path


def test_a_running_run_names_the_model_call_it_resumes_at(tmp_path: Path) -> None:
    path = record_crashed(tmp_path)
    history = load_history(path)
    assert history.status == "running"
    assert [(event.kind, event.name) for event in history.events] == [("model", "classify"), ("step", "load account")]
    result = replay(path, triage_agent(triage_version="v2"))
    assert result.divergence is not None and result.divergence.kind == "prompt-drift"
    assert result.divergence.message == (
        "model 'classify' now uses prompt version v2 but the history recorded v1 (prompt triage) "
        "(this running run keeps the result of model 'classify' recorded under v1 and resumes at "
        "model 'draft reply'; the next prompt it uses is reply v1, at model 'draft reply')"
    )
    # Unchanged prompts: the same run replays green.
    assert replay(path, triage_agent()).status == "passed"
