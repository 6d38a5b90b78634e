"""RT206: LangGraph's ``interrupt()`` inside a ``try`` whose handler catches it and does not raise.

Written against libcst's tree with matchers, as a Fixit rule is (``uses_libcst``; the example the rule API's
docs point plugin authors to): a visitor keeps the ``try`` bodies around each call, matchers judge the
handlers, and the ``ast`` pass resolves the callee and the exception names. Its tree is built only for modules
that mention ``interrupt`` and, on CPython's tree, call a pause function inside the body of a ``try`` that has
handlers or of a ``with contextlib.suppress(...)``, so a default run over code that does not hold the pattern never imports libcst.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from replaytest.lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst

    from replaytest.lint.libcst_facts import LibcstFacts
    from replaytest.lint.model import Effect
    from replaytest.lint.profile import FrameworkProfile

    _Handler = libcst.ExceptHandler | libcst.ExceptStarHandler

# The calls that pause a graph by raising: ``interrupt()`` raises ``GraphInterrupt`` when no resume value is
# recorded for it, and LangGraph parks the thread when that exception leaves the node or task.
PAUSES = frozenset({"langgraph.types.interrupt"})
# The exception classes a handler catches ``GraphInterrupt`` by: itself and its bases (``GraphBubbleUp``,
# ``Exception``, ``BaseException``); a bare ``except:`` too.
CATCHES_PAUSE = frozenset({
    "langgraph.errors.GraphInterrupt", "langgraph.errors.GraphBubbleUp", "builtins.Exception", "builtins.BaseException",
})
# ``with suppress(...):`` swallows what it names as an ``except`` clause that does nothing would.
SUPPRESS = "contextlib.suppress"
_TRY_TYPES: tuple[type, ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


def _pause_in_a_guarded_body(facts: LibcstFacts) -> bool:
    """On CPython's tree (no libcst): whether a pause call sits in the body of a ``try`` that has handlers or of
    a ``with suppress(...)``."""
    for node in ast.walk(facts.ast_tree):
        guarded: Any = node  # ``ast.Try``, ``ast.TryStar`` (3.11 and later), ``ast.With`` or ``ast.AsyncWith``
        if isinstance(node, _TRY_TYPES) and guarded.handlers or isinstance(node, (ast.With, ast.AsyncWith)) and any(
            isinstance(item.context_expr, ast.Call) and facts.ast_qualname(item.context_expr) == SUPPRESS
            for item in guarded.items
        ):
            for statement in guarded.body:
                for inner in ast.walk(statement):
                    if isinstance(inner, ast.Call) and facts.ast_qualname(inner) in PAUSES:
                        return True
    return False


class SwallowsInterrupt(Rule):
    """
    ## What it does
    Finds LangGraph's `interrupt()` called in the body of a `try` whose first handler that catches
    `GraphInterrupt` — a bare `except:`, `except Exception`, `except BaseException`, `except
    GraphInterrupt` or `GraphBubbleUp` (also in a tuple, also `except*`) — raises nothing, or in the
    body of `with contextlib.suppress(...)` naming one of those. A handler that raises (a bare `raise`,
    or any other exception) hands the interrupt on to the next `try` out, which is judged the same way. Calls of `interrupt()` through a helper, and a `try` around a call of
    a function that calls `interrupt()`, are not followed.

    ## Why is this bad?
    `interrupt()` pauses the graph by raising `GraphInterrupt`; LangGraph parks the thread only when
    that exception leaves the node (or task). A handler that catches it and goes on makes the node
    return as if nothing was asked: the run finishes (or runs the next node) without waiting for the
    human, the thread has no pending interrupt to resume, and the answer is never used. LangGraph's
    documentation says not to wrap `interrupt()` in a bare `try`/`except`.

    ## Example
    ```python
    def review(state: State) -> dict:
        try:
            answer = interrupt({"draft": state["draft"]})
        except Exception:
            answer = "rejected"
        return {"approved": answer == "yes"}
    ```

    ## Use instead
    Keep `interrupt()` out of the `try`, catch only the exceptions the guarded code raises, or re-raise
    the interrupt first:
    ```python
    def review(state: State) -> dict:
        try:
            answer = interrupt({"draft": state["draft"]})
        except GraphInterrupt:
            raise
        except Exception:
            answer = "rejected"
        return {"approved": answer == "yes"}
    ```
    """

    code = "RT206"
    name = "swallows-interrupt"
    category = "pause"
    summary = "interrupt() caught by a handler that does not raise (the graph does not pause)"
    what = "is caught without being raised again"
    uses_libcst = True
    libcst_screen = (b"interrupt",)

    def on_libcst_module(self, facts: LibcstFacts) -> None:
        # libcst is imported here, not at the top: this module is loaded by every run, libcst only by runs
        # that parse a module holding a pause call inside a guarded ``try`` body.
        if not PAUSES & facts.callees or not _pause_in_a_guarded_body(facts):
            return  # the tree is never parsed
        for call, catcher in _swallowed_pauses(facts):
            facts.report_anywhere(self, call, f"{facts.code(call.func)}()", _handler_text(facts, catcher))

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        return (f"{effect.subject} raises GraphInterrupt to pause the graph, and {effect.qualname} catches it "
                "without raising: the run goes on instead of waiting for the answer; keep interrupt() out of the "
                "try, catch narrower exceptions, or re-raise it (`except GraphInterrupt: raise` first)")

    VALID = (
        """
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

def review(state: dict) -> dict:
    try:
        answer = interrupt("approve?")
    except GraphInterrupt:
        raise
    except Exception:
        answer = "no"
    return {"answer": answer}
""",
        """
import logging
from langgraph.types import interrupt

def review(state: dict) -> dict:
    try:
        answer = interrupt("approve?")
    except Exception:
        logging.exception("review failed")
        raise
    return {"answer": answer}
""",
        """
from langgraph.types import interrupt

def review(state: dict) -> dict:
    answer = interrupt("approve?")
    try:
        amount = int(answer)
    except Exception:
        amount = 0
    return {"amount": amount}
""",
        """
from langgraph.types import interrupt

def review(state: dict) -> dict:
    try:
        answer = interrupt("approve?")
    except (ValueError, KeyError):
        answer = "no"
    finally:
        print("asked")
    return {"answer": answer}
""",
        """
from langgraph.types import interrupt

def review(state: dict) -> dict:
    try:
        def ask() -> str:
            return interrupt("approve?")
    except Exception:
        ask = None
    return {"answer": ask() if ask else None}
""",
    )
    INVALID = (
        Invalid(
            """
from langgraph.types import interrupt

def review(state: dict) -> dict:
    try:
        answer = interrupt("approve?")
    except Exception:
        answer = "no"
    return {"answer": answer}
""",
            line=5, column=18,
            message="interrupt() raises GraphInterrupt to pause the graph, and `except Exception:` (line 6) catches "
                    "it without raising: the run goes on instead of waiting for the answer; keep interrupt() out of "
                    "the try, catch narrower exceptions, or re-raise it (`except GraphInterrupt: raise` first)",
        ),
        Invalid(
            """
from langgraph.func import entrypoint, task
from langgraph.types import interrupt as ask

@entrypoint()
def approve(draft: str) -> str:
    try:
        try:
            answer = ask(draft)
        except (KeyError, BaseException) as error:
            raise
    except:
        answer = "no"
    return answer
""",
            line=8, column=22,
            message="ask() raises GraphInterrupt to pause the graph, and `except:` (line 11) catches it without "
                    "raising: the run goes on instead of waiting for the answer; keep interrupt() out of the try, "
                    "catch narrower exceptions, or re-raise it (`except GraphInterrupt: raise` first)",
        ),
    )


def _swallowed_pauses(facts: LibcstFacts) -> list[tuple[libcst.Call, _Handler | libcst.WithItem]]:
    """Each pause call of the module with the handler (or ``suppress`` item) that swallows it (innermost first)."""
    import libcst

    found: list[tuple[libcst.Call, _Handler | libcst.WithItem]] = []

    class GuardedBodies(libcst.CSTVisitor):
        """Keeps the ``try`` statements whose body the visit is in; a function, lambda or class body starts
        afresh (its code runs when called, not inside the ``try`` around its definition)."""

        def __init__(self) -> None:
            super().__init__()
            self.guards: list[libcst.Try | libcst.TryStar | libcst.With | None] = []

        def visit_Try_body(self, node: libcst.Try) -> None:
            self.guards.append(node)

        def leave_Try_body(self, node: libcst.Try) -> None:
            self.guards.pop()

        def visit_TryStar_body(self, node: libcst.TryStar) -> None:
            self.guards.append(node)

        def leave_TryStar_body(self, node: libcst.TryStar) -> None:
            self.guards.pop()

        def visit_FunctionDef(self, node: libcst.FunctionDef) -> None:
            self.guards.append(None)

        def leave_FunctionDef(self, original_node: libcst.FunctionDef) -> None:
            self.guards.pop()

        def visit_Lambda(self, node: libcst.Lambda) -> None:
            self.guards.append(None)

        def leave_Lambda(self, original_node: libcst.Lambda) -> None:
            self.guards.pop()

        def visit_ClassDef(self, node: libcst.ClassDef) -> None:
            self.guards.append(None)

        def leave_ClassDef(self, original_node: libcst.ClassDef) -> None:
            self.guards.pop()

        def visit_With_body(self, node: libcst.With) -> None:
            self.guards.append(node)

        def leave_With_body(self, node: libcst.With) -> None:
            self.guards.pop()

        def visit_Call(self, node: libcst.Call) -> None:
            if facts.qualname(node) not in PAUSES:
                return
            for guard in reversed(self.guards):
                if guard is None:
                    return
                if isinstance(guard, libcst.With):
                    suppressing = next((item for item in guard.items if _suppresses_pause(facts, item)), None)
                    if suppressing is not None:
                        found.append((node, suppressing))
                        return
                    continue
                handler = next((h for h in guard.handlers if _catches_pause(facts, h)), None)
                if handler is not None and not _raises(handler):
                    found.append((node, handler))
                    return
                # No handler catches it, or the one that does raises: the next ``try`` out decides.

    facts.module.visit(GuardedBodies())
    return found


def _catches_pause(facts: LibcstFacts, handler: _Handler) -> bool:
    """Whether ``GraphInterrupt`` is caught by ``handler``: bare, or naming it or one of its bases."""
    import libcst.matchers as m

    if handler.type is None:
        return True
    caught = handler.type
    names = [element.value for element in caught.elements] if m.matches(caught, m.Tuple()) else [caught]  # type: ignore[attr-defined]
    return any(_names_a_catcher(facts, name) for name in names)


def _names_a_catcher(facts: LibcstFacts, node: libcst.BaseExpression) -> bool:
    import libcst.matchers as m

    return m.matches(node, m.Name() | m.Attribute()) and facts.resolve(node) in CATCHES_PAUSE


def _suppresses_pause(facts: LibcstFacts, item: libcst.WithItem) -> bool:
    """Whether a ``with`` item is ``suppress(...)`` naming ``GraphInterrupt`` or one of its bases."""
    import libcst
    import libcst.matchers as m

    call = item.item
    if not m.matches(call, m.Call(args=[m.ZeroOrMore(m.Arg(keyword=None, star=""))])):
        return False
    assert isinstance(call, libcst.Call)
    return facts.qualname(call) == SUPPRESS and any(_names_a_catcher(facts, arg.value) for arg in call.args)


def _raises(handler: _Handler) -> bool:
    """Whether a ``raise`` statement runs in the handler's own body (not in a function it defines)."""
    import libcst

    class Raises(libcst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.found = False

        def visit_Raise(self, node: libcst.Raise) -> None:
            self.found = True

        def visit_FunctionDef(self, node: libcst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: libcst.ClassDef) -> bool:
            return False

    visitor = Raises()
    handler.body.visit(visitor)
    return visitor.found


def _handler_text(facts: LibcstFacts, catcher: _Handler | libcst.WithItem) -> str:
    """```except Exception:` (line 14)``: the handler's clause (or the ``with`` item) as written, on one line."""
    import libcst

    where = f"(line {facts.position(catcher).start.line})"
    if isinstance(catcher, libcst.WithItem):
        return f"`with {' '.join(facts.code(catcher.item).split())}:` {where}"
    star = "*" if isinstance(catcher, libcst.ExceptStarHandler) else ""
    caught = f" {' '.join(facts.code(catcher.type).split())}" if catcher.type is not None else ""
    return f"`except{star}{caught}:` {where}"
