"""What libcst's native parser is allowed to see, and how long it may take: ``screen_source`` and
``run_bounded``.

libcst's parser is native code: on some inputs that CPython itself rejects at once (``f(`` × 3000,
thousands of ``not``/``-``/``lambda`` prefixes) it overflows its stack and takes the whole process down
(SIGSEGV), and on some valid inputs its time grows with the cube of a chain's length (a line of 2,000
subscripts: 13 s; 20,000 attribute accesses: minutes). So every file is first parsed by CPython's own
parser (``compile(..., ast.PyCF_ONLY_AST)``, written in C, about ten times faster than libcst and with
known limits):

* CPython's tokenizer refuses it for nesting ("too many nested parentheses", more than 200 open
  brackets): libcst never sees it; the file is reported (RT001).
* CPython gives up on its depth (``RecursionError``, ``MemoryError``), or accepts it but one statement
  is long *and* deeply nested (an expression tree deeper than ``RISKY_DEPTH`` in a statement longer
  than ``RISKY_STATEMENT_BYTES``): the file is parsed in a child process with a time limit, so a crash
  or a runaway parse costs that file only (``run_bounded``) and is reported (RT001).
* Otherwise it is parsed in-process as usual; only long statements pay for the depth measure.

A plain syntax error from CPython is handed on (libcst may know newer grammar than the running
interpreter; the engine reports CPython's message when libcst rejects the file too).
"""

from __future__ import annotations

import ast
import faulthandler
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Measured with libcst 1.x: a 1,000-deep chain (attributes, unary operators) parses in ~0.2 s, 2,000
# subscripts in 13 s. Real code stays far below 150 levels; big generated literals are long but shallow.
RISKY_DEPTH = 150
RISKY_STATEMENT_BYTES = 2_000
# The child's time limit: generous for a large legitimate file on a loaded machine (libcst parses
# about 0.5 MB/s), short enough that a pathological file does not stall the run. The environment
# variable replaces the base (tests, very slow machines).
BOUNDED_BASE_S = 30.0
BOUNDED_PER_MB_S = 10.0
TIME_LIMIT_VARIABLE = "REPLAYTEST_PARSE_TIME_LIMIT"

_NESTING_WORDS = ("too many nested", "too complex", "too many statically nested")


@dataclass(frozen=True)
class Screening:
    """CPython's verdict on one source. ``refusal`` set: libcst must not see it (the message says why,
    at ``line``/``column``). ``syntax_error``: CPython's ordinary syntax error, if any. ``risky``: parse
    it with ``run_bounded``."""

    refusal: str | None = None
    syntax_error: SyntaxError | None = None
    risky: bool = False
    line: int = 1
    column: int = 1


def screen_source(data: bytes, path: str) -> Screening:
    """Parse ``data`` with CPython and decide how (and whether) libcst may parse it."""
    try:
        tree = compile(data, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if any(word in str(error.msg) for word in _NESTING_WORDS):
            return Screening(
                refusal=f"not analysed: nested too deeply for a parser ({error.msg})",
                line=error.lineno or 1, column=max(1, error.offset or 1),
            )
        return Screening(syntax_error=error, risky=risky_bytes(data))
    except (RecursionError, MemoryError):
        # Deep, but not necessarily beyond libcst (CPython's AST limit follows the recursion limit on
        # some versions: a 3,000-term sum is refused here yet fine for libcst): let it try, bounded.
        return Screening(syntax_error=SyntaxError("nested too deeply for Python's parser"), risky=True)
    except ValueError as error:  # NUL bytes and the like: libcst fails cleanly on them too
        return Screening(syntax_error=SyntaxError(str(error)))
    assert isinstance(tree, ast.Module)
    depth, line = _deepest_long_statement(tree, data)
    if depth > RISKY_DEPTH:
        return Screening(risky=True, line=line)
    return Screening()


def risky_tree(tree: ast.Module, data: bytes) -> int | None:
    """For a source CPython parsed (its tree at hand): the line of a statement too long and deep for libcst's
    parser in-process, or None (the check ``screen_source`` makes, without parsing again)."""
    depth, line = _deepest_long_statement(tree, data)
    return line if depth > RISKY_DEPTH else None


def risky_bytes(data: bytes) -> bool:
    """A file CPython rejected for an ordinary syntax error may still hide a deep chain further on
    (CPython stops at the first error): judge it by its longest line instead."""
    return max((len(line) for line in data.splitlines()), default=0) > RISKY_STATEMENT_BYTES


def _deepest_long_statement(tree: ast.Module, data: bytes) -> tuple[int, int]:
    """The deepest expression tree among statements longer than ``RISKY_STATEMENT_BYTES``, and its line.
    Statements are visited (bodies of compound statements too); expressions only inside long ones."""
    starts = [0]
    for text_line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(text_line))

    def length(node: Any) -> int:
        end_line = getattr(node, "end_lineno", None)
        if end_line is None or end_line > len(starts) or node.lineno > len(starts):
            return 0
        return starts[end_line - 1] + (node.end_col_offset or 0) - starts[node.lineno - 1] - node.col_offset

    best, best_line = 0, 1
    statements: list[Any] = list(tree.body)
    while statements:
        node = statements.pop()
        expressions: list[Any] = []
        for _, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, ast.stmt):
                    statements.append(item)
                elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                    statements.extend(item.body)
                    expressions.extend(getattr(item, name) for name in ("type", "pattern", "guard")
                                       if getattr(item, name, None) is not None)
                elif isinstance(item, ast.AST):
                    expressions.append(item)
        for expression in expressions:
            if length(expression) > RISKY_STATEMENT_BYTES:
                depth = _depth(expression)
                if depth > best:
                    best, best_line = depth, getattr(expression, "lineno", 1)
    return best, best_line


def _depth(root: ast.AST) -> int:
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


# --- the bounded parse ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundedOutcome:
    """``value`` when the child finished; else ``problem`` says what happened (crash or time limit)."""

    value: Any = None
    problem: str | None = None


def time_limit(size: int) -> float:
    """Seconds a bounded parse of ``size`` bytes may take."""
    try:
        base = float(os.environ.get(TIME_LIMIT_VARIABLE, BOUNDED_BASE_S))
    except ValueError:
        base = BOUNDED_BASE_S
    return base + BOUNDED_PER_MB_S * size / 1_000_000


def run_bounded(function: Callable[..., Any], args: tuple[Any, ...], limit_s: float) -> BoundedOutcome:
    """Run ``function(*args)`` in a child process; its (picklable) return value, or what went wrong.

    A child, not a thread: a native parser cannot be interrupted from Python, and its crash must not
    be ours. ``function`` and ``args`` must be picklable where processes are spawned (macOS, Windows).
    """
    import multiprocessing  # only runs with a risky file start a child

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(writer, function, args), daemon=True)  # type: ignore[attr-defined]
    child.start()
    writer.close()  # the child holds the only writer: its exit shows up as end-of-file here
    try:
        if not reader.poll(limit_s):
            child.kill()
            return BoundedOutcome(problem=f"the parser did not finish within {limit_s:.0f} s")
        try:
            ok, value = reader.recv()
        except (EOFError, OSError):
            child.join(5)
            code = child.exitcode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            return BoundedOutcome(problem=f"the parser crashed ({how})")
        if not ok:
            return BoundedOutcome(problem=f"the parser failed: {value}")
        return BoundedOutcome(value=value)
    finally:
        reader.close()
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()


def _child_main(writer: Any, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    # The parent reports a crash in one line; an inherited fault handler would dump our stack on stderr.
    faulthandler.disable()
    try:
        outcome: tuple[bool, Any] = (True, function(*args))
    except BaseException as error:  # reported to the parent as text; the parent decides
        outcome = (False, repr(error))
    writer.send(outcome)
    writer.close()
