"""``replaytest import temporal`` against a real dev server: workflow ids that differ only in characters
unsafe in file names get files of their own, and a file of another run is refused, never replaced."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_devserver import DevServer, running_dev_server

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]
IDS = ("refund/1", "refund:1")


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


async def _run_refunds(address: str) -> dict[str, str]:
    """Run ``refund/1`` and ``refund:1`` to completion; their run ids by workflow id."""
    from temporal_wf_refunds import RefundOrder, price_refund
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"refunds-{uuid.uuid4()}"
    run_ids = {}
    async with Worker(client, task_queue=queue, workflows=[RefundOrder], activities=[price_refund]):
        for workflow_id, reason in zip(IDS, ("damaged", "changed-mind")):
            handle = await client.start_workflow(RefundOrder.run, args=[workflow_id, reason], id=workflow_id, task_queue=queue)
            await handle.result()
            run_ids[workflow_id] = handle.result_run_id
    for _ in range(100):
        if (await client.count_workflows("WorkflowType='RefundOrder'")).count >= len(IDS):
            break
        await asyncio.sleep(0.1)
    return run_ids


def _expected_name(workflow_id: str, run_id: str) -> str:
    """The documented rule: unsafe characters become ``_``, then ``-`` and 12 hex digits of the SHA-256 of
    the exact ids joined by NUL."""
    digest = hashlib.sha256(f"{workflow_id}\0{run_id}".encode()).hexdigest()[:12]
    return f"refund_1_{run_id}-{digest}.json"


def _import(address: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "temporal", "--address", address, "--query",
         "WorkflowType='RefundOrder'", "--out", str(out), "--no-redact", "--quiet"],
        capture_output=True, text=True, timeout=120,
    )


def test_two_ids_with_one_safe_spelling_get_two_files_and_another_runs_file_is_kept(dev_server: DevServer, tmp_path: Path) -> None:
    run_ids = asyncio.run(_run_refunds(dev_server.address))
    out = tmp_path / "histories"
    imported = _import(dev_server.address, out)
    assert imported.returncode == 0, imported.stderr
    assert f"imported 2 histories into {out} (not redacted)" in imported.stdout
    names = {workflow_id: _expected_name(workflow_id, run_ids[workflow_id]) for workflow_id in IDS}
    assert sorted(p.name for p in out.glob("*.json")) == sorted(names.values())
    for workflow_id, name in names.items():
        started = json.loads((out / name).read_text())["events"][0]["workflowExecutionStartedEventAttributes"]
        assert started["workflowId"] == workflow_id

    # refund:1's file now holds refund/1's run (as if copied there): the re-import keeps it and says so.
    taken = out / names["refund:1"]
    taken.write_text((out / names["refund/1"]).read_text())
    before = taken.read_bytes()
    # A link planted under the name an older importer wrote through first: never followed.
    outside = tmp_path / "notes.txt"
    outside.write_text("keep me\n")
    (out / (names["refund/1"] + ".partial")).symlink_to(outside)
    again = _import(dev_server.address, out)
    assert again.returncode == 2
    assert (
        f"refused: {taken}: workflow 'refund:1' run {run_ids['refund:1']} was not written: the file holds workflow "
        f"'refund/1' run {run_ids['refund/1']} from an earlier import; move that file away or import into another "
        "folder (--out)"
    ) in again.stderr, again.stderr
    assert f"imported 1 history into {out} (not redacted); 1 run(s) refused" in again.stdout
    assert taken.read_bytes() == before
    assert outside.read_text() == "keep me\n"
    assert json.loads((out / names["refund/1"]).read_text())["events"][0]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"
