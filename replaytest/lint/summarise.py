"""One file of a lint run: parse it with CPython's own parser (``ast``) and collect its ``ModuleSummary``.
Every problem becomes an error summary (a syntax or internal-error finding), never an exception.

CPython's parser is the one the code will run under, written in C and bounded by its own limits (too
deep a nesting is a ``SyntaxError`` or ``RecursionError``, never a crash), so every file is parsed
in-process. Its grammar is the running interpreter's: a file only a newer Python accepts (3.12's PEP 695
and PEP 701 syntax under 3.10 or 3.11) is rewritten by ``newer_grammar`` (libcst, which knows the newer
grammar, is asked only about files CPython rejected) into text the running parser accepts with every
position kept, and analysed; what cannot be rewritten so is reported as needing a newer Python, not as broken code. The collector's walk is recursive: a module nested beyond the recursion limit (a long
generated ``a + b + ...`` chain) is walked again in a thread with a large stack.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from replaytest.lint.context import LintContext
from replaytest.lint.model import Effect, ModuleSummary, Span
from replaytest.lint.rule import LibcstTreeUnavailable
from replaytest.lint.rules import INTERNAL_ERROR_RULE, SYNTAX_RULE
from replaytest.lint.syntax import SourceText

if TYPE_CHECKING:
    from replaytest.lint.collector import ModuleCollector

_NESTING_WORDS = ("too many nested", "too complex", "too many statically nested")


def error_summary(module: str, path: str, rule: str, message: str, line: int = 1, column: int = 1) -> ModuleSummary:
    effect = Effect(rule, "syntax", message, "", Span(line, column, line, column))
    return ModuleSummary(module=module, path=path, error=effect)


def decode_source(data: bytes) -> str:
    """The text of a source file as Python reads it: a coding cookie or BOM honoured, newlines kept as written
    (positions count lines the way the parser does, so offsets need the original line breaks)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8")
    head = data[:400]
    if b"coding" in head:
        import io
        import tokenize

        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode("utf-8" if encoding == "utf-8-sig" else encoding).removeprefix("\ufeff")
    return data.decode("utf-8")


# Python 3.10's parser has no depth limit: a chain about 100,000 levels deep (``a.b.b…``, ``f()()…``, ``1+1+…``,
# some 200 KB) overflows its C stack and kills the process (SIGSEGV). From 3.11 it refuses such a tree with a
# RecursionError. On 3.10 a file that large is parsed once in a child process first, so a crash costs that
# file only (RT001) and the run goes on; smaller files cannot be that deep.
_UNBOUNDED_PARSER = sys.version_info < (3, 11)
_CHILD_PARSE_BYTES = 100_000


def _crashes_parser(data: bytes, path: str) -> bool:
    if not _UNBOUNDED_PARSER or len(data) < _CHILD_PARSE_BYTES:
        return False
    from replaytest.lint.parse_guard import run_bounded, time_limit

    return run_bounded(_accepted, (data, path), time_limit(len(data))).problem is not None


def _accepted(data: bytes, path: str) -> bool:
    try:
        _parse(data, path)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


def compiles(data: bytes, path: str) -> bool:
    """Whether CPython's parser accepts the source (the vetting of files no rule needs parsed)."""
    return not _crashes_parser(data, path) and _accepted(data, path)


def summarise_source(context: LintContext, path: str, module: str, is_package: bool, data: bytes) -> ModuleSummary:
    """Parse one file and summarise it; problems become an error summary, never an exception."""
    if _crashes_parser(data, path):
        return error_summary(module, path, SYNTAX_RULE, "not analysed: nested too deeply for Python's parser")
    try:
        tree = _parse(data, path)
        text = tree.text if tree.text is not None else decode_source(data)
    except SyntaxError as error:
        line, column = error.lineno or 1, max(1, error.offset or 1)
        if any(word in str(error.msg) for word in _NESTING_WORDS):
            return error_summary(module, path, SYNTAX_RULE, f"not analysed: nested too deeply for a parser ({error.msg})",
                                 line, column)
        if getattr(error, "newer_python", False):
            running = f"{sys.version_info.major}.{sys.version_info.minor}"
            message = (f"not analysed: Python {running} cannot parse this file ({error.msg}), which is valid for a newer "
                       "Python; run replaytest under the Python version the project uses")
            return error_summary(module, path, SYNTAX_RULE, message, line, column)
        return error_summary(module, path, SYNTAX_RULE, f"syntax error: {error.msg}", line, column)
    except (RecursionError, MemoryError):
        return error_summary(module, path, SYNTAX_RULE, "not analysed: nested too deeply for Python's parser")
    except (ValueError, UnicodeDecodeError, LookupError) as error:  # NUL bytes, a bad coding cookie
        return error_summary(module, path, SYNTAX_RULE, f"cannot be decoded: {error}")
    except Exception as error:  # the parser itself failed: report, never abort the run
        return error_summary(module, path, INTERNAL_ERROR_RULE, f"internal error while parsing: {error!r}")
    source = SourceText(text)

    from replaytest.lint.collector import ModuleCollector

    try:
        try:
            summary = ModuleCollector(context, module, path, is_package).collect(tree.module, source)
        except RecursionError:
            summary = _collect_deeply_nested(ModuleCollector(context, module, path, is_package), tree.module, source)
    except RecursionError:
        return error_summary(module, path, SYNTAX_RULE, "too deeply nested to analyse")
    except LibcstTreeUnavailable as error:
        return error_summary(module, path, INTERNAL_ERROR_RULE, str(error))
    except Exception as error:
        import traceback

        where = traceback.extract_tb(error.__traceback__)[-1]
        return error_summary(
            module, path, INTERNAL_ERROR_RULE,
            f"internal error while analysing: {error!r} at {Path(where.filename).name}:{where.lineno}",
        )
    if tree.grammar:
        import dataclasses

        summary = dataclasses.replace(summary, grammar=tree.grammar)
    return summary


class _Parsed(NamedTuple):
    module: ast.Module
    text: str | None  # the text parsed, when it is not the file's own (newer syntax rewritten)
    grammar: str = ""  # the Python the file needs ("3.12"), when it is not the running one's


def _parse(data: bytes, path: str) -> _Parsed:
    """CPython's tree of a source; a file only a newer Python parses is parsed with its PEP 695 syntax
    blanked out (``newer_grammar``). Raises CPython's ``SyntaxError``, marked ``newer_python`` when the file
    is valid for a newer Python but could not be brought to this one."""
    try:
        tree = compile(data, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        assert isinstance(tree, ast.Module)
        return _Parsed(tree, None)
    except SyntaxError as error:
        if any(word in str(error.msg) for word in _NESTING_WORDS):
            raise
        try:
            text = decode_source(data)
        except (ValueError, LookupError):  # not text in its declared encoding: CPython's error says so
            raise error from None
        from replaytest.lint import newer_grammar

        downgraded = newer_grammar.downgrade(data, text)
        if downgraded.text is not None:
            try:
                tree = compile(downgraded.text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
                assert isinstance(tree, ast.Module)
                needs = downgraded.needs or newer_grammar.PEP_695_701
                return _Parsed(tree, downgraded.text, f"{needs[0]}.{needs[1]}")
            except SyntaxError:
                pass  # more new syntax than the rewrite can take away
        error.newer_python = downgraded.valid  # type: ignore[attr-defined]
        raise error from None


_DEEP_STACK_BYTES = 512 * 1024 * 1024


_DEEP_RECURSION_LIMIT = 200_000


def _collect_deeply_nested(collector: ModuleCollector, tree: ast.Module, source: SourceText) -> ModuleSummary:
    """Collect a module whose nesting (a long ``a + b + ...`` chain, generated code) exceeds the
    default recursion limit: again, in a thread with a large stack and a high limit."""
    import threading  # rare: a run that meets no such module never imports it

    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(collector.collect(tree, source))
        except BaseException as error:  # handed back to the calling thread
            outcome.append(error)

    previous_limit = sys.getrecursionlimit()
    previous_stack = threading.stack_size()
    try:
        threading.stack_size(_DEEP_STACK_BYTES)
        sys.setrecursionlimit(max(previous_limit, _DEEP_RECURSION_LIMIT))
        worker = threading.Thread(target=work, name="replaytest-deep-collect")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]
