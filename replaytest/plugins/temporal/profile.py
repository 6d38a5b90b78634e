"""The lint profile of the temporal engine: how its orchestration code and steps are marked and which calls
are its safe replacements (see the package docstring for the engine)."""

from replaytest.lint.profile import AWARE_TZ_ARGUMENTS, FixTemplate, FrameworkProfile

_WORKFLOW = ("temporalio", "workflow")
_RANDOM_FUNCTIONS = (
    "random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform", "gauss", "getrandbits",
    "randbytes", "triangular",
)

PROFILE = FrameworkProfile(
    name="temporal",
    # Orchestration is marked by workflow.defn (or an interceptor subclass); other temporalio code is not.
    screen=(b".defn", b"@defn", b"import defn", b"WorkflowInboundInterceptor", b"WorkflowOutboundInterceptor"),
    modules=("temporalio",),
    orchestration_class_decorators=("temporalio.workflow.defn",),
    handler_decorators=(
        "temporalio.workflow.run", "temporalio.workflow.signal", "temporalio.workflow.update",
        "temporalio.workflow.query", "temporalio.workflow.init",
    ),
    orchestration_methods=("__init__",),
    # A query reads workflow state outside the history, so it is never replayed; but it runs in the
    # workflow sandbox, whose restrictions reject clock, random and uuid calls (RestrictedWorkflowAccessError).
    query_decorators=("temporalio.workflow.query",),
    query_categories=("clock", "random", "uuid"),
    query_words=(
        "in a query handler, where it does not break replay (queries are not recorded) but Temporal's "
        "workflow sandbox rejects it at run time"
    ),
    # A clock, random or uuid read whose value only fills a log line breaks no replay either, but the sandbox
    # rejects the read itself: it stays a finding (no ``log_only_harmless``), worded so.
    log_only_words=(
        "in workflow code, only for a log line, where it does not break replay but Temporal's workflow sandbox "
        "rejects it at run time"
    ),
    orchestration_base_classes=(
        "temporalio.worker.WorkflowInboundInterceptor", "temporalio.worker.WorkflowOutboundInterceptor",
        "temporalio.worker._interceptor.WorkflowInboundInterceptor",
        "temporalio.worker._interceptor.WorkflowOutboundInterceptor",
    ),
    registration_calls=("temporalio.workflow.defn",),
    step_decorators=("temporalio.activity.defn",),
    # An activity or child workflow given by name: the history records that name and replay compares it.
    step_names={
        **{f"temporalio.workflow.{call}": (0, "activity", "activity")
           for call in ("execute_activity", "start_activity", "execute_local_activity", "start_local_activity")},
        **{f"temporalio.workflow.{call}": (0, "workflow", "child workflow")
           for call in ("execute_child_workflow", "start_child_workflow")},
    },
    result_calls=(
        "temporalio.workflow.execute_activity", "temporalio.workflow.execute_activity_method",
        "temporalio.workflow.execute_local_activity", "temporalio.workflow.execute_local_activity_method",
        "temporalio.workflow.execute_child_workflow",
    ),
    safe_calls=frozenset({
        "temporalio.workflow.now", "temporalio.workflow.random", "temporalio.workflow.uuid4",
        "temporalio.workflow.time", "temporalio.workflow.time_ns", "temporalio.workflow.sleep",
        "temporalio.workflow.wait", "temporalio.workflow.as_completed", "temporalio.workflow.wait_condition",
        "temporalio.workflow.execute_activity", "temporalio.workflow.start_activity",
        "temporalio.workflow.execute_activity_method", "temporalio.workflow.start_activity_method",
        "temporalio.workflow.execute_local_activity", "temporalio.workflow.start_local_activity",
        "temporalio.workflow.execute_local_activity_method", "temporalio.workflow.start_local_activity_method",
        "temporalio.workflow.execute_child_workflow", "temporalio.workflow.start_child_workflow",
        "temporalio.workflow.logger", "temporalio.workflow.info", "temporalio.workflow.patched",
        "temporalio.workflow.deprecate_patch", "asyncio.sleep",
    }),
    # Each raises ``_NotInWorkflowEventLoopError`` outside a workflow and returns inside one.
    outside_only_failures=frozenset({
        "temporalio.workflow.now", "temporalio.workflow.time", "temporalio.workflow.time_ns",
        "temporalio.workflow.uuid4", "temporalio.workflow.random", "temporalio.workflow.info",
    }),
    extra_effects={"asyncio.wait": "concurrency", "asyncio.as_completed": "concurrency"},
    durable_sleeps=("asyncio.sleep", "temporalio.workflow.sleep"),
    replacements={
        "clock": "workflow.now()",
        "random": "workflow.random()",
        "uuid": "workflow.uuid4()",
        "sleep": "asyncio.sleep() or workflow.sleep() (durable timers)",
        "model-call": "an activity (workflow.execute_activity)",
        "network": "an activity (workflow.execute_activity)",
        "filesystem": "an activity (workflow.execute_activity)",
        "environment": "workflow input or an activity",
        "concurrency": "workflow.wait() / workflow.as_completed() or activities",
        "global-state": "attributes of the workflow instance",
    },
    fixes={
        # datetime.now(tz) is exact as the aware UTC workflow time in tz; datetime.now() is naive *local*
        # time, which no deterministic value equals: naive UTC keeps the type (no naive/aware TypeError)
        # and equals the original only where the worker's zone is UTC, so that fix is unsafe.
        "datetime.datetime.now": (
            FixTemplate("workflow.now().astimezone({args})", False, _WORKFLOW, arguments="some",
                        safe_arguments=AWARE_TZ_ARGUMENTS),
            FixTemplate("workflow.now().replace(tzinfo=None)", False, _WORKFLOW, arguments="none"),
        ),
        "datetime.datetime.utcnow": FixTemplate("workflow.now().replace(tzinfo=None)", True, _WORKFLOW,
                                                arguments="none"),
        "time.time": FixTemplate("workflow.time()", True, _WORKFLOW, arguments="none"),
        "time.time_ns": FixTemplate("workflow.time_ns()", True, _WORKFLOW, arguments="none"),
        "uuid.uuid4": FixTemplate("workflow.uuid4()", True, _WORKFLOW, arguments="none"),
        "uuid.uuid1": FixTemplate("workflow.uuid4()", False, _WORKFLOW),
        **{f"random.{name}": FixTemplate(f"workflow.random().{name}({{args}})", True, _WORKFLOW)
           for name in _RANDOM_FUNCTIONS},
        "time.sleep": FixTemplate("await asyncio.sleep({args})", False, ("", "asyncio")),
        "asyncio.wait": FixTemplate("workflow.wait({args})", False, _WORKFLOW),
        "asyncio.as_completed": FixTemplate("workflow.as_completed({args})", False, _WORKFLOW),
    },
)
