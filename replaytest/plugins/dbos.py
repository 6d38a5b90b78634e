"""Framework plugin for DBOS Transact: ``@DBOS.workflow()`` orchestration, steps and transactions."""

from replaytest.lint.profile import FixTemplate, FrameworkProfile
from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.dbos_import import import_command

_DBOS = ("dbos", "DBOS")
_STEP = "a @DBOS.step() function"

PROFILE = FrameworkProfile(
    name="dbos",
    screen=(b"DBOS.workflow", b"DBOS.scheduled"),
    modules=("dbos",),
    orchestration_decorators=("dbos.DBOS.workflow", "dbos.DBOS.scheduled"),
    step_decorators=("dbos.DBOS.step", "dbos.DBOS.transaction"),
    safe_calls=frozenset(
        f"dbos.DBOS.{name}"
        for name in (
            "sleep", "sleep_async", "start_workflow", "start_workflow_async", "recv", "recv_async", "send",
            "send_async", "set_event", "set_event_async", "get_event", "get_event_async", "retrieve_workflow",
            "logger", "workflow_id", "span",
        )
    ),
    extra_effects={"asyncio.gather": "concurrency"},
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
    fixes={
        # One argument only: asyncio.sleep(delay, result) returns result, DBOS.sleep_async has no result.
        "time.sleep": FixTemplate("DBOS.sleep({args})", True, _DBOS, arguments="one"),
        "asyncio.sleep": FixTemplate("DBOS.sleep_async({args})", True, _DBOS, arguments="one"),
    },
)

PLUGIN = FrameworkPlugin(
    name="dbos",
    profile=PROFILE,
    replayer=LazyReplayer("dbos", "replaytest.plugins.dbos_replay:DBOSReplayer"),
    import_command=import_command,
)
