"""A desk that starts each child workflow under a fresh id, in every form DBOS offers: ``DBOS.start_workflow``,
``DBOS.enqueue_workflow`` and ``queue.enqueue`` and their async versions, the id made in place
(``SetWorkflowID(str(uuid.uuid4()))``), held by a local, or made by a helper and handed to a helper that enqueues
under it. Each parent reads its child's result, waits for a go-ahead (``DBOS.recv``) and returns the id of the child
it got back and that result. The fresh ids are used for nothing else, so ``replaytest lint`` finds nothing here;
the child's step appends a line to the file named by ``CHILD_ID_DESK_EFFECTS`` whenever it really runs."""

from __future__ import annotations

import os
import uuid

from dbos import DBOS, SetWorkflowID

EFFECTS = os.environ.get("CHILD_ID_DESK_EFFECTS", "child-id-desk-effects.log")
CHILDREN = "children"
GO_WAIT_S = 600


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def work(name: str) -> str:
    effect(f"work {name}")
    return f"{name} done"


@DBOS.workflow()
def child(name: str) -> str:
    return work(name)


@DBOS.workflow()
async def child_async(name: str) -> str:
    return work(name)


def run_key(name: str, *, force: bool = False) -> str:
    if not force:
        return name
    return f"{name}:force:{uuid.uuid4()}"


def enqueue_child(name: str, *, key: str | None = None):
    if key is not None:
        with SetWorkflowID(key):
            return DBOS.enqueue_workflow(CHILDREN, child, name)
    return DBOS.enqueue_workflow(CHILDREN, child, name)


def finish(handle) -> list:
    result = handle.get_result()
    DBOS.recv("go", timeout_seconds=GO_WAIT_S)
    return [handle.workflow_id, result]


async def finish_async(handle) -> list:
    result = await handle.get_result()
    await DBOS.recv_async("go", timeout_seconds=GO_WAIT_S)
    return [handle.workflow_id, result]


@DBOS.workflow()
def start_under_fresh_id(name: str) -> list:
    with SetWorkflowID(str(uuid.uuid4())):
        handle = DBOS.start_workflow(child, name)
    return finish(handle)


@DBOS.workflow()
def enqueue_under_local_id(name: str) -> list:
    child_id = f"{name}-{uuid.uuid4()}"
    with SetWorkflowID(child_id):
        handle = DBOS.enqueue_workflow(CHILDREN, child, name)
    return finish(handle)


@DBOS.workflow()
def queue_enqueue_under_fresh_id(name: str) -> list:
    queue = DBOS.retrieve_queue(CHILDREN)
    with SetWorkflowID(uuid.uuid4().hex):
        handle = queue.enqueue(child, name)
    return finish(handle)


@DBOS.workflow()
def enqueue_through_helpers(name: str, force: bool) -> list:
    return finish(enqueue_child(name, key=run_key(name, force=force)))


@DBOS.workflow()
async def start_async_under_fresh_id(name: str) -> list:
    with SetWorkflowID(str(uuid.uuid4())):
        handle = await DBOS.start_workflow_async(child_async, name)
    return await finish_async(handle)


@DBOS.workflow()
async def enqueue_async_under_fresh_id(name: str) -> list:
    with SetWorkflowID(str(uuid.uuid4())):
        handle = await DBOS.enqueue_workflow_async(CHILDREN, child_async, name)
    return await finish_async(handle)


@DBOS.workflow()
async def queue_enqueue_async_under_fresh_id(name: str) -> list:
    queue = await DBOS.retrieve_queue_async(CHILDREN)
    with SetWorkflowID(str(uuid.uuid4())):
        handle = await queue.enqueue_async(child_async, name)
    return await finish_async(handle)
