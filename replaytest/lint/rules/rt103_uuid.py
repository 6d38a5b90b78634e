"""RT103: creating fresh UUIDs in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import CallFact, Invalid, Rule

_FRESH_WITHOUT_ARGUMENT = {"ulid.ULID", "bson.ObjectId", "bson.objectid.ObjectId"}


class CreatesFreshUuid(Rule):
    """
    ## What it does
    Finds `uuid.uuid1()`, `uuid.uuid4()`, `uuid.uuid7()` (and ULID / ObjectId generators) in
    orchestration code. `uuid3`/`uuid5` of stable input are deterministic and not reported, nor is the
    fallback of `param or uuid.uuid4()` in a helper reached from a call passing `param=` a value that is
    never falsy (a `workflow.uuid4()`, a parameter annotated `UUID`; also for dates and the clock rule), nor a
    UUID a helper makes only under a condition on its parameters that the call cannot satisfy (`if not force:
    return base` and a call leaving `force=False` out; every rule). In DBOS, a fresh id whose only use is to name
    a child workflow (`with SetWorkflowID(key): DBOS.start_workflow(...)` / `enqueue_workflow` / `queue.enqueue`)
    is not reported: recovery returns the recorded child whatever id the rerun makes.
    An id whose value only fills log output is reported only on Temporal, whose sandbox rejects it, as
    RT101 says for the clock.

    ## Why is this bad?
    A fresh id differs on every replay: ids passed to steps, used as keys or compared no longer match
    the recorded history.

    ## Example
    ```python
    order_id = str(uuid.uuid4())
    ```

    ## Use instead
    ```python
    order_id = str(workflow.uuid4())
    ```

    ## Fix safety
    `uuid4()` to the framework's deterministic `uuid4()` is safe where it returns a `uuid.UUID`;
    replacements returning a string (Azure `new_uuid()`) are unsafe.
    """

    code = "RT103"
    name = "creates-fresh-uuid"
    category = "uuid"
    summary = "Fresh UUID created in orchestration code"
    what = "creates a fresh UUID"
    calls = {
        name: ""
        for name in (
            "uuid.uuid1", "uuid.uuid4", "uuid.uuid6", "uuid.uuid7", "uuid6.uuid6", "uuid6.uuid7",
            "uuid_utils.uuid4", "uuid_utils.uuid7", "ulid.new", "ulid.ULID", "ulid.ulid",
            "bson.ObjectId", "bson.objectid.ObjectId", "nanoid.generate", "shortuuid.uuid",
        )
    }

    def accept_call(self, call: CallFact) -> bool:
        return not (call.qualname in _FRESH_WITHOUT_ARGUMENT and call.node.args)

    def only_reads(self, call: CallFact) -> bool:
        return True

    VALID = (
        """
import uuid
from temporalio import workflow

@workflow.defn
class Ids:
    @workflow.run
    async def run(self, order: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, order)) + str(workflow.uuid4())
""",
        """
import uuid
from temporalio import workflow

def request(name: str, *, request_id: uuid.UUID | None = None) -> dict:
    return {"name": name, "id": str(request_id or uuid.uuid4())}

def charge(name: str, request_id: uuid.UUID) -> dict:
    return request(name, request_id=request_id)

@workflow.defn
class Ids:
    @workflow.run
    async def run(self, order: str) -> list:
        return [request(order, request_id=workflow.uuid4()), charge(order, workflow.uuid4())]
""",
        """
import logging
import uuid
from langgraph.func import entrypoint

logger = logging.getLogger(__name__)

@entrypoint()
def agent(question: str) -> str:
    trace = uuid.uuid4().hex[:8]
    logger.info("[%s] question: %s", trace, question)
    logger.info("[%s] answered", trace)
    return question.upper()
""",
        """
import uuid
from temporalio import workflow

def dedup_key(base: str, *, force: bool = False) -> str:
    if not force:
        return base
    return f"{base}:force:{uuid.uuid4()}"

def order_key(order: str, *, force=False) -> str:
    return dedup_key(f"order:{order}", force=force)

@workflow.defn
class Ids:
    @workflow.run
    async def run(self, order: str) -> list:
        return [dedup_key(order), dedup_key(order, force=False), order_key(order)]
""",
        """
import uuid
from dbos import DBOS, SetWorkflowID

@DBOS.workflow()
def review(name: str) -> str:
    return name

@DBOS.workflow()
def desk(name: str) -> str:
    child_id = f"{name}-{uuid.uuid4()}"
    with SetWorkflowID(child_id):
        handle = DBOS.start_workflow(review, name)
    return handle.get_result()
""",
    )
    INVALID = (
        Invalid(
            """
import uuid
from temporalio import workflow

@workflow.defn
class Ids:
    @workflow.run
    async def run(self) -> str:
        return str(uuid.uuid4())
""",
            line=8, column=20,
            message='uuid.uuid4() creates a fresh UUID in workflow code; use workflow.uuid4()', fix='workflow.uuid4()', fix_safe=True,
        ),
        Invalid(
            """
from uuid import uuid1 as fresh
from langgraph.func import entrypoint

@entrypoint()
def agent(question: str) -> str:
    return fresh().hex
""",
            line=6, column=12,
            message='fresh() creates a fresh UUID in workflow code; use a @task function that creates the id',
        ),
        Invalid(
            """
import logging
import uuid
from langgraph.func import entrypoint

logger = logging.getLogger(__name__)

@entrypoint()
def agent(question: str) -> dict:
    trace = uuid.uuid4().hex[:8]
    logger.info("[%s] question: %s", trace, question)
    return {"trace": trace, "answer": question.upper()}
""",
            line=9, column=13,
            message='uuid.uuid4() creates a fresh UUID in workflow code; use a @task function that creates the id',
        ),
        Invalid(
            """
import uuid
from temporalio import workflow

def request(name: str, *, request_id: uuid.UUID | None = None) -> dict:
    return {"name": name, "id": str(request_id or uuid.uuid4())}

@workflow.defn
class Ids:
    @workflow.run
    async def run(self, order: str, given: uuid.UUID | None) -> list:
        return [request(order, request_id=given)]
""",
            line=11, column=17,
            message='request() reaches uuid.uuid4(), which creates a fresh UUID in workflow code; use workflow.uuid4()',
        ),
        Invalid(
            """
import uuid
from temporalio import workflow

def dedup_key(base: str, *, force: bool = False) -> str:
    if not force:
        return base
    return f"{base}:force:{uuid.uuid4()}"

def order_key(order: str, *, force=False) -> str:
    return dedup_key(f"order:{order}", force=force)

@workflow.defn
class Ids:
    @workflow.run
    async def run(self, order: str) -> str:
        return order_key(order, force=True)
""",
            line=16, column=16,
            message='order_key() reaches uuid.uuid4(), which creates a fresh UUID in workflow code; use workflow.uuid4()',
        ),
        Invalid(
            """
import uuid
from dbos import DBOS, SetWorkflowID

@DBOS.workflow()
def review(name: str) -> str:
    return name

@DBOS.workflow()
def desk(name: str) -> list:
    child_id = f"{name}-{uuid.uuid4()}"
    with SetWorkflowID(child_id):
        handle = DBOS.start_workflow(review, name)
    return [child_id, handle.get_result()]
""",
            line=10, column=26,
            message='uuid.uuid4() creates a fresh UUID in workflow code; use a @DBOS.step() function that creates the id (or DBOS.workflow_id)',
        ),
    )
