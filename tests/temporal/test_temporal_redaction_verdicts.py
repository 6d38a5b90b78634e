"""Redacted Temporal histories replay as the recorded ones do (``redaction_kit``): runs of a desk recorded on
a real Temporal dev server, fetched as the server gives them, redacted by ``replaytest redact``, and both
replayed against the unchanged desk and changed ones. The runs hold an e-mail and an API key redaction
rewrites, a random id from the workflow's seeded ``workflow.uuid4()`` and a ``uuid4`` token from an
activity, both passed on to a later activity; one run completes, one waits for a signal."""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from redaction_kit import assert_same_verdicts, redact, redacted_paths
from temporal_devserver import DevServer, running_dev_server

from replaytest.plugins.temporal.replayer import TemporalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

DESK = '''"""A desk whose runs hold contact data and random ids."""

import uuid
from datetime import timedelta

from temporalio import activity, workflow

_TIMEOUT = timedelta(seconds=10)


@activity.defn
async def new_token() -> str:
    return uuid.uuid4().hex


@activity.defn
async def load_profile(customer: str) -> dict:
    return {"email": customer + "@example.com", "api_key": "sk-live-0123456789abcdefXYZ", "tier": "gold"}


@activity.defn
async def open_case(reference: str, token: str, email: str) -> dict:
    return {"case": "C-" + reference[:8], "contact": email, "token": token}


@activity.defn
async def close_case(case: str) -> str:
    return "closed " + case


@workflow.defn(name="RedactionDesk")
class RedactionDesk:
    def __init__(self) -> None:
        self.approved = False

    @workflow.signal
    def approve(self) -> None:
        self.approved = True

    @workflow.run
    async def run(self, ticket: dict) -> dict:
        reference = str(workflow.uuid4())
        token = await workflow.execute_activity(new_token, start_to_close_timeout=_TIMEOUT)
        profile = await workflow.execute_activity(load_profile, ticket["customer"], start_to_close_timeout=_TIMEOUT)
        case = await workflow.execute_activity(
            open_case, args=[reference, token, profile["email"]], start_to_close_timeout=_TIMEOUT
        )
        if ticket.get("needs_approval"):
            await workflow.wait_condition(lambda: self.approved)
        closed = await workflow.execute_activity(close_case, case["case"], start_to_close_timeout=_TIMEOUT)
        return {"reference": reference, "case": case["case"], "closed": closed, "contact": profile["email"]}


ACTIVITIES = [new_token, load_profile, open_case, close_case]
'''

SWAPPED = (
    '        token = await workflow.execute_activity(new_token, start_to_close_timeout=_TIMEOUT)\n'
    '        profile = await workflow.execute_activity(load_profile, ticket["customer"], start_to_close_timeout=_TIMEOUT)\n',
    '        profile = await workflow.execute_activity(load_profile, ticket["customer"], start_to_close_timeout=_TIMEOUT)\n'
    '        token = await workflow.execute_activity(new_token, start_to_close_timeout=_TIMEOUT)\n',
)
DRAWN = ("        reference = str(workflow.uuid4())\n", "        workflow.uuid4()\n        reference = str(workflow.uuid4())\n")


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


async def _record(address: str, module: ModuleType, histories: Path) -> list[Path]:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"desk-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[module.RedactionDesk], activities=module.ACTIVITIES):
        done = await client.start_workflow("RedactionDesk", {"customer": "ann"}, id="desk-done", task_queue=queue)
        waiting = await client.start_workflow(
            "RedactionDesk", {"customer": "bob", "needs_approval": True}, id="desk-waiting", task_queue=queue
        )
        await done.result()
        for _ in range(400):
            events = [event.event_type for event in (await waiting.fetch_history()).events]
            if events.count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) == 3 and events[-1] == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"the waiting run did not reach its signal wait: {events}")
        paths = []
        for handle, name in ((done, "done"), (waiting, "waiting")):
            path = histories / f"desk-{name}.json"
            path.write_text((await handle.fetch_history()).to_json(), encoding="utf-8")
            paths.append(path)
        return paths


def _payload_text(path: Path) -> str:
    """Every payload's data of a Temporal history JSON, decoded (the file keeps it in base64)."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            data = value.get("data")
            if isinstance(data, str) and isinstance(value.get("metadata"), dict):
                found.append(base64.b64decode(data).decode("utf-8", "replace"))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(path.read_text(encoding="utf-8")))
    return "\n".join(found)


def _module(project: Path, name: str, source: str) -> ModuleType:
    (project / f"{name}.py").write_text(source, encoding="utf-8")
    return importlib.import_module(name)


def test_redacted_temporal_histories_replay_as_the_recorded_ones(dev_server: DevServer, tmp_path: Path) -> None:
    project = tmp_path / "desk"
    (project / "histories").mkdir(parents=True)
    sys.path.insert(0, str(project))  # the sandbox re-imports a workflow's module by its name
    names = ("temporal_redaction_desk", "temporal_redaction_desk_swapped", "temporal_redaction_desk_drawn")
    replayers: list[TemporalReplayer] = []
    try:
        desk = _module(project, names[0], DESK)
        swapped = _module(project, names[1], DESK.replace(*SWAPPED))
        drawn = _module(project, names[2], DESK.replace(*DRAWN))
        recorded = asyncio.run(_record(dev_server.address, desk, project / "histories"))
        assert all("sk-live-0123456789abcdefXYZ" in _payload_text(path) for path in recorded)
        redacted = redact(recorded, tmp_path / "clean" / "histories")
        assert all(paths for paths in redacted_paths(redacted).values()), redacted_paths(redacted)
        assert not any("sk-live-0123456789abcdefXYZ" in _payload_text(path) for path in redacted)

        def replaying(module: ModuleType, strict_args: bool = False):  # type: ignore[no-untyped-def]
            fresh = TemporalReplayer()
            replayers.append(fresh)
            options = ReplayOptions(strict_args=strict_args)
            return lambda path: fresh.replay(path, WorkflowSet((module.RedactionDesk,)), options)

        unchanged = assert_same_verdicts(recorded, redacted, replaying(desk))
        assert [verdict[0] for verdict in unchanged] == ["passed", "passed"], unchanged
        changed = assert_same_verdicts(recorded, redacted, replaying(swapped))
        assert [verdict[0] for verdict in changed] == ["diverged", "diverged"], changed
        # One more seeded uuid drawn: the reference passed to open_case changes, in both alike. Temporal does not
        # compare activity inputs (both pass); with strict-args replaytest does (both diverge there).
        by_draw = assert_same_verdicts(recorded, redacted, replaying(drawn))
        assert [verdict[0] for verdict in by_draw] == ["passed", "passed"], by_draw
        strict = assert_same_verdicts(recorded, redacted, replaying(drawn, strict_args=True))
        assert [(verdict[0], verdict[3][:2]) for verdict in strict] == [("diverged", ("args-mismatch", 17))] * 2, strict
        assert [verdict[0] for verdict in assert_same_verdicts(recorded, redacted, replaying(desk, strict_args=True))] == ["passed"] * 2
    finally:
        for replayer in replayers:
            replayer.close()
        sys.path.remove(str(project))
        for name in names:
            sys.modules.pop(name, None)
