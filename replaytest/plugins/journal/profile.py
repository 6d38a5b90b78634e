"""The lint profile of the journal engine: how its orchestration code and steps are marked and which calls
are its safe replacements (see the package docstring for the engine)."""

from replaytest.lint.profile import AWARE_TZ_ARGUMENTS, VALUE_READS, FixTemplate, FrameworkProfile

_CONTEXT = "replaytest.journal.Context"

PROFILE = FrameworkProfile(
    name="journal",
    screen=(b"replaytest.journal", b"replaytest import journal"),
    modules=("replaytest.journal",),
    orchestration_decorators=("replaytest.journal.workflow", "replaytest.journal.workflow.workflow"),
    step_calls=(f"{_CONTEXT}.step", f"{_CONTEXT}.model"),
    # Each journal record is matched by its step name (``replay`` reports a renamed step as a divergence).
    step_names={f"{_CONTEXT}.step": (0, "name", "step"), f"{_CONTEXT}.model": (0, "name", "step")},
    context_types=(
        _CONTEXT, "replaytest.journal.AsyncContext", "replaytest.journal.context.Context",
        "replaytest.journal.context.AsyncContext",
    ),
    context_param_names=("ctx",),
    context_class=_CONTEXT,
    safe_calls=frozenset(
        f"{_CONTEXT}.{name}"
        for name in ("now", "random", "uuid", "sleep", "wait_signal", "patched", "idempotency_key", "step", "model",
                     "continue_as_new")
    ),
    # A read whose value only fills a log line is harmless: a resume matches the journal's commands, not what the workflow logs.
    log_only_harmless=VALUE_READS,
    durable_sleeps=(f"{_CONTEXT}.sleep",),
    replacements={
        "clock": "ctx.now()",
        "random": "ctx.random()",
        "uuid": "ctx.uuid()",
        "sleep": "ctx.sleep()",
        "model-call": "ctx.model(name, fn, ..., prompt=...)",
        "network": "ctx.step(name, fn, ...)",
        "filesystem": "ctx.step(name, fn, ...)",
        "environment": "workflow input or ctx.step(name, fn, ...)",
        "concurrency": "steps run one after another",
        "idempotency-key": "ctx.idempotency_key()",
    },
    fixes={
        # ctx.now() is aware UTC: exact for datetime.now(tz) and utcnow(); naive local time has no exact
        # deterministic twin (see the Temporal profile), so that fix is unsafe.
        "datetime.datetime.now": (
            FixTemplate("{ctx}.now().astimezone({args})", False, arguments="some", safe_arguments=AWARE_TZ_ARGUMENTS),
            FixTemplate("{ctx}.now().replace(tzinfo=None)", False, arguments="none"),
        ),
        "datetime.datetime.utcnow": FixTemplate("{ctx}.now().replace(tzinfo=None)", True, arguments="none"),
        "uuid.uuid4": FixTemplate("{ctx}.uuid()", True, arguments="none"),
        "random.random": FixTemplate("{ctx}.random()", True, arguments="none"),
        # In an async workflow ctx.sleep is a coroutine function: no fix there.
        "time.sleep": FixTemplate("{ctx}.sleep({args})", True, arguments="one", scope="sync"),
    },
)
