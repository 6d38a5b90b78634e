"""Framework plugin for replaytest's own journal runtime: ``@workflow`` functions taking a context."""

from replaytest.lint.profile import FixTemplate, FrameworkProfile
from replaytest.plugins import FrameworkPlugin, LazyReplayer

_CONTEXT = "replaytest.journal.Context"

PROFILE = FrameworkProfile(
    name="journal",
    screen=(b"replaytest.journal", b"replaytest import journal"),
    modules=("replaytest.journal",),
    orchestration_decorators=("replaytest.journal.workflow", "replaytest.journal.workflow.workflow"),
    step_calls=(f"{_CONTEXT}.step", f"{_CONTEXT}.model"),
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
        "datetime.datetime.now": FixTemplate("{ctx}.now()", False),
        "uuid.uuid4": FixTemplate("{ctx}.uuid()", True),
        "random.random": FixTemplate("{ctx}.random()", True),
        "time.sleep": FixTemplate("{ctx}.sleep({args})", True),
    },
)

PLUGIN = FrameworkPlugin(name="journal", profile=PROFILE, replayer=LazyReplayer("journal", "replaytest.plugins.journal_replay:JournalReplayer"))
