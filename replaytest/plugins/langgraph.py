"""Framework plugin for the LangGraph functional API: ``@entrypoint`` orchestration, ``@task`` steps."""

from replaytest.lint.profile import FrameworkProfile
from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.langgraph_import import import_command

_TASK = "a @task function"

PROFILE = FrameworkProfile(
    name="langgraph",
    screen=(b"langgraph.func", b"langgraph import func"),
    modules=("langgraph",),
    orchestration_decorators=("langgraph.func.entrypoint",),
    step_decorators=("langgraph.func.task",),
    safe_calls=frozenset({"langgraph.types.interrupt", "langgraph.config.get_stream_writer"}),
    replacements={
        "clock": f"{_TASK} that reads the clock",
        "random": f"{_TASK} that draws the value",
        "uuid": f"{_TASK} that creates the id",
        "model-call": _TASK,
        "network": _TASK,
        "filesystem": _TASK,
        "environment": f"the entrypoint input or {_TASK}",
        "concurrency": "@task functions (their futures are recorded)",
    },
)

PLUGIN = FrameworkPlugin(
    name="langgraph",
    profile=PROFILE,
    replayer=LazyReplayer("langgraph", "replaytest.plugins.langgraph_replay:LangGraphReplayer"),
    import_command=import_command,
)
