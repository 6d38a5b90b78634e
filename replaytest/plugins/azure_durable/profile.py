"""The lint profile of Azure Durable Functions (Python): generator orchestrators, activities and entities."""

from replaytest.lint.profile import VALUE_READS, FixTemplate, FrameworkProfile

_CONTEXT = "azure.durable_functions.DurableOrchestrationContext"
_ACTIVITY = "an activity (context.call_activity)"

PROFILE = FrameworkProfile(
    name="azure_durable",
    screen=(b"orchestration_trigger", b"Orchestrator.create"),
    modules=("azure.durable_functions",),
    # Orchestrators are generator functions registered by decorator on a DFApp/Blueprint or by
    # Orchestrator.create(fn).
    orchestration_decorators=(
        "azure.durable_functions.DFApp.orchestration_trigger", "azure.durable_functions.Blueprint.orchestration_trigger",
    ),
    registration_calls=("azure.durable_functions.Orchestrator.create",),
    step_decorators=(
        "azure.durable_functions.DFApp.activity_trigger", "azure.durable_functions.Blueprint.activity_trigger",
        "azure.durable_functions.DFApp.entity_trigger", "azure.durable_functions.Blueprint.entity_trigger",
    ),
    context_types=(_CONTEXT, "azure.durable_functions.models.DurableOrchestrationContext"),
    context_param_names=("context",),
    context_class=_CONTEXT,
    # The history records the activity or sub-orchestrator name; replay matches the scheduled task by it.
    step_names={
        **{f"{_CONTEXT}.{call}": (0, "name", "activity") for call in ("call_activity", "call_activity_with_retry")},
        **{f"{_CONTEXT}.{call}": (0, "name", "sub-orchestrator")
           for call in ("call_sub_orchestrator", "call_sub_orchestrator_with_retry")},
    },
    safe_calls=frozenset(
        f"{_CONTEXT}.{name}"
        for name in ("new_uuid", "create_timer", "call_activity", "call_activity_with_retry", "call_sub_orchestrator",
                     "call_sub_orchestrator_with_retry", "wait_for_external_event", "task_all", "task_any",
                     "continue_as_new", "set_custom_status", "get_input", "call_http", "call_entity", "signal_entity")
    ),
    # ``if not context.is_replaying:`` guards logging and telemetry in real apps: it never runs on replay.
    replaying_flags=(f"{_CONTEXT}.is_replaying",),
    # A read whose value only fills a log line is harmless: the orchestrator replays against its history events, not its log output.
    log_only_harmless=VALUE_READS,
    durable_sleeps=(f"{_CONTEXT}.create_timer",),
    replacements={
        "clock": "context.current_utc_datetime",
        "random": f"a value returned by {_ACTIVITY}",
        "uuid": "context.new_uuid()",
        "sleep": "yield context.create_timer(fire_at)",
        "model-call": _ACTIVITY,
        "network": _ACTIVITY,
        "filesystem": _ACTIVITY,
        "environment": f"orchestration input or {_ACTIVITY}",
        "concurrency": "context.task_all() / context.task_any()",
    },
    fixes={
        "datetime.datetime.utcnow": FixTemplate("{ctx}.current_utc_datetime", False),
        "datetime.datetime.now": FixTemplate("{ctx}.current_utc_datetime", False),
        "uuid.uuid4": FixTemplate("{ctx}.new_uuid()", False),
    },
)
