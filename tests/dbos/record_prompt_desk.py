"""Runs the prompt desk's support agent for real on a SQLite system database.

``python record_prompt_desk.py SYSTEM_DB``: ``desk-done`` (started with the prompt helper, reviewed,
completed), ``desk-parked`` (started with the helper, left PENDING in ``DBOS.recv`` as after a crash) and
``desk-plain`` (started without the helper, completed) and ``desk-async`` (the async workflow, with the
helper, completed)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

SYSTEM_DB = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, SetWorkflowID  # noqa: E402
from prompt_desk import app  # noqa: E402

from replaytest.plugins.dbos.prompts import with_prompts  # noqa: E402

DBOS(config={"name": "prompt-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()


def wait_in_recv(workflow_id: str) -> None:
    """Until the run waits in recv: its timeout sleep is the row written last (bounded: 10 s)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps(workflow_id)):
            return
        time.sleep(0.05)
    raise SystemExit(f"{workflow_id} never reached DBOS.recv")


for workflow_id, helper in (("desk-done", True), ("desk-plain", False)):
    with SetWorkflowID(workflow_id):
        if helper:
            with with_prompts(app.support_agent):
                handle = DBOS.start_workflow(app.support_agent, "my invoice was charged twice")
        else:
            handle = DBOS.start_workflow(app.support_agent, "my invoice was charged twice")
    wait_in_recv(workflow_id)
    DBOS.send(workflow_id, "refund approved", topic="review")
    print(handle.get_result())


async def run_async_agent() -> None:
    with SetWorkflowID("desk-async"), with_prompts(app.support_agent_async):
        handle = await DBOS.start_workflow_async(app.support_agent_async, "my invoice was charged twice")
    print(await handle.get_result())


# Not asyncio.run: closing the loop would shut its default executor down, which older DBOS versions
# install as their own and still need for the runs started after this one.
asyncio.new_event_loop().run_until_complete(run_async_agent())
with SetWorkflowID("desk-parked"), with_prompts(app.support_agent):
    DBOS.start_workflow(app.support_agent, "the parcel never arrived")
wait_in_recv("desk-parked")
sys.stdout.flush()
os._exit(0)  # no shutdown: desk-parked stays PENDING in recv
