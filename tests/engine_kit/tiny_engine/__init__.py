"""A tiny third-party engine, written as docs/engines.md says: workflows are generator functions marked
``@workflow`` that yield ``("step", name, argument)`` and receive each step's result. ``PLUGIN`` is registered
under the ``replaytest.plugins`` entry point by the test's dist-info; its replayer loads on first use."""

from replaytest.lint.profile import FrameworkProfile
from replaytest.plugins import FrameworkPlugin, LazyReplayer

ENGINE = "tiny"

PROFILE = FrameworkProfile(
    name=ENGINE,
    screen=(b"tiny_engine",),
    modules=("tiny_engine",),
    orchestration_decorators=("tiny_engine.workflow",),
    replacements={"clock": "a step that reads the clock"},
)

PLUGIN = FrameworkPlugin(name=ENGINE, profile=PROFILE, replayer=LazyReplayer(ENGINE, "tiny_engine.replayer:TinyReplayer"))


def workflow(function):  # type: ignore[no-untyped-def]
    """Mark ``function`` as a tiny workflow, named after the function."""
    function.__tiny_workflow__ = function.__name__
    return function
