"""External signals, cancelling an external workflow and continue-as-new against a real dev server:
``temporal_wf_courier.Dispatch`` waits on a timer, signals a ``Parcel`` workflow and continues as new once;
``Recall`` cancels another parcel. The first Dispatch run's history (ending in continue-as-new), the
second's (completed) and Recall's are replayed against the recording code and changed versions of it. Each divergence names its kind, both sides and the line of ``temporal_wf_courier.py`` that issued
the command (found here by its text)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import temporal_wf_courier as courier
from temporal_devserver import running_dev_server

from replaytest.replay.report import render_text

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

SOURCE = Path(courier.__file__)


def line_of(text: str, occurrence: int = 0) -> int:
    lines = [n for n, line in enumerate(SOURCE.read_text(encoding="utf-8").splitlines(), start=1) if text in line]
    return lines[occurrence]


@pytest.fixture(scope="module")
def dispatch_histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    folder = tmp_path_factory.mktemp("temporal-courier")
    with running_dev_server(folder) as server:
        recorded = asyncio.run(_record(server.address))
        paths = folder / "first.json", folder / "second.json", folder / "recall.json"
        for path, text in zip(paths, recorded):
            path.write_text(text, encoding="utf-8")
        yield paths


async def _record(address: str) -> tuple[str, str, str]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"courier-{uuid.uuid4()}"
    parcel_id = f"parcel-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[courier.Parcel, courier.Dispatch, courier.Recall]):
        parcel = await client.start_workflow("Parcel", id=parcel_id, task_queue=queue)
        handle = await client.start_workflow("Dispatch", {"parcel": parcel_id, "round": 0}, id=f"dispatch-{uuid.uuid4()}",
                                             task_queue=queue)
        assert await handle.result() == "dispatched 2 rounds"
        assert await parcel.result() == "collected after round 0, round 1"
        first = await client.get_workflow_handle(handle.id, run_id=handle.result_run_id).fetch_history()
        second = await client.get_workflow_handle(handle.id).fetch_history()
        recalled = await client.start_workflow("Parcel", id=f"parcel-{uuid.uuid4()}", task_queue=queue)
        recall = await client.start_workflow("Recall", recalled.id, id=f"recall-{uuid.uuid4()}", task_queue=queue)
        assert await recall.result() == "recalled"
        return first.to_json(), second.to_json(), (await recall.fetch_history()).to_json()


def test_every_run_replays_green_on_the_recording_code(replay, dispatch_histories):
    for path, workflow in zip(dispatch_histories, (courier.Dispatch, courier.Dispatch, courier.Recall)):
        result = replay(path, workflow)
        assert result.status == "passed", render_text(result)


def _diverged(replay, path: Path, workflow):  # type: ignore[no-untyped-def]
    result = replay(path, workflow)
    assert result.status == "diverged", render_text(result)
    divergence = result.divergence
    assert divergence.source is not None and Path(divergence.source.path).name == SOURCE.name, divergence.message
    return divergence


def test_a_renamed_external_signal_is_named_at_its_line(replay, dispatch_histories):
    divergence = _diverged(replay, dispatch_histories[0], courier.DispatchSignalRenamed)
    assert divergence.source.line == line_of('signal("parcel_sent"')
    assert "parcel_sent" in divergence.message or (divergence.issued and divergence.issued.name == "parcel_sent"), divergence.message


def test_an_external_signal_moved_before_the_timer_is_named_at_its_line(replay, dispatch_histories):
    divergence = _diverged(replay, dispatch_histories[0], courier.DispatchSignalFirst)
    assert divergence.kind == "command-mismatch"
    assert divergence.recorded.kind == "timer"
    assert divergence.source.line == line_of('signal("parcel_ready"', occurrence=1)


def test_dropping_continue_as_new_is_a_divergence_at_the_recorded_event(replay, dispatch_histories):
    """The workflow now completes where the history continued as new. The completion is a command temporalio
    adds after the run returned, so no line of workflow code issued it: the divergence names the event."""
    result = replay(dispatch_histories[0], courier.DispatchWithoutContinueAsNew)
    assert result.status == "diverged", render_text(result)
    assert "continued as new, the code now completes the workflow" in result.divergence.message
    assert result.divergence.recorded is not None and result.divergence.recorded.kind == "continue-as-new"


def test_the_continued_run_is_checked_on_its_own_history(replay, dispatch_histories):
    """The second run signals once more after its round: the completed history recorded no such command."""
    divergence = _diverged(replay, dispatch_histories[1], courier.DispatchExtraSignal)
    assert divergence.source.line == line_of('signal("parcel_ready", "done")')


def test_a_cancel_of_an_external_workflow_replaced_by_a_timer_is_named_at_the_timer(replay, dispatch_histories):
    divergence = _diverged(replay, dispatch_histories[2], courier.RecallWaitsInstead)
    assert divergence.kind == "command-mismatch", divergence.message
    assert divergence.issued is not None and divergence.issued.kind == "timer", divergence.message
    assert divergence.source.line == line_of("await workflow.sleep(0.05)", occurrence=-1)  # the last class, RecallWaitsInstead
