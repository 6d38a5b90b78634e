"""One file of a lint run: screen it with CPython's parser, parse it with libcst (in a child process with a
time limit when a long, deep statement could exhaust the parser), and collect its ``ModuleSummary``. Every
problem becomes an error summary (a syntax or internal-error finding), never an exception."""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replaytest.config import Config
from replaytest.lint.context import LintContext
from replaytest.lint.model import (
    Effect,
    ModuleSummary,
    Span,
)
from replaytest.lint.parse_guard import Screening, run_bounded, screen_source, time_limit
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Rule
from replaytest.lint.rules import INTERNAL_ERROR_RULE, SYNTAX_RULE

if TYPE_CHECKING:
    import libcst as cst

    from replaytest.lint.collector import ModuleCollector



def error_summary(module: str, path: str, rule: str, message: str, line: int = 1, column: int = 1) -> ModuleSummary:
    effect = Effect(rule, "syntax", message, "", Span(line, column, line, column))
    return ModuleSummary(module=module, path=path, error=effect)


def summarise_source(context: LintContext, path: str, module: str, is_package: bool, data: bytes) -> ModuleSummary:
    """Parse one file and summarise it; problems become an error summary, never an exception.

    CPython's parser screens the file first (``parse_guard``): what it refuses for nesting never reaches
    libcst, and a long, deep statement is parsed in a child process with a time limit."""
    screening = screen_source(data, path)
    if screening.refusal is not None:
        return error_summary(module, path, SYNTAX_RULE, screening.refusal, screening.line, screening.column)
    if screening.risky:
        return _summarise_bounded(context, path, module, is_package, data, screening)
    return _parse_and_collect(context, path, module, is_package, data, screening.syntax_error)


def _summarise_bounded(
    context: LintContext, path: str, module: str, is_package: bool, data: bytes, screening: Screening
) -> ModuleSummary:
    import multiprocessing

    if "fork" in multiprocessing.get_all_start_methods():  # the child inherits the context as it is
        outcome = run_bounded(_parse_and_collect, (context, path, module, is_package, data, screening.syntax_error),
                              time_limit(len(data)))
    else:
        rule_classes = [type(rule) for rule in context.rules.values()]
        outcome = run_bounded(
            _parse_and_collect_fresh,
            (context.config, context.given_profiles, rule_classes, path, module, is_package, data),
            time_limit(len(data)),
        )
    if outcome.problem is not None:
        message = f"not analysed: nested too deeply for the libcst parser: {outcome.problem}"
        return error_summary(module, path, SYNTAX_RULE, message, screening.line, 1)
    return outcome.value


def _parse_and_collect_fresh(
    config: Config, profiles: Sequence[FrameworkProfile], rules: Sequence[type[Rule]], path: str, module: str,
    is_package: bool, data: bytes,
) -> ModuleSummary:
    context = LintContext(config, profiles, rules)
    return _parse_and_collect(context, path, module, is_package, data, screen_source(data, path).syntax_error)


def _parse_and_collect(
    context: LintContext, path: str, module: str, is_package: bool, data: bytes, python_error: SyntaxError | None
) -> ModuleSummary:
    # Imported here: a run served entirely from the cache never loads the parser.
    import libcst as cst

    from replaytest.lint.collector import ModuleCollector

    try:
        tree = cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        detail = str(error.message).splitlines()[0] if error.message else "invalid syntax"
        if python_error is None:
            message = f"not analysed: valid Python that the libcst parser does not support ({detail})"
            return error_summary(module, path, SYNTAX_RULE, message, error.raw_line, error.raw_column + 1)
        if python_error.lineno:  # CPython's position and wording are the ones users know
            return error_summary(module, path, SYNTAX_RULE, f"syntax error: {python_error.msg}",
                                  python_error.lineno, max(1, python_error.offset or 1))
        return error_summary(module, path, SYNTAX_RULE, f"syntax error: {detail}", error.raw_line, error.raw_column + 1)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        return error_summary(module, path, SYNTAX_RULE, f"cannot be decoded: {error}")
    except RecursionError:
        return error_summary(module, path, SYNTAX_RULE, "too deeply nested to parse")
    except Exception as error:  # the parser itself failed: report, never abort the run
        return error_summary(module, path, INTERNAL_ERROR_RULE, f"internal error while parsing: {error!r}")
    try:
        try:
            return ModuleCollector(context, module, path, is_package).collect(tree)
        except RecursionError:
            return _collect_deeply_nested(ModuleCollector(context, module, path, is_package), tree)
    except RecursionError:
        return error_summary(module, path, SYNTAX_RULE, "too deeply nested to analyse")
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return error_summary(
            module, path, INTERNAL_ERROR_RULE,
            f"internal error while analysing: {error!r} at {Path(where.filename).name}:{where.lineno}",
        )


_DEEP_STACK_BYTES = 512 * 1024 * 1024


_DEEP_RECURSION_LIMIT = 200_000


def _collect_deeply_nested(collector: ModuleCollector, tree: cst.Module) -> ModuleSummary:
    """Collect a module whose nesting (a long ``a + b + ...`` chain, generated code) exceeds the
    default recursion limit: again, in a thread with a large stack and a high limit."""
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(collector.collect(tree))
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
