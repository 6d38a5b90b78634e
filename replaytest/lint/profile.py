"""Framework lint profiles: what a durable-execution framework calls orchestration code, steps and safe APIs.

A ``FrameworkProfile`` is data, read by the generic collector and rules; no rule branches on a framework
name. Every name in a profile is a fully qualified name as the resolver spells it: the import path of a
function or class (``temporalio.workflow.defn``), a method on an instance of a class (``restate.Workflow.main``
for ``@wf.main()`` where ``wf = restate.Workflow(...)``), or a method on the framework's context object
(``restate.Context.run``; see ``context_class``).

``config_profile`` builds the profile of a home-grown engine declared in ``[tool.replaytest]``
(``orchestration-decorators`` / ``step-decorators``).
"""

from __future__ import annotations

from collections.abc import Mapping

from replaytest.config import Config
from replaytest.records import FrozenRecord, factory, field_names

CUSTOM_PROFILE_NAME = "custom"

# The read categories (``FrameworkProfile.log_only_harmless``) an engine that re-runs workflow code as plain
# Python lets run: a value only logged changes nothing it records or compares.
VALUE_READS: tuple[str, ...] = ("clock", "random", "uuid")


# Argument texts of ``datetime.now(tz)`` that are a time zone and never None: with them
# ``<aware UTC now>.astimezone(tz)`` is exactly ``datetime.now(tz)`` (both are ``tz.fromutc`` of the same
# instant). Any other argument might be None at run time, where the two differ (naive vs aware).
AWARE_TZ_ARGUMENTS: tuple[str, ...] = (
    r"(?:tz\s*=\s*)?(?:datetime\.|dt\.)?(?:timezone\.utc|UTC)",
    r"(?:tz\s*=\s*)?(?:zoneinfo\.)?ZoneInfo\(.*\)",
    r"(?:tz\s*=\s*)?(?:datetime\.|dt\.)?timezone\(.*\)",
    r"(?:tz\s*=\s*)?pytz\.(?:utc|UTC|timezone\(.*\))",
)


class FixTemplate(FrozenRecord):
    """How to rewrite one call into the framework's safe replacement.

    ``replacement`` may use ``{args}`` (the original call's argument text) and ``{ctx}`` (the name of the
    orchestration function's context parameter); ``import_from`` is ``(module, name)`` for the
    ``from module import name`` the replacement needs.
    """

    replacement: str
    safe: bool
    import_from: tuple[str, str] | None = None
    # Which calls the template fits, by their arguments: "any", "none" (``f()``), "some" (at least one),
    # "one" (exactly one positional argument). A profile may list several templates for one name; the
    # first that fits wins, and none fitting means no fix.
    arguments: str = "any"
    # Argument texts (full regular-expression matches) for which an otherwise unsafe fix is exact, e.g.
    # ``datetime.now(ZoneInfo(...))`` -> ``workflow.now().astimezone(ZoneInfo(...))`` (None would differ).
    safe_arguments: tuple[str, ...] = ()
    # "async": only inside an ``async def`` (the replacement awaits); "sync": only outside one (the
    # replacement is a coroutine function there); "any".
    scope: str = "any"

    def __init__(
        self, replacement: str, safe: bool, import_from: tuple[str, str] | None = None, arguments: str = "any",
        safe_arguments: tuple[str, ...] = (), scope: str = "any",
    ) -> None:
        self.__dict__.update(replacement=replacement, safe=safe, import_from=import_from, arguments=arguments,
            safe_arguments=safe_arguments, scope=scope)

    def fits(self, args: str) -> bool:
        if self.arguments == "any":
            return True
        count, keywords = _count_arguments(args)
        if self.arguments == "none":
            return count == 0
        if self.arguments == "one":
            return count == 1 and not keywords
        return count > 0

    def safe_for(self, args: str) -> bool:
        import re

        return self.safe or any(re.fullmatch(pattern, args.strip()) for pattern in self.safe_arguments)


def _count_arguments(args: str) -> tuple[int, bool]:
    """(number of arguments, any keyword or unpacking) of a call's argument text."""
    import ast

    if not args.strip():
        return 0, False
    try:
        call = ast.parse(f"f({args})", mode="eval").body
    except SyntaxError:
        return -1, True
    assert isinstance(call, ast.Call)
    unpacked = any(isinstance(a, ast.Starred) for a in call.args)
    return len(call.args) + len(call.keywords), bool(call.keywords) or unpacked


class FrameworkProfile(FrozenRecord):
    """What lint knows of one framework: its orchestration markers, step calls, context types and fixes."""

    name: str
    # Byte strings whose presence makes a file worth parsing (import names, decorator names).
    screen: tuple[bytes, ...] = ()
    # Import roots of the framework; a module importing one of them "uses" the framework.
    modules: tuple[str, ...] = ()
    # Functions (or methods) decorated with one of these are orchestration entry points.
    orchestration_decorators: tuple[str, ...] = ()
    # Classes decorated with one of these hold orchestration handlers ...
    orchestration_class_decorators: tuple[str, ...] = ()
    # ... namely the methods carrying one of these decorators (run, signal, update, query, init) ...
    handler_decorators: tuple[str, ...] = ()
    # ... and the methods of these names, decorated or not (Temporal runs a workflow's ``__init__``
    # on every replay).
    orchestration_methods: tuple[str, ...] = ()
    # Every method of a subclass of one of these runs as orchestration code (workflow interceptors).
    orchestration_base_classes: tuple[str, ...] = ()
    # Base classes whose instances the framework registers once and shares between runs: writing their
    # attributes from orchestration code writes state every run sees (DBOS's ``DBOSConfiguredInstance``).
    shared_instance_bases: tuple[str, ...] = ()
    # Objects that, among a constructor's arguments, make the framework record every call of what is
    # built (``create_agent(..., middleware=[RestateMiddleware()])``: each model call is journaled), so
    # calls on the built object are not effects.
    recording_arguments: tuple[str, ...] = ()
    # ``X = register(X)`` / ``register(fn)``: the first positional argument becomes orchestration code
    # (a class as if decorated with an orchestration class decorator, a function as an entry point).
    registration_calls: tuple[str, ...] = ()
    # Calls that add a node to a graph (``builder.add_node("review", review)``, also ``add_node(review)`` and
    # a list of nodes): the callable argument runs as a node, which the framework re-runs from its top when
    # a paused run resumes. Functions, methods, ``functools.partial(fn, ...)``, instances with ``__call__``
    # and the project functions a lambda calls are followed.
    node_registrations: tuple[str, ...] = ()
    # Calls that run the tools they are given as a graph node (``ToolNode(tools)``, ``create_react_agent(model,
    # tools)``): call -> position of the tools argument (also passed as ``tools=``). Each tool listed there
    # (a list literal, or a module-level name bound to one) runs as a node, re-run from its top on resume.
    tool_registrations: Mapping[str, int] = factory(dict)
    # Calls that pause a run for outside input (``interrupt(question)``): in a node, everything before the
    # last one (and in a loop holding one) runs again on resume.
    pause_calls: tuple[str, ...] = ()
    # Functions decorated with one of these are steps: recorded, so their effects are allowed.
    step_decorators: tuple[str, ...] = ()
    # Calls whose callable arguments (functions, lambdas) run as recorded steps (``ctx.run(name, fn)``).
    step_calls: tuple[str, ...] = ()
    # Calls that name a step, activity, task, node or child run by which the engine matches the recorded one
    # (qualified name -> (position of the name argument, -1 for keyword only; its keyword; what it names)):
    # ``"temporalio.workflow.execute_activity": (0, "activity", "activity")`` (RT105).
    step_names: Mapping[str, tuple[int, str, str]] = factory(dict)
    # For a ``step_names`` call whose name argument is an options mapping (``DBOS.run_step({"name": ...}, fn)``):
    # the key holding the name, in a dict display or a keyword of a call building the mapping (RT105).
    step_name_keys: Mapping[str, str] = factory(dict)
    # Calls that return what the function passed to them returns (``workflow.execute_activity(fn, ...)``),
    # so iterating their result is iterating what ``fn`` returns; step calls count too.
    result_calls: tuple[str, ...] = ()
    # The framework's context object: annotations naming it, unannotated parameter names that mean it in
    # a module using the framework, and the canonical class its methods are spelt under.
    context_types: tuple[str, ...] = ()
    context_param_names: tuple[str, ...] = ()
    context_class: str = ""
    # Which parameter of an orchestration function is the context when it is not annotated (0: the first
    # after ``self``; AWS durable handlers take ``(event, context)``, so theirs is 1).
    context_param_position: int = 0
    # Calls that are never findings in this framework's orchestration code (its deterministic APIs).
    safe_calls: frozenset[str] = frozenset()
    # Deterministic calls that raise only when made outside orchestration code (Temporal's ``workflow.now()``
    # outside a workflow): the ``except`` handlers of a ``try`` whose body makes only such calls (and imports
    # of the framework) are the "works in and out of a workflow" fallback, which never runs in orchestration
    # code, so nothing there is a finding.
    outside_only_failures: frozenset[str] = frozenset()
    # Calls that are findings only in this framework (qualified name -> category).
    extra_effects: Mapping[str, str] = factory(dict)
    # Attributes that are True while the framework replays (``context.is_replaying``): the body of
    # ``if not <flag>:`` and the ``else`` of ``if <flag>:`` run only when the code first executes, never on
    # replay (real apps guard logging and telemetry so), so nothing there is a replay finding.
    replaying_flags: tuple[str, ...] = ()
    # Calls that run the coroutines passed to them concurrently (``asyncio.gather``) ...
    concurrent_calls: tuple[str, ...] = ()
    # ... and the framework calls that are a hazard in such a coroutine: the framework numbers them when
    # they are made, so their number depends on how the coroutines interleave (``DBOS.patch``). One made
    # in a helper counts only where a call in ``concurrent_calls``'s arguments reaches it.
    order_sensitive_calls: tuple[str, ...] = ()
    # Handlers the framework runs outside the recorded history (Temporal's queries): a value read there
    # does not change what replays. Findings of ``query_categories`` there are worded with ``query_words``
    # ("in a query handler, where ...") instead of "in workflow code".
    query_decorators: tuple[str, ...] = ()
    query_categories: tuple[str, ...] = ()
    query_words: str = ""
    # Categories of reads (clock, random, uuid) that are no finding when their value only fills log output
    # (``lint.log_flow``): re-running the code logs another value, and nothing the engine records or compares
    # depends on it. An engine that rejects the read itself (Temporal's sandbox) lists none; its findings on
    # such reads are worded with ``log_only_words`` ("in workflow code, only for a log line, ...").
    log_only_harmless: tuple[str, ...] = ()
    log_only_words: str = ""
    # Sleeps that are durable timers here; a framework with none has no sleep findings at all.
    durable_sleeps: tuple[str, ...] = ()
    # Category -> what to use instead, quoted in messages ("use workflow.now()"); the context parameter
    # is spelt as context_param_names[0] and respelt with the function's own parameter name.
    replacements: Mapping[str, str] = factory(dict)
    # Qualified name of a flagged call -> its direct rewrite.
    fixes: Mapping[str, FixTemplate | tuple[FixTemplate, ...]] = factory(dict)
    # Names that denote the same type as another in this framework: re-exports of a class
    # (``restate.workflow.Workflow`` is ``restate.Workflow``) and factories returning an instance of
    # their class (``dbos.SQLAlchemyDatasource.create`` returns a ``dbos.SQLAlchemyDatasource``).
    type_aliases: Mapping[str, str] = factory(dict)
    # Methods that return the object they are called on, so a chain of them is still that object
    # (``StateGraph(S).add_node("a", a).add_node("b", b)``: each later ``add_node`` is called on the graph).
    builder_methods: tuple[str, ...] = ()
    # Context managers whose argument becomes the id of the child run started inside them, and the calls that
    # start one (``with SetWorkflowID(key): DBOS.start_workflow(child)``), for a framework that records a child
    # under the parent's operation and on recovery returns the recorded one whatever id is given: a fresh value
    # whose only use is that argument is not a finding (``lint.value_flows``).
    child_id_scopes: tuple[str, ...] = ()
    child_starts: tuple[str, ...] = ()

    def __init__(
        self, name: str, screen: tuple[bytes, ...] = (), modules: tuple[str, ...] = (),
        orchestration_decorators: tuple[str, ...] = (), orchestration_class_decorators: tuple[str, ...] = (),
        handler_decorators: tuple[str, ...] = (), orchestration_methods: tuple[str, ...] = (),
        orchestration_base_classes: tuple[str, ...] = (), shared_instance_bases: tuple[str, ...] = (),
        recording_arguments: tuple[str, ...] = (), registration_calls: tuple[str, ...] = (),
        node_registrations: tuple[str, ...] = (), tool_registrations: Mapping[str, int] | None = None,
        pause_calls: tuple[str, ...] = (),
        step_decorators: tuple[str, ...] = (), step_calls: tuple[str, ...] = (),
        step_names: Mapping[str, tuple[int, str, str]] | None = None, step_name_keys: Mapping[str, str] | None = None,
        result_calls: tuple[str, ...] = (), context_types: tuple[str, ...] = (),
        context_param_names: tuple[str, ...] = (), context_class: str = "", context_param_position: int = 0,
        safe_calls: frozenset[str] = frozenset(), outside_only_failures: frozenset[str] = frozenset(),
        extra_effects: Mapping[str, str] | None = None, replaying_flags: tuple[str, ...] = (),
        concurrent_calls: tuple[str, ...] = (), order_sensitive_calls: tuple[str, ...] = (),
        query_decorators: tuple[str, ...] = (), query_categories: tuple[str, ...] = (), query_words: str = "",
        log_only_harmless: tuple[str, ...] = (), log_only_words: str = "", durable_sleeps: tuple[str, ...] = (),
        replacements: Mapping[str, str] | None = None,
        fixes: Mapping[str, FixTemplate | tuple[FixTemplate, ...]] | None = None,
        type_aliases: Mapping[str, str] | None = None, builder_methods: tuple[str, ...] = (),
        child_id_scopes: tuple[str, ...] = (), child_starts: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(name=name, screen=screen, modules=modules,
            orchestration_decorators=orchestration_decorators,
            orchestration_class_decorators=orchestration_class_decorators, handler_decorators=handler_decorators,
            orchestration_methods=orchestration_methods, orchestration_base_classes=orchestration_base_classes,
            shared_instance_bases=shared_instance_bases, recording_arguments=recording_arguments,
            registration_calls=registration_calls, node_registrations=node_registrations,
            tool_registrations={} if tool_registrations is None else tool_registrations, pause_calls=pause_calls,
            step_decorators=step_decorators, step_calls=step_calls,
            step_names={} if step_names is None else step_names,
            step_name_keys={} if step_name_keys is None else step_name_keys, result_calls=result_calls,
            context_types=context_types, context_param_names=context_param_names, context_class=context_class,
            context_param_position=context_param_position, safe_calls=safe_calls,
            outside_only_failures=outside_only_failures,
            extra_effects={} if extra_effects is None else extra_effects, replaying_flags=replaying_flags,
            concurrent_calls=concurrent_calls, order_sensitive_calls=order_sensitive_calls,
            query_decorators=query_decorators, query_categories=query_categories, query_words=query_words,
            log_only_harmless=log_only_harmless, log_only_words=log_only_words, durable_sleeps=durable_sleeps,
            replacements={} if replacements is None else replacements,
            fixes={} if fixes is None else fixes, type_aliases={} if type_aliases is None else type_aliases,
            builder_methods=builder_methods, child_id_scopes=child_id_scopes, child_starts=child_starts)

    def fingerprint(self) -> str:
        """A stable text of everything that can change a lint result, for cache keys."""
        parts = []
        for name in field_names(self):
            value = getattr(self, name)
            if isinstance(value, (Mapping, frozenset)):
                value = sorted(value.items()) if isinstance(value, Mapping) else sorted(value)
            parts.append(f"{name}={value!r}")
        return ";".join(parts)


def config_profile(config: Config) -> FrameworkProfile | None:
    """The profile of a home-grown engine declared in configuration, or None when none is declared."""
    if not config.orchestration_decorators and not config.step_decorators:
        return None
    names = config.orchestration_decorators + config.step_decorators
    return FrameworkProfile(
        name=CUSTOM_PROFILE_NAME,
        screen=tuple(sorted({name.rsplit(".", 1)[-1].encode() for name in names})),
        modules=tuple(sorted({name.split(".", 1)[0] for name in names})),
        orchestration_decorators=config.orchestration_decorators,
        step_decorators=config.step_decorators,
        replacements={
            "clock": "a time recorded by a step",
            "random": "a value recorded by a step",
            "uuid": "an id recorded by a step",
        },
    )
