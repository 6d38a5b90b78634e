"""The analyzer's data: per-module summaries (what the cache stores) and diagnostics (what reporters print).

A ``ModuleSummary`` depends only on one file's bytes, its module name, the configuration and the rule
set, so it can be cached and the whole-program resolution can run on summaries alone. Summaries convert
to and from plain JSON-able structures (``to_json`` / ``summary_from_json``), and to and from the cache entry's
form, which keeps each function's bulky fields as JSON text of their own (``summary_to_entry`` /
``summary_from_entry``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from replaytest.records import FrozenRecord, Record, factory

# Methods that change a list, dict, set or deque in place (writes to module state when on a global).
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault", "popitem",
    "appendleft", "extendleft", "popleft", "sort", "reverse",
    # Synchronisation primitives and queues held at module level (``READY.release()``, ``DONE.set()``,
    # ``JOBS.put_nowait(x)``): their state is shared by every run on the worker, like a container's.
    # (``acquire`` is not here: a blocking one is RT302's, which reports waiting on thread primitives.)
    "release", "set", "put", "put_nowait", "get_nowait", "notify", "notify_all",
})

ORCHESTRATION = "orchestration"
STEP = "step"
PLAIN = "plain"


class Span(FrozenRecord):
    """1-based line and column of the start and end of a source range."""

    line: int
    column: int
    end_line: int
    end_column: int

    def __init__(self, line: int, column: int, end_line: int, end_column: int) -> None:
        self.__dict__.update(line=line, column=column, end_line=end_line, end_column=end_column)


class Effect(FrozenRecord):
    """A nondeterministic or effectful thing a function does directly, as found by one rule.

    ``frameworks`` limits the effect to those profiles (empty: every profile); ``args`` is the call's
    argument text, kept for fix templates.
    """

    rule: str
    category: str
    subject: str  # how the source spells it, e.g. "dt.datetime.now()"
    qualname: str  # what it resolves to, e.g. "datetime.datetime.now"
    span: Span
    frameworks: tuple[str, ...] = ()
    args: str = ""
    # A field default factory runs only when the field is not passed: "name:position" (-1: keyword only).
    unless_given: str = ""
    # For findings about retries (fresh idempotency keys): the retried unit the value is made in, as
    # words ("step charge", "retry loop"); empty until the unit is known.
    unit: str = ""
    # A hazard only in a coroutine run concurrently with others (``asyncio.gather``): a call the framework
    # numbers when it is made (DBOS's ``DBOS.patch``), made in a helper; a gathered call site turns it on.
    gathered_only: bool = False
    # The value read only fills log output (``lint.log_flow``): a finding only where the engine rejects the
    # read itself (a profile's ``log_only_harmless`` says where it does not).
    log_only: bool = False
    # Conditions on the function's own parameters under which the effect runs at all (``lint.guards``):
    # "+force:-1:f" (only when ``force`` is truthy), "-dry:0:t" (only when ``dry`` is falsy).
    when: tuple[str, ...] = ()
    # Where a fresh value goes, when it goes only to places named here (``lint.value_flows``): "return",
    # "child:<framework>" (the id of a child run), "param:<function>:<keyword or #position>"; empty: anywhere.
    flows: tuple[str, ...] = ()

    def __init__(
        self, rule: str, category: str, subject: str, qualname: str, span: Span, frameworks: tuple[str, ...] = (),
        args: str = "", unless_given: str = "", unit: str = "", gathered_only: bool = False, log_only: bool = False,
        when: tuple[str, ...] = (), flows: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(rule=rule, category=category, subject=subject, qualname=qualname, span=span,
            frameworks=frameworks, args=args, unless_given=unless_given, unit=unit, gathered_only=gathered_only,
            log_only=log_only, when=when, flows=flows)


class CallSite(FrozenRecord):
    """A call from a function to something that may be a project function (resolved later)."""

    target: str
    span: Span
    subject: str
    # The arguments passed: "#<positional count>" and the keyword names ("#*" when unpacked).
    given: tuple[str, ...] = ()
    # A field's default factory (a project function) called by a generated ``__init__``: it runs only
    # when the constructor call does not pass the field "name:position" (as ``Effect.unless_given``).
    unless_given: str = ""
    # Made in the arguments of a call that runs its coroutines concurrently (``asyncio.gather(a(), b())``).
    gathered: bool = False
    # The arguments carrying a value from the run's config (``lint.tool_lookups``), as (slot, origin): the
    # slot "#<position>" or the keyword, the origin as ``config_origin`` words it.
    config_args: tuple[tuple[str, str], ...] = ()
    # The calling function's conditions on its own parameters under which the call is made (``Effect.when``).
    when: tuple[str, ...] = ()
    # What some arguments are (``lint.guards``): "force=f" / "#0=t" (a falsy / truthy literal), "force=@force:-1:f"
    # (the caller's own parameter, spelt as in a condition, passed on).
    values: tuple[str, ...] = ()
    # Where the call's result goes, when only to places ``Effect.flows`` names ("return": returned as is).
    flows: tuple[str, ...] = ()

    def __init__(
        self, target: str, span: Span, subject: str, given: tuple[str, ...] = (), unless_given: str = "",
        gathered: bool = False, config_args: tuple[tuple[str, str], ...] = (), when: tuple[str, ...] = (),
        values: tuple[str, ...] = (), flows: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(target=target, span=span, subject=subject, given=given, unless_given=unless_given,
            gathered=gathered, config_args=config_args, when=when, values=values, flows=flows)

    def passes(self, unless_given: str) -> bool:
        """Whether this call passes the field ``name:position`` (so its default factory does not run)."""
        name, _, position = unless_given.rpartition(":")
        if name in self.given:
            return True
        if "#*" in self.given:
            return False  # unpacked arguments may or may not cover it: assume the factory runs
        positional = next((int(g[1:]) for g in self.given if g.startswith("#")), 0)
        return 0 <= int(position) < positional


class _Deferred:
    """The default of a ``FunctionSummary`` field that a summary read from the cache decodes when first read.

    A whole-project run reads every module's summary but follows the calls of few functions (sdk-python: 156
    summaries, 4,321 functions and about 10,000 call sites, of which a warm one-file run reads the fields of 1,228
    functions; parsing and building the rest was most of its decoding). ``summary_from_entry`` therefore leaves the
    bulky fields (``DEFERRED_FIELDS``) of each function as the entry's JSON text of them under ``PACKED`` in its
    ``__dict__`` (``summary_from_json``: as their JSON lists); the first read of any of them finds no value there,
    comes here, and decodes them all. A function built by ``__init__`` holds every field, so this is never
    consulted for it; read on the class, the field is its default, as for a plain default."""

    __slots__ = ("default", "name")

    def __init__(self, default: Any) -> None:
        self.default = default
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self.default
        packed = instance.__dict__.pop(PACKED, None)
        if packed is None:  # not a field this instance was given: as for any missing attribute
            raise AttributeError(f"{type(instance).__name__!r} object has no attribute {self.name!r}")
        if isinstance(packed, bytes):  # a cache entry's JSON text of them (``summary_from_entry``)
            packed = json.loads(packed)
        instance.__dict__.update(_decode_deferred(*packed))
        return instance.__dict__[self.name]


class FunctionSummary(FrozenRecord):
    """One function of a module as the analyzer saw it: its kind, direct effects and calls."""

    name: str  # qualified within the module: "OrderWorkflow.run"
    kind: str = PLAIN
    framework: str = ""
    context_param: str = ""
    effects: tuple[Effect, ...] = _Deferred(())  # type: ignore[assignment]
    calls: tuple[CallSite, ...] = _Deferred(())  # type: ignore[assignment]
    # Fresh idempotency keys made here, findings only when the function runs inside a retried unit
    # (called from a step or a retry-decorated function); keys made in a unit itself are module findings.
    keys: tuple[Effect, ...] = ()
    # Decorated with a retry decorator (tenacity, backoff, stamina): the body is re-run on failure.
    retried: bool = False
    # The type of what the function returns, when it returns an instance of a known class
    # (``return init_chat_model(...)``), so calls on its result resolve in the caller.
    returns: str = ""
    # Where the function pauses the run (``interrupt(...)`` calls) and the loops holding such a call: a
    # graph node re-runs from its top on resume, up to the end of the last of these.
    pauses: tuple[Span, ...] = _Deferred(())  # type: ignore[assignment]
    pause_loops: tuple[Span, ...] = _Deferred(())  # type: ignore[assignment]
    # A handler the framework runs outside the recorded history (``FrameworkProfile.query_decorators``).
    query: bool = False
    # Tools run through a lookup (``tools_by_name[name].invoke(args)``): ``target`` is the qualified
    # module-level name looked up in; which tools it may hold is resolved later (``lint.tool_lookups``).
    lookups: tuple[CallSite, ...] = _Deferred(())  # type: ignore[assignment]
    # Project functions this function keys by a string in a dict literal (``{"send": send_tool}``), as
    # (key, qualified name): a call passing a list of those keys selects the tools they name.
    tool_keys: tuple[tuple[str, str], ...] = _Deferred(())  # type: ignore[assignment]
    # Tools run on a value from the run's config or from a parameter (``tool.ainvoke(args)``, ``tool(args)``),
    # as (origin, call site): the origin as ``lint.tool_lookups.config_origin`` words it. Their code cannot be
    # seen; one from a parameter is the config's where a caller passes a value from the config there.
    config_tools: tuple[tuple[str, CallSite], ...] = _Deferred(())  # type: ignore[assignment]
    # Parameters whose only use is to name a child run started in a framework's id scope (``with
    # SetWorkflowID(key): DBOS.start_workflow(...)``), as "name:position:framework" (``lint.value_flows``).
    child_params: tuple[str, ...] = ()

    def __init__(
        self, name: str, kind: str = PLAIN, framework: str = "", context_param: str = "",
        effects: tuple[Effect, ...] = (), calls: tuple[CallSite, ...] = (), keys: tuple[Effect, ...] = (),
        retried: bool = False, returns: str = "", pauses: tuple[Span, ...] = (), pause_loops: tuple[Span, ...] = (),
        query: bool = False, lookups: tuple[CallSite, ...] = (), tool_keys: tuple[tuple[str, str], ...] = (),
        config_tools: tuple[tuple[str, CallSite], ...] = (), child_params: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(name=name, kind=kind, framework=framework, context_param=context_param, effects=effects,
            calls=calls, keys=keys, retried=retried, returns=returns, pauses=pauses, pause_loops=pause_loops,
            query=query, lookups=lookups, tool_keys=tool_keys, config_tools=config_tools, child_params=child_params)


class GraphNode(FrozenRecord):
    """A function a module adds to a graph as a node (``builder.add_node("review", review)``)."""

    name: str  # the node's name as the graph knows it
    target: str  # the qualified name of the function (or ``Class.__call__``) that runs as the node
    span: Span  # the registering call
    framework: str

    def __init__(self, name: str, target: str, span: Span, framework: str) -> None:
        self.__dict__.update(name=name, target=target, span=span, framework=framework)


class ClassSummary(FrozenRecord):
    """A class of a module: its bases and method names."""

    name: str
    bases: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()

    def __init__(self, name: str, bases: tuple[str, ...] = (), methods: tuple[str, ...] = ()) -> None:
        self.__dict__.update(name=name, bases=bases, methods=methods)


class ModuleSummary(FrozenRecord):
    """What one file's bytes tell the whole-program resolution (cached by content)."""

    module: str
    path: str
    # Module-level names bound by imports: local name -> qualified name (followed for re-exports).
    aliases: dict[str, str] = factory(dict)
    # Module-level names bound to instances: name -> type ("client" -> "openai.AsyncOpenAI"), so a call
    # through an imported instance (``from app.llm import client``) resolves in the importing module.
    exports: dict[str, str] = factory(dict)
    # Module-level mutable containers (lists, dicts, sets ...), so a mutation from another module is seen.
    containers: tuple[str, ...] = ()
    functions: dict[str, FunctionSummary] = factory(dict)
    classes: dict[str, ClassSummary] = factory(dict)
    # Findings reported wherever they are, orchestration or not (fresh idempotency keys made in a retried unit).
    findings: tuple[Effect, ...] = ()
    # Why the file could not be analysed (syntax error, bad encoding), as a syntax effect.
    error: Effect | None = None
    # Functions passed to a framework's step calls (``ctx.step("send", send_email, ...)``): steps too.
    step_targets: tuple[str, ...] = ()
    # Functions this module adds to a graph as nodes.
    graph_nodes: tuple[GraphNode, ...] = ()
    # The Python whose grammar the file needed ("3.12"), when the running one rejected it and lint read it
    # rewritten (``newer_grammar``); empty when the running Python parsed it.
    grammar: str = ""
    # Module-level names bound to a collection of tools, and how (``lint.tool_lookups`` reads these):
    # ["members", [qualified names]], ["of", qualified name of another such name] or
    # ["call", project function, [string literals passed], [what each argument holds, as these]].
    tool_sets: dict[str, list[Any]] = factory(dict)

    def __init__(
        self, module: str, path: str, aliases: dict[str, str] | None = None, exports: dict[str, str] | None = None,
        containers: tuple[str, ...] = (), functions: dict[str, FunctionSummary] | None = None,
        classes: dict[str, ClassSummary] | None = None, findings: tuple[Effect, ...] = (), error: Effect | None = None,
        step_targets: tuple[str, ...] = (), graph_nodes: tuple[GraphNode, ...] = (), grammar: str = "",
        tool_sets: dict[str, list[Any]] | None = None,
    ) -> None:
        self.__dict__.update(module=module, path=path, aliases={} if aliases is None else aliases,
            exports={} if exports is None else exports, containers=containers,
            functions={} if functions is None else functions, classes={} if classes is None else classes,
            findings=findings, error=error, step_targets=step_targets, graph_nodes=graph_nodes, grammar=grammar,
            tool_sets={} if tool_sets is None else tool_sets)


class Fix(FrozenRecord):
    """A replacement a finding offers (``safe``: applied by ``fix`` without ``--unsafe-fixes``)."""

    safe: bool
    replacement: str
    import_from: tuple[str, str] | None = None
    scope: str = "any"  # "async" / "sync": where the replacement is valid (see FixTemplate.scope)

    def __init__(
        self, safe: bool, replacement: str, import_from: tuple[str, str] | None = None, scope: str = "any",
    ) -> None:
        self.__dict__.update(safe=safe, replacement=replacement, import_from=import_from, scope=scope)

    def to_json(self) -> dict[str, Any]:
        return {"safe": self.safe, "replacement": self.replacement}


class Related(FrozenRecord):
    """Another line a finding stands for: a further hazard of its rule behind the same helper call, or another
    call site reaching the same helper line (``also at``; SARIF ``relatedLocations``)."""

    path: str  # as ``Diagnostic.path``
    line: int
    column: int
    message: str  # what is there: "time.time()", "call site in app.wf.Flow.run"

    def __init__(self, path: str, line: int, column: int, message: str) -> None:
        self.__dict__.update(path=path, line=line, column=column, message=message)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "column": self.column, "message": self.message}


class Diagnostic(FrozenRecord):
    """One finding as reporters print it."""

    path: str  # relative to the working directory, POSIX separators
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    category: str
    message: str
    framework: str | None = None
    fix: Fix | None = None
    trace: tuple[str, ...] = ()
    severity: str = "error"
    # The orchestration function the finding is in (not part of the JSON contract; feeds the fingerprint).
    scope: str = ""
    # Files of the helpers in ``trace[1:-1]`` (display paths, for SARIF code flows; not in the JSON contract).
    trace_paths: tuple[str, ...] = ()
    # Stable identity independent of line numbers (baseline, SARIF partialFingerprints).
    fingerprint: str = ""
    # For a finding reached through a helper: where the root cause is (file path as read, line, column),
    # so call sites reaching the same helper line are reported once and a suppression there counts.
    root: tuple[str, int, int] | None = None
    # Appended to ``message`` after the fingerprint is taken (it names lines: "and 1 more: os.getenv() at
    # app/config.py:7"), so the fingerprint survives edits elsewhere; not in the JSON contract.
    message_tail: str = ""
    # Every other line this finding stands for (not in the fingerprint: lines move with edits elsewhere).
    related: tuple[Related, ...] = ()

    def __init__(
        self, path: str, line: int, column: int, end_line: int, end_column: int, rule: str, category: str, message: str,
        framework: str | None = None, fix: Fix | None = None, trace: tuple[str, ...] = (), severity: str = "error",
        scope: str = "", trace_paths: tuple[str, ...] = (), fingerprint: str = "",
        root: tuple[str, int, int] | None = None, message_tail: str = "", related: tuple[Related, ...] = (),
    ) -> None:
        self.__dict__.update(path=path, line=line, column=column, end_line=end_line, end_column=end_column, rule=rule,
            category=category, message=message, framework=framework, fix=fix, trace=trace, severity=severity,
            scope=scope, trace_paths=trace_paths, fingerprint=fingerprint, root=root, message_tail=message_tail,
            related=related)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.rule)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "message": self.message,
            "framework": self.framework,
            "fix": self.fix.to_json() if self.fix else None,
            "trace": list(self.trace),
            "also_at": [place.to_json() for place in self.related],
        }


class LintResult(Record):
    """What ``lint_paths`` returns: diagnostics sorted by path, line, column, rule."""

    diagnostics: list[Diagnostic]
    files_checked: int
    # Files that could not be checked (syntax errors, unreadable files, internal errors).
    errors: int = 0
    internal_errors: int = 0
    # Path arguments that could not be used (missing), as "path: problem" messages.
    problems: list[str] = factory(list)
    # Things the user should know that are not findings (a process pool that fell back to serial).
    notes: list[str] = factory(list)
    # Comments ignored as ruff ignores them, as "path:line: why" (a file-level exemption after code): shown
    # on stderr as warnings, never an error and never a finding.
    warnings: list[str] = factory(list)
    # sha256 of each file's bytes as this run read them (display path -> hex), so a fix can tell whether
    # a file changed since (an editor saving it) before rewriting it.
    source_digests: dict[str, str] = factory(dict)

    def __init__(
        self, diagnostics: list[Diagnostic], files_checked: int, errors: int = 0, internal_errors: int = 0,
        problems: list[str] | None = None, notes: list[str] | None = None, warnings: list[str] | None = None,
        source_digests: dict[str, str] | None = None,
    ) -> None:
        self.diagnostics = diagnostics
        self.files_checked = files_checked
        self.errors = errors
        self.internal_errors = internal_errors
        self.problems = [] if problems is None else problems
        self.notes = [] if notes is None else notes
        self.warnings = [] if warnings is None else warnings
        self.source_digests = {} if source_digests is None else source_digests


# --- JSON conversion for the cache -------------------------------------------------------------


def _span_json(span: Span) -> list[int]:
    return [span.line, span.column, span.end_line, span.end_column]


def _effect_json(effect: Effect) -> list[Any]:
    return [effect.rule, effect.category, effect.subject, effect.qualname, _span_json(effect.span),
            list(effect.frameworks), effect.args, effect.unless_given, effect.unit, effect.gathered_only,
            effect.log_only, list(effect.when), list(effect.flows)]


def _effect_from(data: list[Any]) -> Effect:
    (rule, category, subject, qualname, span, frameworks, args, unless_given, unit, gathered_only, log_only, when,
     flows) = data
    return Effect(rule, category, subject, qualname, Span(*span), tuple(frameworks), args, unless_given, unit,
                  gathered_only, log_only, tuple(when), tuple(flows))


def summary_to_json(summary: ModuleSummary) -> dict[str, Any]:
    return {
        "module": summary.module,
        "path": summary.path,
        "aliases": summary.aliases,
        "exports": summary.exports,
        "containers": list(summary.containers),
        "functions": [
            [f.name, f.kind, f.framework, f.context_param, [_effect_json(e) for e in f.effects],
             [[c.target, _span_json(c.span), c.subject, list(c.given), c.unless_given, c.gathered,
               [list(p) for p in c.config_args], list(c.when), list(c.values), list(c.flows)] for c in f.calls],
             [_effect_json(e) for e in f.keys], f.retried, f.returns,
             [_span_json(p) for p in f.pauses], [_span_json(p) for p in f.pause_loops], f.query,
             [[c.target, _span_json(c.span), c.subject] for c in f.lookups], [list(k) for k in f.tool_keys],
             [[origin, c.target, _span_json(c.span), c.subject] for origin, c in f.config_tools],
             list(f.child_params)]
            for f in summary.functions.values()
        ],
        "classes": [[c.name, list(c.bases), list(c.methods)] for c in summary.classes.values()],
        "findings": [_effect_json(e) for e in summary.findings],
        "error": _effect_json(summary.error) if summary.error else None,
        "step_targets": list(summary.step_targets),
        "graph_nodes": [[n.name, n.target, _span_json(n.span), n.framework] for n in summary.graph_nodes],
        "grammar": summary.grammar,
        "tool_sets": summary.tool_sets,
    }


# Where a function read from the cache keeps its still-encoded fields (``_Deferred``), and which they are.
PACKED = "_packed"
DEFERRED_FIELDS = ("effects", "calls", "pauses", "pause_loops", "lookups", "tool_keys", "config_tools")


def _decode_deferred(effects: list[Any], calls: list[Any], pauses: list[Any], pause_loops: list[Any],
                     lookups: list[Any], tool_keys: list[Any], config_tools: list[Any]) -> dict[str, Any]:
    return {
        "effects": tuple(_effect_from(e) for e in effects),
        "calls": tuple(
            CallSite(target, Span(*span), subject, tuple(given), unless_given, gathered,
                     tuple((slot, origin) for slot, origin in config_args), tuple(when), tuple(values), tuple(flows))
            for target, span, subject, given, unless_given, gathered, config_args, when, values, flows in calls
        ),
        "pauses": tuple(Span(*p) for p in pauses),
        "pause_loops": tuple(Span(*p) for p in pause_loops),
        "lookups": tuple(CallSite(target, Span(*span), subject) for target, span, subject in lookups),
        "tool_keys": tuple((key, target) for key, target in tool_keys),
        "config_tools": tuple((origin, CallSite(target, Span(*span), subject))
                              for origin, target, span, subject in config_tools),
    }


def _packed_function(name: str, kind: str, framework: str, context_param: str, effects: list[Any], calls: list[Any],
                     keys: list[Any], retried: bool, returns: str, pauses: list[Any], pause_loops: list[Any],
                     query: bool, lookups: list[Any], tool_keys: list[Any], config_tools: list[Any],
                     child_params: list[str]) -> FunctionSummary:
    """A ``FunctionSummary`` from its cache entry whose bulky fields are decoded when first read."""
    function = FunctionSummary.__new__(FunctionSummary)
    function.__dict__.update(
        name=name, kind=kind, framework=framework, context_param=context_param,
        keys=tuple(_effect_from(e) for e in keys) if keys else (), retried=retried, returns=returns, query=query,
        child_params=tuple(child_params),
    )
    function.__dict__[PACKED] = (effects, calls, pauses, pause_loops, lookups, tool_keys, config_tools)
    return function


def summary_from_json(data: dict[str, Any]) -> ModuleSummary:
    functions = {fields[0]: _packed_function(*fields) for fields in data["functions"]}
    return _module_from_json(data, functions)


# One encoder for every function's text: ``json.dumps`` with options builds an encoder per call.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def summary_to_entry(summary: ModuleSummary) -> tuple[dict[str, Any], list[str]]:
    """The summary as a cache entry holds it: ``summary_to_json`` whose functions keep their eagerly decoded
    fields only, and per function the JSON text of its deferred fields (``DEFERRED_FIELDS``), parsed only
    when one of them is first read (``summary_from_entry``)."""
    data = summary_to_json(summary)
    heads, bodies = [], []
    for (name, kind, framework, context_param, effects, calls, keys, retried, returns, pauses, pause_loops, query,
         lookups, tool_keys, config_tools, child_params) in data["functions"]:
        heads.append([name, kind, framework, context_param, keys, retried, returns, query, child_params])
        bodies.append(_COMPACT.encode([effects, calls, pauses, pause_loops, lookups, tool_keys, config_tools]))
    data["functions"] = heads
    return data, bodies


def summary_from_entry(data: dict[str, Any], bodies: Sequence[bytes]) -> ModuleSummary:
    """The summary ``summary_to_entry`` wrote: ``data`` parsed, ``bodies`` the functions' deferred JSON texts,
    in order (another count is a damaged entry: ``ValueError``)."""
    heads = data["functions"]
    if len(heads) != len(bodies):
        raise ValueError("the entry's functions and their deferred fields do not match")
    functions = {}
    for (name, kind, framework, context_param, keys, retried, returns, query, child_params), body in zip(heads, bodies):
        function = FunctionSummary.__new__(FunctionSummary)
        function.__dict__.update(
            name=name, kind=kind, framework=framework, context_param=context_param,
            keys=tuple(_effect_from(e) for e in keys) if keys else (), retried=retried, returns=returns, query=query,
            child_params=tuple(child_params),
        )
        function.__dict__[PACKED] = body
        functions[name] = function
    return _module_from_json(data, functions)


def _module_from_json(data: dict[str, Any], functions: dict[str, FunctionSummary]) -> ModuleSummary:
    return ModuleSummary(
        module=data["module"],
        path=data["path"],
        aliases=dict(data["aliases"]),
        exports=dict(data["exports"]),
        containers=tuple(data["containers"]),
        functions=functions,
        classes={name: ClassSummary(name, tuple(bases), tuple(methods)) for name, bases, methods in data["classes"]},
        findings=tuple(_effect_from(e) for e in data["findings"]),
        error=_effect_from(data["error"]) if data["error"] else None,
        step_targets=tuple(data["step_targets"]),
        graph_nodes=tuple(GraphNode(name, target, Span(*span), framework)
                          for name, target, span, framework in data["graph_nodes"]),
        grammar=data.get("grammar", ""),
        tool_sets=dict(data.get("tool_sets", {})),
    )
