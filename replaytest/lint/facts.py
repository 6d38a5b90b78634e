"""What the batched pass knows while it walks one module, and the part of it rules may use.

* ``Binding`` — what a name is bound to in a scope (a qualified name, an instance of a type, a value
  kind such as a set or a listing, a value that differs per attempt, or just a local);
* ``Pending`` — an effect, call site or finding waiting for its source position;
* ``FunctionBuilder`` — the summary of the function being walked, filled in as the walk goes;
* ``ModuleFacts`` — the surface a structural rule's hooks receive (nodes are CPython ``ast`` nodes) (``Rule.on_call`` and friends): name
  resolution, value kinds, the current function, and the ways to report what the rule found. The
  collector implements it; rules never see the collector itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from replaytest.records import Record, factory

if TYPE_CHECKING:
    import ast

    from replaytest.lint.rule import Rule
    from replaytest.lint.syntax import Arg, SourceText

# (kind, value): ("q", qualified name) | ("inst", type) | ("set" | "listing" | "dict" | "str", None) |
# ("taint", how the value differs per attempt) | ("local", None)
Binding = tuple
LOCAL: Binding = ("local", None)


class Pending(Record):
    """An effect or call site waiting for its position."""

    node: ast.AST
    rule: Rule | None
    subject: str
    qualname: str
    frameworks: tuple[str, ...] = ()
    args: tuple[Arg, ...] = ()
    unless_given: str = ""
    given: tuple[str, ...] = ()
    unit: str = ""
    # Effects: a hazard only in gathered coroutines (``Effect.gathered_only``); call sites: made in the
    # arguments of ``asyncio.gather`` (``CallSite.gathered``).
    gathered: bool = False
    # Effects: the value read only fills log output (``Effect.log_only``).
    log_only: bool = False
    # Call sites: the arguments carrying a value from the run's config (``CallSite.config_args``).
    config_args: tuple[tuple[str, str], ...] = ()
    # Guards on the function's parameters, argument values and where the value goes (``Effect.when``,
    # ``CallSite.values``, ``Effect.flows``).
    when: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    flows: tuple[str, ...] = ()

    def __init__(
        self, node: ast.AST, rule: Rule | None, subject: str, qualname: str, frameworks: tuple[str, ...] = (),
        args: tuple[Arg, ...] = (), unless_given: str = "", given: tuple[str, ...] = (), unit: str = "",
        gathered: bool = False, log_only: bool = False, config_args: tuple[tuple[str, str], ...] = (),
        when: tuple[str, ...] = (), values: tuple[str, ...] = (), flows: tuple[str, ...] = (),
    ) -> None:
        self.node = node
        self.rule = rule
        self.subject = subject
        self.qualname = qualname
        self.frameworks = frameworks
        self.args = args
        self.unless_given = unless_given
        self.given = given
        self.unit = unit
        self.gathered = gathered
        self.log_only = log_only
        self.config_args = config_args
        self.when = when
        self.values = values
        self.flows = flows


class FunctionBuilder(Record):
    """The function being walked: its role, its scope, and what it does, as the walk finds it."""

    name: str  # qualified within the module: "OrderWorkflow.run"
    kind: str  # ORCHESTRATION, STEP or PLAIN
    framework: str
    context_param: str
    scope: dict[str, Binding]
    effects: list[Pending] = factory(list)
    calls: list[Pending] = factory(list)
    keys: list[Pending] = factory(list)
    # Re-run on failure as a whole (a retry decorator): set by the rule that knows retry decorators.
    retried: bool = False
    returns: str = ""
    # A handler run outside the recorded history (a Temporal query).
    query: bool = False
    # How many loops that re-run their body on failure enclose the statement being walked, and for
    # each local holding a value that differs per attempt, how many enclosed the place it was made.
    retry_loops: int = 0
    fresh_levels: dict[str, int] = factory(dict)
    # Locals bound to a typed value (a call's result) that was also made from a fresh one: how.
    fresh_sources: dict[str, str] = factory(dict)
    # Calls that pause the run (``interrupt(...)``) and the loops holding one: on resume a node re-runs
    # everything up to the last of them.
    pauses: list[ast.AST] = factory(list)
    pause_loops: list[ast.AST] = factory(list)
    # Names a ``global`` statement declared: assigning one writes module state.
    declared_globals: set[str] = factory(set)
    # Names a ``nonlocal`` statement declared: assigning one writes the enclosing function's variable.
    declared_nonlocals: set[str] = factory(set)
    # Tools run through a lookup (``FunctionSummary.lookups``), the locals holding a looked-up value (local ->
    # qualified module-level name looked up in) and the string-keyed project functions of its dict literals.
    lookups: list[Pending] = factory(list)
    looked_up: dict[str, str] = factory(dict)
    tool_keys: list[tuple[str, str]] = factory(list)
    # Where the locals (parameters first) come from, as ``tool_lookups.config_origin`` words it, and the tools
    # run on such values (``FunctionSummary.config_tools``).
    config_values: dict[str, str] = factory(dict)
    config_tools: list[tuple[str, Pending]] = factory(list)
    # Parameters a guard or a passed-on argument names (dropped at the end if the body rebinds one) and
    # parameters handed to a child scope (``lint.value_flows``); ``child_params`` as ``FunctionSummary.child_params``.
    param_uses: set[str] = factory(set)
    # Names the body binds (assigned, deleted, loop or ``with`` targets, imports, nested definitions), and whether
    # it defines a nested function, lambda or class (whose defaults and closures the walk does not follow).
    stored: set[str] = factory(set)
    nested: bool = False
    child_candidates: dict[str, str] = factory(dict)
    child_params: list[str] = factory(list)

    def __init__(
        self, name: str, kind: str, framework: str, context_param: str, scope: dict[str, Binding],
        effects: list[Pending] | None = None, calls: list[Pending] | None = None, keys: list[Pending] | None = None,
        retried: bool = False, returns: str = "", query: bool = False, retry_loops: int = 0,
        fresh_levels: dict[str, int] | None = None, fresh_sources: dict[str, str] | None = None,
        pauses: list[ast.AST] | None = None, pause_loops: list[ast.AST] | None = None,
        declared_globals: set[str] | None = None, declared_nonlocals: set[str] | None = None,
        lookups: list[Pending] | None = None, looked_up: dict[str, str] | None = None,
        tool_keys: list[tuple[str, str]] | None = None, config_values: dict[str, str] | None = None,
        config_tools: list[tuple[str, Pending]] | None = None, param_uses: set[str] | None = None,
        stored: set[str] | None = None, nested: bool = False, child_candidates: dict[str, str] | None = None,
        child_params: list[str] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.framework = framework
        self.context_param = context_param
        self.scope = scope
        self.effects = [] if effects is None else effects
        self.calls = [] if calls is None else calls
        self.keys = [] if keys is None else keys
        self.retried = retried
        self.returns = returns
        self.query = query
        self.retry_loops = retry_loops
        self.fresh_levels = {} if fresh_levels is None else fresh_levels
        self.fresh_sources = {} if fresh_sources is None else fresh_sources
        self.pauses = [] if pauses is None else pauses
        self.pause_loops = [] if pause_loops is None else pause_loops
        self.declared_globals = set() if declared_globals is None else declared_globals
        self.declared_nonlocals = set() if declared_nonlocals is None else declared_nonlocals
        self.lookups = [] if lookups is None else lookups
        self.looked_up = {} if looked_up is None else looked_up
        self.tool_keys = [] if tool_keys is None else tool_keys
        self.config_values = {} if config_values is None else config_values
        self.config_tools = [] if config_tools is None else config_tools
        self.param_uses = set() if param_uses is None else param_uses
        self.stored = set() if stored is None else stored
        self.nested = nested
        self.child_candidates = {} if child_candidates is None else child_candidates
        self.child_params = [] if child_params is None else child_params


class ModuleFacts(Protocol):
    """What a structural rule may ask about the module being walked, and how it reports."""

    module: str  # the module's dotted name
    function: FunctionBuilder | None  # the function being walked (None at module or class level)
    class_names: set[str]  # classes defined at the module's top level
    containers: set[str]  # module-level names bound to mutable containers
    source: SourceText  # the module's text: ``source.code(node)``, ``syntax.short_text(source, node)``

    def resolve(self, node: ast.expr) -> str | None:
        """The qualified name an expression denotes (or the type of the instance it evaluates to)."""

    def lookup(self, name: str) -> Binding | None:
        """The binding of a name in the enclosing scopes, then the module."""

    def is_local(self, name: str) -> bool:
        """Whether a name is bound in an enclosing function scope (not at module level)."""

    def kind_of(self, node: ast.expr) -> str | None:
        """"set", "listing", "dict" (built from one of those), "str", or None."""

    def holds_one(self, node: ast.expr) -> bool:
        """Whether a local name holds at most one element here (``if len(s) == 1:``, or after
        ``if len(s) != 1: raise``, with nothing since that may change it)."""

    def returned_function(self, node: ast.expr) -> str | None:
        """For a framework call returning what the function passed to it returns
        (``workflow.execute_activity(fetch_tags, ...)``), that function's qualified name."""

    def fresh_value(self, node: ast.expr) -> tuple[str, int] | None:
        """How a value comes to differ per attempt (the call that makes it so), and how many retry loops
        enclosed the place it was made; None for a value made the same way on every attempt."""

    def is_project_candidate(self, qualname: str) -> bool:
        """Whether a qualified name may be project code (resolved across modules later)."""

    def module_container(self, node: ast.expr) -> str | None:
        """The module-level container a name denotes in a function (not shadowed by a local), or None."""

    def class_outlives_run(self, class_qualname: str) -> bool:
        """Whether a class of this module lives longer than one orchestration run: defined at the top level,
        or inside a function that is not orchestration code (a factory or a test function); a class defined
        in an orchestration function's body is that run's own."""

    def shares_instances(self, class_qualname: str) -> bool:
        """Whether instances of a class of this module outlive one run (a base a profile lists in
        ``shared_instance_bases``): their attributes are state every run shares."""

    def step_name(self, node: ast.Call, qualname: str | None) -> tuple[ast.expr, str] | None:
        """For a call that names a step, activity, task or node the engine matches recorded ones by (a
        profile's ``step_names``): the argument holding the name and what it names ("activity"); else None."""

    def flag(self, tag: str, node: ast.AST) -> None:
        """Remember ``tag`` for ``node`` for the rest of the module's walk (``flagged`` asks)."""

    def flagged(self, tag: str, node: ast.AST) -> bool: ...

    def report(self, rule: Rule, node: ast.AST, subject: str, qualname: str) -> None:
        """An effect of ``rule`` at ``node`` in the current function; dropped outside functions and in
        steps (a step's body is recorded, so its effects are fine)."""

    def report_key(self, rule: Rule, node: ast.AST, key: str, source: str, unit: str) -> None:
        """A finding reported wherever it is, steps included: ``key`` made fresh by ``source`` inside the
        retried ``unit`` (empty: the function's callers decide at resolution whether it is in one)."""

    def defer(self, node: ast.AST, subject: str, target: str) -> None:
        """A call site decided at resolution, when the other module's summary is known: ``target`` is a
        project name with a pseudo-method (``helper.__iter__``, ``CACHE.__setitem__``, ``Stats.__setattr__``)."""
