"""Nexus operations against a real dev server: ``temporal_wf_nexus_call.Quote`` sleeps, calls the Nexus
operation ``Pricing.price`` through an endpoint created on the server (``temporal operator nexus endpoint
create``, targeting the worker's task queue, whose synchronous handler answers) and sleeps again. Its history is
replayed by replaytest and by temporalio's own ``Replayer`` against the recording code and changed versions
of it: the verdicts must agree, and each divergence names its kind, both sides and the line of
``temporal_wf_nexus_call.py`` that issued the command. Replay runs no Nexus handler (the handler counts its
calls). sdk-core compares an operation's service and name (from temporalio 1.35 on), not its input: a changed
input replays green."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
import temporal_wf_nexus_call as nexus_call
from temporal_devserver import running_dev_server

from replaytest.replay.report import render_text

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

SOURCE = Path(nexus_call.__file__)


def line_in(cls: type, text: str) -> int:
    lines, first = inspect.getsourcelines(cls)
    return first + next(n for n, line in enumerate(lines) if text in line)


@pytest.fixture(scope="module")
def quote_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("temporal-nexus")
    with running_dev_server(folder) as server:
        queue = f"quote-{uuid.uuid4()}"
        created = subprocess.run(
            [server.cli, "operator", "nexus", "endpoint", "create", "--address", server.address,
             "--name", nexus_call.ENDPOINT, "--target-namespace", "default", "--target-task-queue", queue],
            capture_output=True, text=True, timeout=60,
        )
        assert created.returncode == 0, created.stderr
        text = asyncio.run(_record(server.address, queue))
    path = folder / "quote.json"
    path.write_text(text, encoding="utf-8")
    yield path


async def _record(address: str, queue: str) -> str:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=[nexus_call.Quote],
                      nexus_service_handlers=[nexus_call.PricingHandler()]):
        handle = await client.start_workflow("Quote", "bolt", id=f"quote-{uuid.uuid4()}", task_queue=queue)
        assert await handle.result() == 40
        return (await handle.fetch_history()).to_json()


def _temporalio_version() -> tuple[int, ...]:
    return tuple(int(part) for part in version("temporalio").split(".")[:2])


def _agreed(replay, sdk_verdict, path: Path, workflow: type, expected: str):  # type: ignore[no-untyped-def]
    assert sdk_verdict(path, workflow) == expected
    result = replay(path, workflow)
    assert result.status == expected, render_text(result)
    return result


def _diverged(replay, sdk_verdict, path: Path, workflow: type):  # type: ignore[no-untyped-def]
    divergence = _agreed(replay, sdk_verdict, path, workflow, "diverged").divergence
    assert divergence.kind == "command-mismatch", divergence.message
    assert divergence.source is not None and Path(divergence.source.path).name == SOURCE.name, divergence.message
    return divergence


def test_the_recording_code_replays_green_and_runs_no_nexus_handler(replay, sdk_verdict, quote_history):
    handled = len(nexus_call.HANDLED)
    assert handled == 1  # the recording called it once
    _agreed(replay, sdk_verdict, quote_history, nexus_call.Quote, "passed")
    assert len(nexus_call.HANDLED) == handled


def test_a_renamed_nexus_operation_is_named_at_its_line(replay, sdk_verdict, quote_history):
    """sdk-core compares a Nexus operation's service and name from temporalio 1.35 on; before, it matched the
    command by position only, and the renamed operation replays green there, as the SDK's Replayer says."""
    if _temporalio_version() < (1, 35):
        _agreed(replay, sdk_verdict, quote_history, nexus_call.QuoteOtherOperation, "passed")
        return
    divergence = _diverged(replay, sdk_verdict, quote_history, nexus_call.QuoteOtherOperation)
    assert divergence.recorded.kind == "nexus-operation" and divergence.recorded.name == "Pricing.price"
    assert divergence.issued.kind == "nexus-operation" and divergence.issued.name == "Pricing.discount"
    assert divergence.position == divergence.recorded.position
    assert divergence.source.line == line_in(nexus_call.QuoteOtherOperation, "execute_operation")


def test_a_dropped_nexus_operation_is_named_at_the_timer_in_its_place(replay, sdk_verdict, quote_history):
    divergence = _diverged(replay, sdk_verdict, quote_history, nexus_call.QuoteWithoutOperation)
    assert divergence.recorded.kind == "nexus-operation" and divergence.issued.kind == "timer"
    lines, first = inspect.getsourcelines(nexus_call.QuoteWithoutOperation)
    assert divergence.source.line == first + [n for n, line in enumerate(lines) if "sleep" in line][1]


def test_a_nexus_operation_moved_before_the_timer_is_named_at_its_line(replay, sdk_verdict, quote_history):
    divergence = _diverged(replay, sdk_verdict, quote_history, nexus_call.QuoteOperationFirst)
    assert divergence.recorded.kind == "timer"
    assert divergence.issued.kind == "nexus-operation" and divergence.issued.name == "Pricing.price"
    assert divergence.source.line == line_in(nexus_call.QuoteOperationFirst, "execute_operation")


def test_a_changed_nexus_operation_input_replays_green_as_the_sdk_says(replay, sdk_verdict, quote_history):
    _agreed(replay, sdk_verdict, quote_history, nexus_call.QuoteOtherInput, "passed")
