"""Which findings of a whole-project run concern a set of changed files (the pre-commit default).

A violation in a helper module is reported at the orchestration code's call site, usually in another
file; linting only the staged files therefore misses a commit that changes only the helper. The
pre-commit hook lints the whole project instead (the summary cache makes unchanged files cheap) and
keeps the findings *reachable from* the changed files: those in a changed file, and those whose helper
chain passes through one.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

from replaytest.lint.discovery import display_path, named_file_problem
from replaytest.lint.model import Diagnostic, LintResult
from replaytest.records import replace


def wanted_paths(changed: Sequence[Path], cwd: Path) -> set[str]:
    """The display paths (``Diagnostic.path``) of ``changed`` (paths as given on the command line)."""
    return {display_path(Path(os.path.abspath(path)), cwd) for path in changed}


def concerns(diagnostic: Diagnostic, wanted: Collection[str]) -> bool:
    """Whether a finding is in one of the ``wanted`` files or its helper chain passes through one. Finishing a
    run (``finish``) keeps a finding's path and chain, so this holds of a raw finding exactly when it holds of
    what is reported of it."""
    return diagnostic.path in wanted or any(path in wanted for path in diagnostic.trace_paths)


def reachable_from(result: LintResult, changed: Sequence[Path], cwd: Path) -> LintResult:
    """``result`` narrowed to the findings in or through ``changed`` (paths as given on the command line); a
    named file that does not exist or is not Python is an error, as it is without ``--whole-project``."""
    wanted = wanted_paths(changed, cwd)
    problems = list(result.problems)
    for path in changed:
        problem = named_file_problem(os.path.abspath(path))
        if problem is not None:
            problems.append(f"{display_path(Path(os.path.abspath(path)), cwd)}: {problem}")
    kept = [d for d in result.diagnostics if concerns(d, wanted)]
    failed_files = {d.path for d in kept if d.category == "syntax"}
    internal = sum(1 for d in kept if d.category == "syntax" and d.rule != "RT001")
    return replace(result, diagnostics=kept, errors=len(failed_files) + len(problems), internal_errors=internal,
                   problems=problems)
