"""The lint profile of DBOS Transact.

DBOS 3.x moved transactions to datasources: ``ds = SQLAlchemyDatasource.create(url)`` and
``@ds.transaction()`` (a step); ``DBOS.run_step(...)`` runs a function as a recorded step. Both are
known here, next to 2.x's ``@DBOS.transaction()``. ``asyncio.gather`` is not a finding in DBOS: DBOS
numbers operations when they are called, not when they finish, so gathering steps, child workflows and
handles is deterministic there. A patch check is the exception: ``DBOS.patch`` and friends take the next
operation number only if the patch is in the history, so in gathered coroutines its position depends on
how they interleave (DBOS raises ``DBOSPatchNondeterminismError``)."""

from replaytest.lint.profile import VALUE_READS, FixTemplate, FrameworkProfile

_DBOS = ("dbos", "DBOS")
_STEP = "a @DBOS.step() function"

PROFILE = FrameworkProfile(
    name="dbos",
    screen=(b"DBOS.workflow", b"DBOS.scheduled"),
    modules=("dbos",),
    orchestration_decorators=("dbos.DBOS.workflow", "dbos.DBOS.scheduled"),
    # The name a step or workflow is registered and recorded under (recovery looks the function up by it).
    step_names={"dbos.DBOS.step": (-1, "name", "step"), "dbos.DBOS.transaction": (-1, "name", "step"),
                "dbos.DBOS.workflow": (-1, "name", "workflow"),
                # ``DBOS.run_step({"name": ...}, fn)``: the step is recorded under its options' name (else fn's).
                "dbos.DBOS.run_step": (0, "dbos_step_options", "step"),
                "dbos.DBOS.run_step_async": (0, "dbos_step_options", "step")},
    step_name_keys={"dbos.DBOS.run_step": "name", "dbos.DBOS.run_step_async": "name"},
    step_decorators=(
        "dbos.DBOS.step", "dbos.DBOS.transaction", "dbos.SQLAlchemyDatasource.transaction",
        "dbos.AsyncSQLAlchemyDatasource.transaction",
    ),
    step_calls=("dbos.DBOS.run_step", "dbos.DBOS.run_step_async"),
    # A configured instance is registered under its name once; every workflow run of its methods shares it.
    shared_instance_bases=("dbos.DBOSConfiguredInstance",),
    safe_calls=frozenset(
        f"dbos.DBOS.{name}"
        for name in (
            "sleep", "sleep_async", "start_workflow", "start_workflow_async", "recv", "recv_async", "send",
            "send_async", "set_event", "set_event_async", "get_event", "get_event_async", "retrieve_workflow",
            "logger", "workflow_id", "span", "run_step", "run_step_async",
        )
    ),
    concurrent_calls=("asyncio.gather",),
    order_sensitive_calls=tuple(
        f"dbos.DBOS.{name}" for name in ("patch", "patch_async", "deprecate_patch", "deprecate_patch_async")
    ),
    # A read whose value only fills a log line is harmless: recovery re-runs the workflow function and checks only its steps' names by function id.
    log_only_harmless=VALUE_READS,
    durable_sleeps=("dbos.DBOS.sleep", "dbos.DBOS.sleep_async"),
    replacements={
        "clock": f"{_STEP} that reads the clock",
        "random": f"{_STEP} that draws the value",
        "uuid": f"{_STEP} that creates the id (or DBOS.workflow_id)",
        "sleep": "DBOS.sleep() / DBOS.sleep_async()",
        "model-call": _STEP,
        "network": _STEP,
        "filesystem": _STEP,
        "environment": f"workflow input or {_STEP}",
        "concurrency": "DBOS.start_workflow() or steps awaited one after another",
    },
    # A child started inside ``SetWorkflowID(key)`` from a workflow is recorded under the parent's operation number
    # with its id; recovery returns the recorded child whatever key is given (tests/dbos prove each form).
    child_id_scopes=("dbos.SetWorkflowID",),
    child_starts=(
        "dbos.DBOS.start_workflow", "dbos.DBOS.start_workflow_async", "dbos.DBOS.enqueue_workflow",
        "dbos.DBOS.enqueue_workflow_async", "dbos.Queue.enqueue", "dbos.Queue.enqueue_async",
    ),
    type_aliases={
        "dbos.SQLAlchemyDatasource.create": "dbos.SQLAlchemyDatasource",
        "dbos.AsyncSQLAlchemyDatasource.create": "dbos.AsyncSQLAlchemyDatasource",
        # A queue is declared and looked up through DBOS (``queue = DBOS.retrieve_queue(name)``).
        "dbos.DBOS.register_queue": "dbos.Queue", "dbos.DBOS.register_queue_async": "dbos.Queue",
        "dbos.DBOS.retrieve_queue": "dbos.Queue", "dbos.DBOS.retrieve_queue_async": "dbos.Queue",
    },
    fixes={
        # One argument only: asyncio.sleep(delay, result) returns result, DBOS.sleep_async has no result.
        "time.sleep": FixTemplate("DBOS.sleep({args})", True, _DBOS, arguments="one"),
        "asyncio.sleep": FixTemplate("DBOS.sleep_async({args})", True, _DBOS, arguments="one"),
    },
)
