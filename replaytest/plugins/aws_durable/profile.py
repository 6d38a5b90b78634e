"""The lint profile of AWS Lambda durable functions (Python SDK): the ``@durable_execution`` handler is
orchestration code; ``@durable_step`` functions and the callables handed to ``context.step``, ``map``,
``parallel``, ``run_in_child_context`` and ``wait_for_callback`` are steps (their results are checkpointed)."""

from replaytest.lint.profile import VALUE_READS, FrameworkProfile

_SDK = "aws_durable_execution_sdk_python"
_CONTEXT = f"{_SDK}.DurableContext"
_STEP = "a step (context.step with a @durable_step function)"

PROFILE = FrameworkProfile(
    name="aws_durable",
    screen=(b"aws_durable_execution_sdk_python",),
    modules=(_SDK,),
    orchestration_decorators=(f"{_SDK}.durable_execution", f"{_SDK}.execution.durable_execution"),
    step_decorators=(
        f"{_SDK}.durable_step", f"{_SDK}.context.durable_step",
        # Child-context and branch functions run in a context of their own, checkpointed as one operation
        # whose result replays; their bodies re-run only until that operation completed.
        f"{_SDK}.durable_with_child_context", f"{_SDK}.context.durable_with_child_context",
        f"{_SDK}.durable_parallel_branch", f"{_SDK}.context.durable_parallel_branch",
        f"{_SDK}.durable_wait_for_callback", f"{_SDK}.context.durable_wait_for_callback",
    ),
    step_calls=tuple(
        f"{_CONTEXT}.{name}" for name in ("step", "map", "parallel", "run_in_child_context", "wait_for_callback")
    ),
    result_calls=tuple(f"{_CONTEXT}.{name}" for name in ("step", "run_in_child_context", "invoke")),
    # Each operation's checkpoint keeps the name it was given; on replay the SDK compares it with the name the code
    # gives now and stops the execution (NonDeterministicExecutionError) when they differ (RT105).
    step_names={
        **{f"{_CONTEXT}.{call}": (1, "name", "step") for call in ("step", "run_in_child_context", "wait_for_callback")},
        f"{_CONTEXT}.wait": (1, "name", "wait"),
        f"{_CONTEXT}.parallel": (1, "name", "parallel operation"),
        f"{_CONTEXT}.map": (2, "name", "map operation"),
        f"{_CONTEXT}.invoke": (2, "name", "invoke operation"),
        f"{_CONTEXT}.create_callback": (0, "name", "callback"),
        f"{_CONTEXT}.wait_for_condition": (2, "name", "wait"),
    },
    context_types=(_CONTEXT, f"{_SDK}.context.DurableContext"),
    context_param_names=("context", "ctx"),
    context_class=_CONTEXT,
    context_param_position=1,  # handler(event, context)
    safe_calls=frozenset(
        f"{_CONTEXT}.{name}"
        for name in ("step", "wait", "map", "parallel", "run_in_child_context", "wait_for_callback", "create_callback",
                     "invoke", "wait_for_condition", "set_logger", "create_child_context")
    ),
    # ``if not context.is_replaying():`` guards logging in real handlers: it never runs on replay.
    replaying_flags=(f"{_CONTEXT}.is_replaying",),
    # A read whose value only fills a log line is harmless: a replay matches the checkpointed operations, not what the handler logs.
    log_only_harmless=VALUE_READS,
    durable_sleeps=(f"{_CONTEXT}.wait",),
    replacements={
        "clock": f"a value returned by {_STEP}",
        "random": f"a value returned by {_STEP}",
        "uuid": f"a value returned by {_STEP}",
        "sleep": "context.wait(Duration.from_seconds(n))",
        "model-call": _STEP,
        "network": _STEP,
        "filesystem": _STEP,
        "environment": f"handler input or {_STEP}",
        "concurrency": "context.map() / context.parallel()",
    },
    # No automatic fixes: the SDK's replacements are operations (a step, a durable wait) that add a checkpoint,
    # which changes what replays for executions already in flight; the messages name them.

)
