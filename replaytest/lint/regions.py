"""Where orchestration code lives, for replay coverage: the line spans of the functions the framework
profiles mark as orchestration entry points, and of the project helpers they call (followed across
modules the way the linter follows them; steps, activities and other entry points stop the walk).

The summaries say which functions are orchestration code and whom they call; line spans come from one
``ast`` parse of each file involved (summaries keep positions of effects and calls, not of functions).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from replaytest.config import Config
from replaytest.lint.discovery import ModuleNamer
from replaytest.lint.engine import build_context, summarise_source
from replaytest.lint.model import ORCHESTRATION, PLAIN, FunctionSummary, ModuleSummary
from replaytest.lint.resolve import Program


@dataclass(frozen=True)
class Region:
    """One orchestration function: ``qualname`` is ``module.Class.method``; ``entry`` the entry point
    whose walk reached it (itself for an entry point); ``start``/``end`` its lines, decorators excluded."""

    path: Path
    qualname: str
    entry: str
    framework: str
    start: int
    end: int


def orchestration_regions(files: Iterable[Path], config: Config, profiles: Sequence[Any]) -> list[Region]:
    """The orchestration functions defined in ``files`` and the project helpers they reach, sorted by
    file and line. ``files`` are typically the modules the replayed workflows were imported from."""
    # Where orchestration code is and whom it calls does not depend on rule options; a mistake in those is
    # the linter's to report, not a reason for replay coverage (inside pytest too) to fail.
    context = build_context(replace(config, rules={}), profiles)
    namer = ModuleNamer(config.root)
    summaries: dict[str, ModuleSummary] = {}

    def load(module: str) -> ModuleSummary | None:
        if module in summaries:
            return summaries[module]
        path = namer.locate(module)
        return _summarise(path) if path is not None else None

    def _summarise(path: Path) -> ModuleSummary | None:
        module, is_package, _ = namer.names(path)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        summary = summarise_source(context, str(path), module, is_package, data)
        if summary.error is not None:
            return None
        summaries[module] = summary
        return summary

    program = Program(context, load)
    entries: list[tuple[ModuleSummary, FunctionSummary]] = []
    for file in sorted({Path(f).resolve() for f in files}):
        summary = _summarise(file)
        if summary is None:
            continue
        program.add(summary)
        entries.extend((summary, f) for f in summary.functions.values() if f.kind == ORCHESTRATION)

    reached: dict[tuple[str, str], tuple[str, str]] = {}  # (path, local name) -> (entry, framework)
    for summary, function in entries:
        entry = f"{summary.module}.{function.name}"
        queue = [(summary, function)]
        while queue:
            owner, current = queue.pop()
            key = (owner.path, current.name)
            if key in reached and current is not function:
                continue
            reached.setdefault(key, (entry, function.framework))
            for site in current.calls:
                found = program.find_function(site.target)
                if found is not None and found[1].kind == PLAIN and (found[0].path, found[1].name) not in reached:
                    queue.append(found)
    spans: dict[str, dict[str, tuple[int, int]]] = {}
    regions = []
    for (path, name), (entry, framework) in reached.items():
        if path not in spans:
            spans[path] = _function_spans(Path(path))
        span = spans[path].get(name)
        if span is not None:
            module = next(s.module for s in summaries.values() if s.path == path)
            regions.append(Region(Path(path).resolve(), f"{module}.{name}", entry, framework, *span))
    return sorted(regions, key=lambda r: (str(r.path), r.start))


def _function_spans(path: Path) -> dict[str, tuple[int, int]]:
    """``Class.method`` / ``function`` -> (first line of the ``def``, last line), nested classes included."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return {}
    spans: dict[str, tuple[int, int]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                spans[prefix + node.name] = (node.lineno, node.end_lineno or node.lineno)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return spans
