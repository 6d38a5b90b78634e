"""Patch retirement on Temporal, with real runs on a dev server replayed by the real Replayer.

Deploy 1 (``InsuranceClaimBefore``) leaves two claims waiting for the adjuster, past the point where
deploy 2 (``InsuranceClaim``) screens for fraud behind ``workflow.patched("fraud-screen")``; deploy 2
runs a claim to completion (its history records the marker). The waiting claims need the old branch
until the adjuster decides them and they complete under deploy 2."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import impact_patches_claims_wf as claims
import pytest
from impact_patches_claims_activities import ACTIVITIES
from temporal_devserver import DevServer, running_dev_server

from replaytest.impact.report import verdict_text
from replaytest.impact.retirement import attach_patches
from replaytest.plugins.temporal.replayer import TemporalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult

SOURCE = Path(claims.__file__).resolve()
GUARD_LINE = next(n for n, line in enumerate(SOURCE.read_text().splitlines(), 1) if line.endswith("# [fraud-screen]"))

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


@pytest.fixture(scope="module")
def replayer() -> Iterator[TemporalReplayer]:
    replayer = TemporalReplayer()
    yield replayer
    replayer.close()


async def _until_parked(handle, timeout_s: float = 30.0) -> None:
    """Until the run's second workflow task completed: the assessment is in and it waits for the adjuster."""
    from temporalio.api.enums.v1 import EventType

    for _ in range(int(timeout_s / 0.1)):
        history = await handle.fetch_history()
        completed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
        if len(completed) >= 2:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{handle.id} did not reach the adjuster's decision in {timeout_s} s")


async def _save(handles, folder: Path) -> list[Path]:
    paths = []
    for handle in handles:
        path = folder / f"{handle.id}.json"
        path.write_text((await handle.fetch_history()).to_json(), encoding="utf-8")
        paths.append(path)
    return paths


def _replay(replayer: TemporalReplayer, paths: list[Path]) -> list[ReplayResult]:
    workflows = WorkflowSet((claims.InsuranceClaim,))
    results = [replayer.replay(path, workflows, ReplayOptions()) for path in paths]
    assert [(r.status, r.error) for r in results] == [("passed", None)] * len(paths), [r.divergence for r in results]
    return results


def _use(results: list[ReplayResult]):
    impacts = attach_patches([], results, [SOURCE])
    assert [(i.workflow_type, i.engine, i.notes) for i in impacts] == [("InsuranceClaim", "temporal", [])]
    [use] = impacts[0].patches
    assert (use.patch_id, use.path, use.line, use.deprecated) == ("fraud-screen", SOURCE, GUARD_LINE, False)
    return use


def _ids(results: list[ReplayResult]) -> list[str | None]:
    return [result.workflow_id for result in results]


def test_parked_claims_keep_the_fraud_screen_guard_until_they_complete(
    dev_server: DevServer, replayer: TemporalReplayer, tmp_path: Path
) -> None:
    from temporalio.client import Client
    from temporalio.worker import Worker

    queue = f"claims-{uuid.uuid4()}"
    tag = uuid.uuid4().hex[:8]
    first, second, fresh = f"claim-a-{tag}", f"claim-b-{tag}", f"claim-c-{tag}"

    async def deploy_one_then_two() -> list[Path]:
        client = await Client.connect(dev_server.address)
        async with Worker(client, task_queue=queue, workflows=[claims.InsuranceClaimBefore], activities=ACTIVITIES):
            older = await client.start_workflow("InsuranceClaim", {"id": first, "damage": 1200.0}, id=first, task_queue=queue)
            await _until_parked(older)
            newer = await client.start_workflow("InsuranceClaim", {"id": second, "damage": 800.0}, id=second, task_queue=queue)
            await _until_parked(newer)
        async with Worker(client, task_queue=queue, workflows=[claims.InsuranceClaim], activities=ACTIVITIES):
            marked = await client.start_workflow("InsuranceClaim", {"id": fresh, "damage": 300.0}, id=fresh, task_queue=queue)
            await _until_parked(marked)
            await marked.signal("adjuster_decision", True)
            assert await marked.result() == f"paid 270.00 on {fresh}"
        # Newest first on disk order: the report must still list the older claim first.
        return await _save([newer, older, marked], tmp_path)

    paths = asyncio.run(deploy_one_then_two())
    results = _replay(replayer, paths)
    assert [(r.workflow_id, r.run_status) for r in results] == [(second, "parked"), (first, "parked"), (fresh, "completed")]
    # What each replay decided at the guard: the parked claims took the old branch, the fresh one the new.
    assert [[(d.patch_id, d.taken, d.source.line if d.source else None) for d in r.patch_decisions] for r in results] == [
        [("fraud-screen", False, GUARD_LINE)], [("fraud-screen", False, GUARD_LINE)], [("fraud-screen", True, GUARD_LINE)]
    ]
    use = _use(results)
    assert use.verdict == "still-needed"
    assert _ids(use.needed_by) == [first, second]  # oldest first, by the recorded start time
    assert _ids(use.marked_by) == [fresh]

    async def adjuster_decides() -> list[Path]:
        client = await Client.connect(dev_server.address)
        async with Worker(client, task_queue=queue, workflows=[claims.InsuranceClaim], activities=ACTIVITIES):
            handles = [client.get_workflow_handle(run_id) for run_id in (first, second)]
            for handle in handles:
                await handle.signal("adjuster_decision", True)
            assert [await handle.result() for handle in handles] == [f"paid 1080.00 on {first}", f"paid 720.00 on {second}"]
        return await _save([client.get_workflow_handle(run_id) for run_id in (first, second, fresh)], tmp_path)

    paths = asyncio.run(adjuster_decides())
    results = _replay(replayer, paths)
    use = _use(results)
    # Completed on the old branch: no in-flight run needs it, but their retained histories replay it.
    assert (use.verdict, use.needed_by, _ids(use.marked_by), _ids(use.replayed_old_by)) == (
        "still-needed", [], [fresh], [first, second])
    # Without them, only the history that recorded the marker holds the call: deprecate it.
    use = _use(results[2:])
    assert (use.verdict, use.needed_by, _ids(use.marked_by), use.replayed_old_by) == ("deprecate-now", [], [fresh], [])


def test_a_deprecated_guard_is_kept_while_retained_histories_record_its_marker(
    dev_server: DevServer, replayer: TemporalReplayer, tmp_path: Path
) -> None:
    """Once the guard is a ``deprecate_patch``, the verdict does not ask to deprecate it again: it is kept
    while retained histories hold the marker, because the engine's Replayer needs the call for them."""
    import impact_patches_claims_deprecated_wf as deprecated
    from temporalio.client import Client
    from temporalio.worker import Worker

    source = Path(deprecated.__file__).resolve()
    queue = f"claims-{uuid.uuid4()}"
    tag = uuid.uuid4().hex[:8]
    done, parked = f"claim-d-{tag}", f"claim-e-{tag}"

    async def deploy_two() -> list[Path]:
        client = await Client.connect(dev_server.address)
        async with Worker(client, task_queue=queue, workflows=[claims.InsuranceClaim], activities=ACTIVITIES):
            finished = await client.start_workflow("InsuranceClaim", {"id": done, "damage": 300.0}, id=done, task_queue=queue)
            await _until_parked(finished)
            await finished.signal("adjuster_decision", True)
            assert await finished.result() == f"paid 270.00 on {done}"
            waiting = await client.start_workflow("InsuranceClaim", {"id": parked, "damage": 500.0}, id=parked, task_queue=queue)
            await _until_parked(waiting)
        return await _save([finished, waiting], tmp_path)

    paths = asyncio.run(deploy_two())
    results = [replayer.replay(path, WorkflowSet((deprecated.InsuranceClaimDeprecated,)), ReplayOptions()) for path in paths]
    assert [(r.status, r.error) for r in results] == [("passed", None)] * 2, [r.divergence for r in results]
    impacts = attach_patches([], results, [source])
    [use] = impacts[0].patches
    assert (use.patch_id, use.deprecated, use.verdict, _ids(use.marked_by)) == ("fraud-screen", True, "deprecate-now", [done, parked])
    assert verdict_text(use) == ("already deprecated: keep it while retained histories record the marker (2 retained "
                                 "histories record the marker); remove it once none does")

    # The engine agrees it is still needed: without the call, its Replayer refuses both histories.
    unguarded = WorkflowSet((deprecated.InsuranceClaimUnguarded,))
    assert [replayer.replay(path, unguarded, ReplayOptions()).status for path in paths] == ["diverged", "diverged"]

    async def resume_on_the_deprecated_code() -> str:
        client = await Client.connect(dev_server.address)
        async with Worker(client, task_queue=queue, workflows=[deprecated.InsuranceClaimDeprecated], activities=ACTIVITIES):
            handle = client.get_workflow_handle(parked)
            await handle.signal("adjuster_decision", True)
            return await handle.result()

    assert asyncio.run(resume_on_the_deprecated_code()) == f"paid 450.00 on {parked}"

