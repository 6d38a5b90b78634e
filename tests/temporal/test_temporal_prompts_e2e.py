"""Prompt versions and activity inputs on a real Temporal dev server (issue acceptance 1).

A model-calling workflow records which prompt each activity used (``use_prompt`` + ``PromptInterceptor``
headers) and, at start, the manifest of every prompt it can use. One run completes, one waits for a
signal after its first model call. Their histories are fetched from the server, then the application
is edited the way a user would (a prompt bumped before the wait, one bumped after it, an activity
argument changed) and ``replaytest replay`` runs in a separate process against each edit.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from temporal_devserver import DevServer, running_dev_server

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

PROMPTS = '''"""The prompts of the support agent."""

from replaytest.prompts import Prompt

DRAFTER = Prompt("drafter", "Draft a plan for: {{ticket}}{drafter_extra}", version="{drafter}")
WRITER = Prompt("writer", "Write the reply to: {{ticket}}{writer_extra}", version="{writer}"{writer_model})
'''

WORKFLOW = '''"""A support agent: drafts a plan with a model, waits for approval, writes the reply with a model."""

from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import support_prompts as prompts
    from replaytest.temporal import PromptInterceptor, use_prompt

_TIMEOUT = timedelta(seconds=10)


@activity.defn
async def call_model(text: str) -> str:
    return "model: " + text


async def write_reply(ticket: str) -> str:
    with use_prompt(prompts.WRITER):
        return await workflow.execute_activity(call_model, prompts.WRITER.render(ticket=ticket), start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="SupportAgent")
class SupportAgent:
    def __init__(self) -> None:
        self.approver = None

    @workflow.signal
    def approve(self, approver: str) -> None:
        self.approver = approver

    @workflow.run
    async def run(self, ticket: str) -> dict:
        with use_prompt(prompts.DRAFTER):
            plan = await workflow.execute_activity(
                call_model, prompts.DRAFTER.render(ticket={ticket_arg}), start_to_close_timeout=_TIMEOUT
            )
        await workflow.wait_condition(lambda: self.approver is not None)
        return {{"plan": plan, "reply": await write_reply(ticket), "approver": self.approver}}


WORKFLOWS = [SupportAgent]
INTERCEPTOR = PromptInterceptor(WORKFLOWS)
'''


def _source(
    drafter: str = "v1", writer: str = "v1", ticket_arg: str = "ticket", writer_model: str = "", temperature: str = "0.2"
) -> tuple[str, str]:
    prompts = PROMPTS.format(
        drafter=drafter, writer=writer,
        drafter_extra="" if drafter == "v1" else " Think step by step.",
        writer_extra="" if writer == "v1" else " Be brief.",
        writer_model=f', model="{writer_model}", params={{"temperature": {temperature}}}' if writer_model else "",
    )
    return prompts, WORKFLOW.format(ticket_arg=ticket_arg)


def _write(project: Path, **changes: str) -> None:
    prompts, workflow = _source(**changes)
    (project / "support_prompts.py").write_text(prompts, encoding="utf-8")
    (project / "support_workflow.py").write_text(workflow, encoding="utf-8")


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


async def _record(address: str, module: Any, histories: Path, prefix: str = "") -> None:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address, interceptors=[module.INTERCEPTOR])
    queue = f"support-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=[module.call_model]):
        done = await client.start_workflow("SupportAgent", "refund", id=f"{prefix}agent-completed", task_queue=queue)
        waiting = await client.start_workflow("SupportAgent", "refund", id=f"{prefix}agent-waiting", task_queue=queue)
        await done.signal("approve", "ops")
        await done.result()
        # The waiting run has made its first model call and is parked on the signal once its last
        # workflow task after the activity completed.
        for _ in range(200):
            events = [event.event_type for event in (await waiting.fetch_history()).events]
            if EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED in events and events[-1] == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"the waiting run did not reach its signal wait: {events}")
        for handle, name in ((done, "completed"), (waiting, "waiting")):
            (histories / f"{name}.json").write_text((await handle.fetch_history()).to_json(), encoding="utf-8")


def _replay(project: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # edits within seconds at equal sizes: never run stale bytecode
    shutil.rmtree(project / "__pycache__", ignore_errors=True)
    outcome = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "histories", "-w", "support_workflow:WORKFLOWS",
         "--format", "json", *extra],
        cwd=project, capture_output=True, text=True, timeout=180, env=env,
    )
    assert outcome.returncode in (0, 1), outcome.stdout + outcome.stderr
    data = json.loads(outcome.stdout)
    return outcome.returncode, {Path(item["history"]).stem: item for item in data["results"]}


def _impact_prompt_groups(project: Path) -> list[dict[str, Any]]:
    """``replaytest impact``'s prompt groups of the one workflow type, from its json report."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    shutil.rmtree(project / "__pycache__", ignore_errors=True)
    outcome = subprocess.run(
        [sys.executable, "-m", "replaytest", "impact", "-q", "histories", "-w", "support_workflow:WORKFLOWS",
         "--format", "json"],
        cwd=project, capture_output=True, text=True, timeout=180, env=env,
    )
    assert outcome.returncode in (0, 1), outcome.stdout + outcome.stderr
    [workflow] = json.loads(outcome.stdout)["workflows"]
    return list(workflow["prompt_groups"])


def test_prompt_versions_and_inputs_on_a_real_server(dev_server: DevServer, tmp_path: Path) -> None:
    project = tmp_path / "support"
    (project / "histories").mkdir(parents=True)
    _write(project)
    sys.path.insert(0, str(project))
    try:
        module = importlib.import_module("support_workflow")
        asyncio.run(_record(dev_server.address, module, project / "histories"))
    finally:
        sys.path.remove(str(project))
        for name in ("support_workflow", "support_prompts"):
            sys.modules.pop(name, None)

    waiting = json.loads((project / "histories" / "waiting.json").read_text())
    started = waiting["events"][0]["workflowExecutionStartedEventAttributes"]
    assert "replaytest-prompts" in started["header"]["fields"]  # the manifest, written by the client interceptor

    code, results = _replay(project)
    assert code == 0, results
    assert {name: (r["status"], r["warnings"], r["notes"]) for name, r in results.items()} == {
        "completed": ("passed", [], []), "waiting": ("passed", [], []),
    }

    # The prompt used before the wait: the waiting run fails, the completed one warns.
    _write(project, drafter="v2")
    code, results = _replay(project)
    assert code == 1
    waiting_result, completed = results["waiting"], results["completed"]
    assert waiting_result["status"] == "diverged"
    assert waiting_result["divergence"]["kind"] == "prompt-drift"
    assert "now uses prompt version v2 but the history recorded v1" in waiting_result["divergence"]["message"]
    # The run keeps the drafter's recorded result; what it uses next, after the signal, is the writer.
    assert waiting_result["divergence"]["message"].endswith(
        "(this parked run keeps the result of activity 'call_model' recorded under v1; the next prompt it "
        "uses is writer v1, the only one of its prompts no recorded call used)"
    ), waiting_result["divergence"]["message"]
    assert waiting_result["divergence"]["source"]["path"].endswith("support_workflow.py")
    assert completed["status"] == "passed"
    assert [w["kind"] for w in completed["warnings"]][:1] == ["prompt-drift"]
    # Impact: the waiting run already called the drafter (compared with the version that call recorded).
    assert _impact_prompt_groups(project) == [{
        "prompt": "drafter", "from": "v1", "to": "v2", "compared": ["call"],
        "runs": {"not_called": [], "called": ["agent-waiting"]},
        "source": {"path": str(project / "support_workflow.py"), "line": _line(project, "with use_prompt(prompts.DRAFTER)")},
    }]

    # Only the prompt used after the wait: the waiting run fails naming it, the completed one passes.
    _write(project, writer="v2")
    code, results = _replay(project)
    assert code == 1
    assert results["waiting"]["status"] == "diverged"
    assert results["waiting"]["divergence"]["kind"] == "prompt-drift"
    assert "will use writer v2, started under v1" in results["waiting"]["divergence"]["message"]
    assert "drafter" not in results["waiting"]["divergence"]["message"]
    assert results["completed"]["status"] == "passed"
    # Impact: the waiting run has not called the writer yet (compared with its start manifest).
    assert _impact_prompt_groups(project) == [{
        "prompt": "writer", "from": "v1", "to": "v2", "compared": ["manifest"],
        "runs": {"not_called": ["agent-waiting"], "called": []},
        "source": {"path": str(project / "support_workflow.py"), "line": _line(project, "with use_prompt(prompts.WRITER)")},
    }]

    # A changed activity argument: a warning on both, a failure with --strict-args.
    _write(project, ticket_arg="ticket.upper()")
    code, results = _replay(project)
    assert code == 0
    for result in results.values():
        assert result["status"] == "passed"
        assert [w["kind"] for w in result["warnings"]] == ["args-mismatch"]
    code, results = _replay(project, "--strict-args")
    assert code == 1
    for result in results.values():
        assert result["status"] == "diverged"
        assert result["divergence"]["kind"] == "args-mismatch"


def _line(project: Path, code: str) -> int:
    lines = (project / "support_workflow.py").read_text().splitlines()
    return next(number for number, text in enumerate(lines, 1) if code in text)


def _record_project(dev_server: DevServer, project: Path, **changes: str) -> None:
    (project / "histories").mkdir(parents=True)
    _write(project, **changes)
    sys.path.insert(0, str(project))
    try:
        module = importlib.import_module("support_workflow")
        asyncio.run(_record(dev_server.address, module, project / "histories", prefix="model-"))
    finally:
        sys.path.remove(str(project))
        for name in ("support_workflow", "support_prompts"):
            sys.modules.pop(name, None)


def test_a_model_or_temperature_change_is_prompt_drift_on_a_real_server(dev_server: DevServer, tmp_path: Path) -> None:
    """The writer prompt declares its model and temperature: the activity header records them with the version,
    so the completed run (which called the writer) hears which parameter changed, and the waiting run (which
    has not) fails on the model switch its next call would make."""
    project = tmp_path / "support"
    _record_project(dev_server, project, writer_model="gpt-4o-mini", temperature="0.2")
    completed = json.loads((project / "histories" / "completed.json").read_text())
    headers = [
        event["activityTaskScheduledEventAttributes"]["header"]["fields"]["replaytest-prompt"]
        for event in completed["events"] if "activityTaskScheduledEventAttributes" in event
    ]
    assert len(headers) == 2  # drafter and writer, each with its prompt header

    _write(project, writer_model="gpt-4o-mini", temperature="0.2")
    code, results = _replay(project)
    assert code == 0 and all(r["warnings"] == [] for r in results.values()), results

    _write(project, writer_model="gpt-4o-mini", temperature="0.9")
    code, results = _replay(project)
    [warning] = [w for w in results["completed"]["warnings"] if w["kind"] == "prompt-drift"]
    assert warning["message"].endswith("(prompt writer: temperature 0.2 → 0.9)"), warning["message"]
    assert results["waiting"]["status"] == "diverged"
    assert "(parameters now temperature 0.9; the run recorded only their digest " in results["waiting"]["divergence"]["message"]

    _write(project, writer_model="gpt-4.1", temperature="0.2")
    code, results = _replay(project)
    assert code == 1
    [warning] = [w for w in results["completed"]["warnings"] if w["kind"] == "prompt-drift"]
    assert warning["message"].endswith("(prompt writer: model gpt-4o-mini → gpt-4.1)"), warning["message"]
    waiting = results["waiting"]["divergence"]
    assert waiting["kind"] == "prompt-drift" and "(model gpt-4o-mini → gpt-4.1)" in waiting["message"], waiting


NOTE_WORKFLOW = '''"""An agent whose drafting activity records its prompt and whose follow-up activity sends a registry
text to a (fake) chat model with no Prompt: nothing records what it sent."""

from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from replaytest.plugins.temporal.prompts import PromptInterceptor, use_prompt
    from replaytest.prompts import Prompt

DRAFTER = Prompt("drafter", "Draft a plan for: {ticket}", version="v1")
MODEL = FakeListChatModel(responses=["ok"])
REGISTRY = {"acme/follow-up": "Ask whether {ticket} is solved"}
_TIMEOUT = timedelta(seconds=10)


@activity.defn
async def call_model(text: str) -> str:
    return "model: " + text


@activity.defn
async def follow_up(ticket: str) -> str:
    text = REGISTRY["acme/follow-up"].format(ticket=ticket)
    return str(MODEL.invoke(text).content)


@workflow.defn(name="NoteAgent")
class NoteAgent:
    @workflow.run
    async def run(self, ticket: str) -> str:
        with use_prompt(DRAFTER):
            plan = await workflow.execute_activity(call_model, DRAFTER.render(ticket=ticket), start_to_close_timeout=_TIMEOUT)
        return plan + await workflow.execute_activity(follow_up, ticket, start_to_close_timeout=_TIMEOUT)


WORKFLOWS = [NoteAgent]
INTERCEPTOR = PromptInterceptor(WORKFLOWS)
'''


def test_an_activity_that_calls_a_model_and_recorded_no_prompt_is_named_in_a_note(dev_server: DevServer, tmp_path: Path) -> None:
    from temporalio.client import Client
    from temporalio.worker import Worker

    project = tmp_path / "notes"
    (project / "histories").mkdir(parents=True)
    (project / "note_workflow.py").write_text(NOTE_WORKFLOW, encoding="utf-8")

    async def record(module: Any) -> None:
        client = await Client.connect(dev_server.address, interceptors=[module.INTERCEPTOR])
        queue = f"notes-{uuid.uuid4()}"
        async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=[module.call_model, module.follow_up]):
            handle = await client.start_workflow("NoteAgent", "refund", id="note-agent", task_queue=queue)
            assert await handle.result() == "model: Draft a plan for: refundok"
            (project / "histories" / "note.json").write_text((await handle.fetch_history()).to_json(), encoding="utf-8")

    sys.path.insert(0, str(project))
    try:
        asyncio.run(record(importlib.import_module("note_workflow")))
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("note_workflow", None)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    outcome = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "histories", "-w", "note_workflow:WORKFLOWS", "--format", "json"],
        cwd=project, capture_output=True, text=True, timeout=180, env=env,
    )
    [result] = json.loads(outcome.stdout)["results"]
    assert result["status"] == "passed", result
    lines = NOTE_WORKFLOW.splitlines()
    line = next(number for number, text in enumerate(lines, 1) if "return str(MODEL.invoke(text).content)" in text)
    from replaytest.replay.engine import UNRECORDED_MODEL_CALL_NOTE

    expected = UNRECORDED_MODEL_CALL_NOTE.format(what="activity 'follow_up'", site=f"MODEL.invoke at note_workflow.py:{line}")
    # Only the activity with no prompt header: call_model recorded DRAFTER.
    assert [note for note in result["notes"] if "recorded no prompt version:" in note] == [expected]


FETCH_WORKFLOW = '''"""An agent whose activities render prompts fetched from a registry at run time (Prompt.fetched inside the
activity): triage before an approval signal, closing after it."""

from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from replaytest.plugins.temporal.prompts import PromptInterceptor
    from replaytest.prompts import Prompt

REGISTRY = {"acme/triage": "Sort: {ticket}", "acme/closing": "Close politely: {ticket}"}
_TIMEOUT = timedelta(seconds=10)


@activity.defn
async def triage(ticket: str) -> str:
    prompt = Prompt.fetched("triage", REGISTRY["acme/triage"], source="hub:acme/triage")
    return prompt.render(ticket=ticket)


@activity.defn
async def closing(ticket: str) -> str:
    prompt = Prompt.fetched("closing", REGISTRY["acme/closing"], source="hub:acme/closing")  # [fetched]
    return prompt.render(ticket=ticket)


@workflow.defn(name="FetchAgent")
class FetchAgent:
    def __init__(self) -> None:
        self.approved = False

    @workflow.signal
    def approve(self) -> None:
        self.approved = True

    @workflow.run
    async def run(self, ticket: str) -> str:
        sorted_ = await workflow.execute_activity(triage, ticket, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.approved)
        return sorted_ + await workflow.execute_activity(closing, ticket, start_to_close_timeout=_TIMEOUT)


WORKFLOWS = [FetchAgent]
INTERCEPTOR = PromptInterceptor(WORKFLOWS)
'''


def test_a_parked_run_whose_next_activity_fetches_its_prompt_gets_a_note(dev_server: DevServer, tmp_path: Path) -> None:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    from replaytest.prompts import FETCHED_IN_ACTIVITY, fetched_ahead_note

    project = tmp_path / "fetch"
    (project / "histories").mkdir(parents=True)
    (project / "fetch_workflow.py").write_text(FETCH_WORKFLOW, encoding="utf-8")

    async def record(module: Any) -> None:
        client = await Client.connect(dev_server.address, interceptors=[module.INTERCEPTOR])
        queue = f"fetch-{uuid.uuid4()}"
        async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=[module.triage, module.closing]):
            done = await client.start_workflow("FetchAgent", "refund", id="fetch-completed", task_queue=queue)
            parked = await client.start_workflow("FetchAgent", "refund", id="fetch-parked", task_queue=queue)
            await done.signal("approve")
            assert await done.result() == "Sort: refundClose politely: refund"
            for _ in range(200):  # parked once triage completed and the task after it did
                events = [event.event_type for event in (await parked.fetch_history()).events]
                if EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED in events and events[-1] == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"the parked run did not reach its signal wait: {events}")
            for handle, name in ((done, "completed"), (parked, "parked")):
                (project / "histories" / f"{name}.json").write_text((await handle.fetch_history()).to_json(), encoding="utf-8")

    sys.path.insert(0, str(project))
    try:
        asyncio.run(record(importlib.import_module("fetch_workflow")))
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("fetch_workflow", None)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    outcome = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "histories", "-w", "fetch_workflow:WORKFLOWS", "--format", "json"],
        cwd=project, capture_output=True, text=True, timeout=180, env=env,
    )
    results = {Path(item["history"]).stem: item for item in json.loads(outcome.stdout)["results"]}
    assert {name: item["status"] for name, item in results.items()} == {"completed": "passed", "parked": "passed"}, results
    line = next(number for number, text in enumerate(FETCH_WORKFLOW.splitlines(), 1) if text.endswith("# [fetched]"))
    expected = fetched_ahead_note("activity 'closing'", ("fetch_workflow.py", line), "parked", recorded=FETCHED_IN_ACTIVITY)
    # Only the activity the parked run has still to run; the completed run has none left.
    assert [note for note in results["parked"]["notes"] if "compare offline" in note] == [expected]
    assert [note for note in results["completed"]["notes"] if "compare offline" in note] == []
