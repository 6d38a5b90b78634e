"""RT304: writing module-level state from orchestration code.

The rule's detection lives here: the batched pass calls its hooks for assignment and ``del`` targets
and for calls, and the rule decides whether the target is module state — a name declared ``global``, a
module-level container (``CACHE[k] = v``, ``SEEN.add(x)``), a class attribute (``Stats.runs += 1``), or
a ``nonlocal`` variable an orchestration function writes (it belongs to an enclosing function, so it
outlives the run).
Containers and classes of another project module are known only at resolution, so writes to them are
recorded as calls to ``__setitem__`` / ``__delitem__`` / ``__setattr__`` of the imported name.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from replaytest.lint.model import MUTATING_METHODS, ORCHESTRATION, STEP, Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import DEFAULT_REPLACEMENTS, Invalid, Rule
from replaytest.lint.syntax import dotted_text, first_arg_value, short_text

if TYPE_CHECKING:
    from replaytest.lint.facts import ModuleFacts


def _owning_class(facts: ModuleFacts, node: ast.expr) -> str | None:
    """The class whose attribute ``node.x`` is: a name bound to a class (``Stats``, ``cls``), or the class of
    an instance (``type(self)``, ``self.__class__``); None for anything else (an instance attribute)."""
    if isinstance(node, ast.Name):
        binding = facts.lookup(node.id)
        return binding[1] if binding is not None and binding[0] == "q" and binding[1] else None
    instance = None
    if (
        isinstance(node, ast.Call) and len(node.args) + len(node.keywords) == 1
        and facts.resolve(node.func) == "builtins.type"
    ):
        instance = first_arg_value(node)
    elif isinstance(node, ast.Attribute) and node.attr == "__class__":
        instance = node.value
    if isinstance(instance, ast.Name):
        binding = facts.lookup(instance.id)
        return binding[1] if binding is not None and binding[0] == "inst" and binding[1] else None
    return None


# In the qualified name of a ``nonlocal`` write: the variable belongs to an enclosing function.
_ENCLOSING = "<enclosing>"

# How a write is spelt in the finding's subject.
_SPELLED = {
    "assignment": "{} = ...", "item assignment": "{} = ...", "augmented assignment": "{} += ...", "del": "del {}",
}


class WritesModuleState(Rule):
    """
    ## What it does
    Finds `global` statements and mutations of module-level containers (`CACHE[key] = value`,
    `SEEN.add(x)`, `RESULTS.append(x)`), writes of class attributes (`Stats.runs += 1`,
    `type(self).runs += 1`, `cls.seen = ...`, also on a class defined inside a factory or test function)
    in orchestration code, calls that change a module-level semaphore, event, lock or queue
    (`READY.release()`, `DONE.set()`, also one only declared there, `READY: asyncio.Semaphore`, and bound
    later with `global`), and writes of a `nonlocal` variable in an orchestration function (a workflow
    defined inside a factory function).

    ## Why is this bad?
    Module state outlives one workflow run: it is shared by every workflow on the worker and survives
    between the recorded run and the replay, so the replay starts from other values. Temporal's sandbox
    reloads modules per run, so such state also silently resets.

    ## Example
    ```python
    PROCESSED.add(order_id)
    ```

    ## Use instead
    Keep the state in the workflow's own variables (instance attributes in a Temporal workflow class),
    or persist it through a step.
    """

    code = "RT304"
    name = "writes-module-state"
    category = "global-state"
    summary = "Module-level state written from orchestration code"
    what = "writes module-level state"

    # --- detection ---------------------------------------------------------------------------

    def _write(self, facts: ModuleFacts, node: ast.AST, name: str, how: str, text: str) -> None:
        """Report a write of the module's ``name``; ``how`` is the kind of write or the mutating
        method called (``"add()"``), ``text`` what is written as the source spells it."""
        spelled = _SPELLED.get(how)
        subject = spelled.format(text) if spelled else text
        qualname = f"{facts.module}.{name}" + (f".{how[:-2]}" if how.endswith("()") else "")
        facts.report(self, node, subject, qualname)

    def on_assign(self, facts: ModuleFacts, target: ast.expr, value: ast.expr | None) -> None:
        function = facts.function
        if function is None:
            return
        how = "assignment" if value is not None else "augmented assignment"
        if isinstance(target, ast.Subscript):
            self._item_write(facts, target, "item assignment", "__setitem__")
        elif isinstance(target, ast.Attribute):
            self._class_attribute_write(facts, target, how)
        elif isinstance(target, ast.Name):
            if target.id in function.declared_globals:
                self._write(facts, target, target.id, how, target.id)
            elif target.id in function.declared_nonlocals and function.kind == ORCHESTRATION:
                # The variable lives in a function enclosing the orchestration function, so it outlives
                # one run (a helper nested in the orchestration function writes that run's own variable).
                spelled = _SPELLED[how].format(target.id)
                facts.report(self, target, spelled, f"{facts.module}.{function.name}.{_ENCLOSING}.{target.id}")
            elif value is None and facts.module_container(target) is not None:
                self._write(facts, target, target.id, how, target.id)

    def on_del(self, facts: ModuleFacts, target: ast.expr) -> None:
        if isinstance(target, ast.Subscript) and facts.function is not None:
            self._item_write(facts, target, "del", "__delitem__")

    def on_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATING_METHODS:
            container = facts.module_container(func.value)
            if container is not None:
                self._write(facts, node, container, f"{func.attr}()", short_text(facts.source, node))

    def _item_write(self, facts: ModuleFacts, target: ast.Subscript, how: str, method: str) -> None:
        container = facts.module_container(target.value)
        if container is not None:
            self._write(facts, target, container, how, short_text(facts.source, target))
            return
        # ``CACHE[k] = v`` on a name imported from a project module: whether ``CACHE`` is a module-level
        # container there is known only at resolution.
        function = facts.function
        if function is None or function.kind == STEP or not isinstance(target.value, (ast.Name, ast.Attribute)):
            return
        if isinstance(target.value, ast.Name) and facts.is_local(target.value.id):
            return
        qualname = facts.resolve(target.value)
        if qualname and not qualname.startswith(f"{facts.module}.") and facts.is_project_candidate(qualname):
            facts.defer(target, f"{dotted_text(target.value)}[...]", f"{qualname}.{method}")

    def _class_attribute_write(self, facts: ModuleFacts, target: ast.Attribute, how: str) -> None:
        """``Stats.runs += 1`` / ``cls.seen = ...``: a class attribute is module state shared by every run.
        A class of another project module is recorded as a ``__setattr__`` call, decided at resolution."""
        function = facts.function
        if function is None or function.kind == STEP:
            return
        qualname = _owning_class(facts, target.value)
        if qualname is None:
            self._shared_instance_write(facts, target, how)
            return
        owner, _, class_name = qualname.rpartition(".")
        if owner == facts.module and class_name in facts.class_names:
            self._write(facts, target, class_name, how, short_text(facts.source, target))
        elif function.kind == ORCHESTRATION and qualname.startswith(f"{facts.module}.") and facts.class_outlives_run(
                qualname):
            # A workflow method of a class defined in a factory or test function: the class is made once, when
            # the workflow is registered, so every run shares it (a helper's class may be made per call).
            self._write(facts, target, qualname[len(facts.module) + 1:], how, short_text(facts.source, target))
        elif not qualname.startswith(f"{facts.module}.") and facts.is_project_candidate(qualname):
            operator = "+=" if how == "augmented assignment" else "="
            facts.defer(target, f"{short_text(facts.source, target)} {operator} ...", f"{qualname}.__setattr__")

    def _shared_instance_write(self, facts: ModuleFacts, target: ast.Attribute, how: str) -> None:
        """``self.counter += 1`` on an instance the framework shares between runs (a DBOS configured
        instance): recorded as a write of the instance's ``__dict__``."""
        if not isinstance(target.value, ast.Name):
            return
        binding = facts.lookup(target.value.id)
        if binding is None or binding[0] != "inst" or not binding[1] or not facts.shares_instances(binding[1]):
            return
        spelled = _SPELLED[how].format(short_text(facts.source, target))
        facts.report(self, target, spelled, f"{binding[1]}.__dict__")

    # --- wording -----------------------------------------------------------------------------

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        replacement = (profile.replacements.get(self.category) if profile else None) or DEFAULT_REPLACEMENTS[self.category]
        if effect.qualname.endswith(".__dict__"):
            owner = effect.qualname[: -len(".__dict__")].rpartition(".")[2]
            what = f"{effect.subject} writes an attribute of a {owner} instance that every run shares"
        elif f".{_ENCLOSING}." in effect.qualname:
            what = f"{effect.subject} writes a nonlocal variable of an enclosing function, which every run shares"
        else:
            what = f"{effect.subject} writes module-level state"
        if via is not None:
            return f"{via} reaches code where {what}; use {replacement}"
        return f"{what} in workflow code; use {replacement}"

    VALID = (
        """
from temporalio import workflow

LIMITS = {"max": 3}

@workflow.defn
class Counter:
    def __init__(self) -> None:
        self.seen = set()

    @workflow.run
    async def run(self, item: str) -> int:
        self.seen.add(item)
        return LIMITS["max"]
""",
        # A helper nested in the workflow writes that run's own variable.
        """
from dbos import DBOS

@DBOS.workflow()
def counted(items: list) -> int:
    total = 0

    def add(n: int) -> None:
        nonlocal total
        total += n

    for item in items:
        add(len(item))
    return total
""",
    )
    INVALID = (
        Invalid(
            """
from temporalio import workflow

SEEN = set()

@workflow.defn
class Counter:
    @workflow.run
    async def run(self, item: str) -> int:
        SEEN.add(item)
        return len(SEEN)
""",
            line=9, column=9,
            message='SEEN.add(item) writes module-level state in workflow code; use attributes of the workflow instance',
        ),
        Invalid(
            """
from dbos import DBOS

COUNT = 0

@DBOS.workflow()
def bump() -> int:
    global COUNT
    COUNT += 1
    return COUNT
""",
            line=8, column=5,
            message="COUNT += ... writes module-level state in workflow code; use state held in the workflow's own variables",
        ),
        Invalid(
            """
from dbos import DBOS

def register(name: str):
    runs = 0

    @DBOS.workflow(name=name)
    def counted() -> int:
        nonlocal runs
        runs += 1
        return runs

    return counted
""",
            line=9, column=9,
            message=(
                "runs += ... writes a nonlocal variable of an enclosing function, which every run shares in "
                "workflow code; use state held in the workflow's own variables"
            ),
        ),
    )
