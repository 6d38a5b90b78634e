"""The Restate lint profile (Python SDK): service, virtual-object and workflow handlers, ``ctx.run`` steps
and the context's deterministic replacements."""

from replaytest.lint.profile import VALUE_READS, FixTemplate, FrameworkProfile

_CONTEXT = "restate.Context"

PROFILE = FrameworkProfile(
    name="restate",
    screen=(b"restate",),
    modules=("restate",),
    orchestration_decorators=(
        "restate.Workflow.main", "restate.Workflow.handler", "restate.Service.handler", "restate.VirtualObject.handler",
    ),
    step_calls=(f"{_CONTEXT}.run", f"{_CONTEXT}.run_typed"),
    # The journal entry of a ``ctx.run`` carries its name; a resumed invocation must produce the same one.
    step_names={f"{_CONTEXT}.run": (0, "name", "run step"), f"{_CONTEXT}.run_typed": (0, "name", "run step")},
    context_types=(
        "restate.Context", "restate.WorkflowContext", "restate.WorkflowSharedContext", "restate.ObjectContext",
        "restate.ObjectSharedContext", "restate.context.Context", "restate.context.WorkflowContext",
        "restate.context.ObjectContext",
    ),
    context_param_names=("ctx",),
    recording_arguments=("restate.ext.langchain.RestateMiddleware",),
    context_class=_CONTEXT,
    safe_calls=frozenset(
        f"{_CONTEXT}.{name}"
        for name in ("time", "random", "uuid", "sleep", "run", "run_typed", "promise", "get", "set", "clear",
                     "service_call", "object_call", "workflow_call", "generic_call", "awakeable", "request", "key")
    ),
    # A read whose value only fills a log line is harmless: a replay matches the handler's journal entries, not what it logs.
    log_only_harmless=VALUE_READS,
    durable_sleeps=(f"{_CONTEXT}.sleep",),
    replacements={
        "clock": "ctx.time()",
        "random": "ctx.random()",
        "uuid": "ctx.uuid()",
        "sleep": "ctx.sleep()",
        "model-call": "ctx.run(...)",
        "network": "ctx.run(...)",
        "filesystem": "ctx.run(...)",
        "environment": "handler input or ctx.run(...)",
        "concurrency": "Restate calls and promises (ctx.service_call, restate.gather)",
    },
    type_aliases={
        "restate.workflow.Workflow": "restate.Workflow", "restate.service.Service": "restate.Service",
        "restate.object.VirtualObject": "restate.VirtualObject",
    },
    fixes={
        "uuid.uuid4": FixTemplate("{ctx}.uuid()", True, arguments="none"),
        "random.random": FixTemplate("{ctx}.random().random()", True, arguments="none"),
        "time.time": FixTemplate("{ctx}.time()", False),
    },
)
