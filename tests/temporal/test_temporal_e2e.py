"""End to end against a real Temporal dev server: run workflows with a real worker, import their
histories with ``replaytest import temporal``, change the code, and replay through pytest.

The project under test is written into a temporary folder (``shop_workflows.py`` plus a pytest.ini
with ``replay_paths``/``replay_workflows``), so each change is a real edit of the source that a
separate ``python -m pytest`` run then replays the imported histories against.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from temporal_devserver import DevServer, running_dev_server

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

ORIGINAL = '''"""Shop workflows: reserve the item, wait a moment, charge."""

import asyncio
from datetime import datetime, timedelta

from temporalio import activity, workflow


@activity.defn
async def reserve(order: dict) -> str:
    return f"reserved {order['item']}"


@activity.defn
async def charge(receipt: str) -> str:
    return f"charged for {receipt}"


@workflow.defn(name="ShopOrder")
class ShopOrder:
    @workflow.run
    async def run(self, order: dict) -> str:
        receipt = await workflow.execute_activity(reserve, order, start_to_close_timeout=timedelta(seconds=10))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(charge, receipt, start_to_close_timeout=timedelta(seconds=10))


WORKFLOWS = [ShopOrder]
'''

RESERVE = "        receipt = await workflow.execute_activity(reserve, order, start_to_close_timeout=timedelta(seconds=10))\n"
SLEEP = "        await asyncio.sleep(0.05)\n"

# Each change: (name, edit of the source, divergence kind the replay must report, text the report must
# show, where the report places it: the workflow file's line — for a timer too, traced on the replayed
# instance since sdk-core does not give it)
CHANGES = [
    ("reordered", lambda s: s.replace(RESERVE + SLEEP, SLEEP + RESERVE), "command-mismatch",
     "scheduled activity 'reserve', the code now starts a timer", "shop_workflows.py:23"),
    ("renamed", lambda s: s.replace("async def charge(", "async def bill(").replace("(charge, receipt", "(bill, receipt"),
     "command-mismatch", "scheduled activity 'charge', the code now schedules activity 'bill'", "shop_workflows.py"),
    ("dropped", lambda s: s.replace(SLEEP, ""), "command-mismatch", "started timer", "shop_workflows.py"),
    ("clock", lambda s: s.replace(SLEEP, SLEEP + "        datetime.now()\n"), "nondeterministic-call",
     "datetime.datetime.now", "shop_workflows.py"),
]


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


def _write_project(project: Path, source: str) -> None:
    (project / "shop_workflows.py").write_text(source, encoding="utf-8")
    (project / "pytest.ini").write_text(
        "[pytest]\nreplay_paths = histories\nreplay_workflows = shop_workflows:WORKFLOWS\n", encoding="utf-8"
    )


async def _run_orders(address: str, module: object, orders: list[dict]) -> list[str]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"shop-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=[module.reserve, module.charge]):
        results = await asyncio.gather(*(
            client.execute_workflow("ShopOrder", order, id=f"order-{index}", task_queue=queue)
            for index, order in enumerate(orders)
        ))
    # Visibility (what list_workflows reads) is updated asynchronously; wait until it lists every run.
    for _ in range(100):
        if (await client.count_workflows("WorkflowType='ShopOrder'")).count >= len(orders):
            break
        await asyncio.sleep(0.1)
    return list(results)


def _pytest(project: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    # The edits rewrite shop_workflows.py within seconds, some at the same size: bytecode cached by
    # mtime and size could then run the previous version.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    shutil.rmtree(project / "__pycache__", ignore_errors=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=project, capture_output=True, text=True, timeout=120, env=env,
    )


def test_import_then_replay_catches_each_change(dev_server: DevServer, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    _write_project(project, ORIGINAL)
    orders = [{"item": "book", "email": "ann@example.com"}, {"item": "lamp", "email": "bo@example.com"},
              {"item": "mug", "email": "cy@example.com"}]

    sys.path.insert(0, str(project))
    try:
        module = importlib.import_module("shop_workflows")
        results = asyncio.run(_run_orders(dev_server.address, module, orders))
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("shop_workflows", None)
    assert results == ["charged for reserved book", "charged for reserved lamp", "charged for reserved mug"]

    imported = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "temporal", "--address", dev_server.address,
         "--namespace", "default", "--query", "WorkflowType='ShopOrder'", "--out", str(project / "histories"),
         "--limit", "10"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )
    assert imported.returncode == 0, imported.stderr
    files = sorted((project / "histories").glob("*.json"))
    assert [path.name.split("_")[0] for path in files] == ["order-0", "order-1", "order-2"]
    assert "imported 3 histories" in imported.stdout
    assert imported.stderr == ""  # progress only on a terminal
    assert "importing: 3" in _import_on_a_terminal(dev_server.address, project)
    started = json.loads(files[0].read_text())["events"][0]["workflowExecutionStartedEventAttributes"]
    order = json.loads(base64.b64decode(started["input"]["payloads"][0]["data"]))
    # Redacted, still valid JSON for the workflow: a pseudonym that stays an address at the same domain.
    assert order["item"] == "book" and order["email"] != "ann@example.com" and order["email"].endswith("@example.com")

    unchanged = _pytest(project)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "3 passed" in unchanged.stdout

    for name, edit, kind, shown, where in CHANGES:
        changed_source = edit(ORIGINAL)
        assert changed_source != ORIGINAL, name
        _write_project(project, changed_source)
        outcome = _pytest(project)
        assert outcome.returncode == 1, f"{name}: {outcome.stdout}{outcome.stderr}"
        assert "3 failed" in outcome.stdout, f"{name}: {outcome.stdout}"
        assert kind in outcome.stdout, f"{name}: {outcome.stdout}"
        assert shown in outcome.stdout, f"{name}: {outcome.stdout}"
        assert where in outcome.stdout, f"{name}: {outcome.stdout}"


def _import_on_a_terminal(address: str, project: Path) -> str:
    """What ``import temporal`` (no --limit: the total is unknown) draws on a terminal's stderr."""
    import pty

    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "replaytest", "import", "temporal", "--address", address, "--namespace", "default",
         "--query", "WorkflowType='ShopOrder'", "--out", str(project / "histories")],
        cwd=project, stdout=subprocess.DEVNULL, stderr=slave,
    )
    os.close(slave)
    output = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        output += data
    assert process.wait(timeout=60) == 0, output
    os.close(master)
    return output.decode("utf-8", "replace")
