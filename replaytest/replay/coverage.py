"""Replay coverage: which lines and branches of orchestration code the replayed histories execute.

``ReplayCoverage`` runs the ``coverage`` package around replays, measuring only the files that hold
orchestration functions (the linter finds them; they arrive here as plain spans) with one dynamic context
per history, so a report can say which workflow type reached what. Temporal's sandbox re-executes workflow
modules from their source files: the code objects keep the real file names, so the tracer (which follows
new threads too) still attributes them. Data files carry a per-process suffix so pytest-xdist workers
write their own and the controller combines them.

The static side (statements, possible arcs) comes from ``coverage.parser.PythonParser``, the one piece of
coverage that is not in its documented API; it is used here only, and coverage's version is bounded in
the package metadata.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

NO_HISTORY = "(no history)"


class Span(Protocol):
    """An orchestration function's place (``lint.regions.Region`` has these fields)."""

    @property
    def path(self) -> Path: ...
    @property
    def qualname(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


class CoverageSetupError(Exception):
    """Coverage cannot be measured or compared as asked (no git, unknown revision, no data)."""


class ReplayCoverage:
    """Measures replays; ``with measure.history(label):`` around each one. ``data_file`` is the base name;
    ``parallel`` appends a per-process suffix (combine with ``combine_data``)."""

    def __init__(self, spans: Sequence[Span], data_file: Path, *, parallel: bool = False) -> None:
        import coverage

        self.files = sorted({str(span.path) for span in spans})
        data_file.parent.mkdir(parents=True, exist_ok=True)
        self._coverage = coverage.Coverage(
            data_file=str(data_file), data_suffix=True if parallel else None, branch=True,
            include=self.files or ["<nothing>"], config_file=False,
        )
        self._started = False
        self._parallel = parallel

    def start(self) -> None:
        if not self._parallel:  # parallel data files are cleared by whoever combines them
            self._coverage.erase()
        self._coverage.start()
        self._started = True

    def stop(self) -> None:
        if self._started:
            self._coverage.stop()
            self._coverage.save()
            self._started = False

    @contextmanager
    def history(self, label: str) -> Iterator[None]:
        """Attribute what runs inside to the history ``label`` (its path as reports show it). The context
        is not reset afterwards: each switch flushes data to the database (a third of the overhead with
        a reset), and between replays no orchestration code runs."""
        self._coverage.switch_context(label)
        yield


def combine_data(data_file: Path) -> None:
    """Merge the per-process data files next to ``data_file`` into it (pytest-xdist workers')."""
    import coverage

    cov = coverage.Coverage(data_file=str(data_file), branch=True, config_file=False)
    parts = sorted(str(p) for p in data_file.parent.glob(data_file.name + ".*"))
    if parts:
        cov.combine(data_paths=parts, keep=False)
        cov.save()


@dataclass
class FunctionCoverage:
    """One orchestration function under one workflow type (``NO_HISTORY``: no replayed history reached it)."""

    workflow_type: str
    qualname: str
    path: Path
    statements: set[int]
    executed: set[int]
    branches: set[tuple[int, int]]
    taken: set[tuple[int, int]]

    @property
    def missing_lines(self) -> list[int]:
        return sorted(self.statements - self.executed)

    @property
    def missing_branches(self) -> list[tuple[int, int]]:
        """Arcs (from line, to line) no history took; a ``to`` of 0 or below is an exit from the function."""
        return sorted(self.branches - self.taken)


@dataclass
class CoverageReport:
    rows: list[FunctionCoverage] = field(default_factory=list)
    changed: list[tuple[Path, int, str]] = field(default_factory=list)  # changed orchestration statements
    uncovered_changed: list[tuple[Path, int, str]] = field(default_factory=list)
    compared_changes: bool = False  # changed lines were asked for (``--diff-base``), even if none changed

    @property
    def changed_percent(self) -> float:
        if not self.changed:
            return 100.0
        return 100.0 * (len(self.changed) - len(self.uncovered_changed)) / len(self.changed)


def _static(path: Path) -> tuple[set[int], set[tuple[int, int]], set[int]]:
    """(statements, possible arcs, branch lines) of a file, as coverage itself computes them."""
    from coverage.parser import PythonParser

    parser = PythonParser(filename=str(path))
    parser.parse_source()
    branch_lines = {line for line, exits in parser.exit_counts().items() if exits > 1}
    return set(parser.statements), set(parser.arcs()), branch_lines


def build_report(
    data_file: Path, spans: Sequence[Span], workflow_of: Mapping[str, str], changed_lines: Mapping[Path, set[int]] | None = None,
) -> CoverageReport:
    """Per workflow type and orchestration function: statements and branches of the body that the
    histories of that type executed. ``workflow_of`` maps each history label (context) to its workflow
    type; functions no history reached get one ``NO_HISTORY`` row. With ``changed_lines`` (from
    ``changed_lines_since``), the changed statements of orchestration functions and those nothing ran."""
    from coverage import CoverageData

    data = CoverageData(basename=str(data_file))
    data.read()
    by_type: dict[str, list[str]] = defaultdict(list)
    for context in sorted(data.measured_contexts()):
        if context:
            by_type[workflow_of.get(context, "?")].append(context)
    report = CoverageReport(compared_changes=changed_lines is not None)
    statics: dict[Path, tuple[set[int], set[tuple[int, int]], set[int]]] = {}
    measured: dict[tuple[str, Path], tuple[set[int], set[tuple[int, int]]]] = {}
    for workflow_type, contexts in by_type.items():
        data.set_query_contexts(["^(" + "|".join(re.escape(c) for c in contexts) + ")$"])
        for path in {span.path for span in spans}:
            measured[(workflow_type, path)] = (set(data.lines(str(path)) or ()), set(data.arcs(str(path)) or ()))
    data.set_query_contexts(None)
    everything: dict[Path, set[int]] = defaultdict(set)
    for span in spans:
        if span.path not in statics:
            statics[span.path] = _static(span.path)
        statements, arcs, branch_lines = statics[span.path]
        body = {line for line in statements if span.start < line <= span.end}
        branches = {arc for arc in arcs if arc[0] in body and arc[0] in branch_lines}
        reached = False
        for workflow_type in sorted(by_type):
            lines, taken = measured[(workflow_type, span.path)]
            executed = body & lines
            if not executed:
                continue
            reached = True
            everything[span.path] |= executed
            report.rows.append(FunctionCoverage(workflow_type, span.qualname, span.path, body, executed, branches, branches & taken))
        if not reached:
            report.rows.append(FunctionCoverage(NO_HISTORY, span.qualname, span.path, body, set(), branches, set()))
        if changed_lines is not None:
            for line in sorted(body & changed_lines.get(span.path, set())):
                report.changed.append((span.path, line, span.qualname))
                if line not in everything[span.path]:
                    report.uncovered_changed.append((span.path, line, span.qualname))
    return report


def line_ranges(missing: Iterable[int], statements: Iterable[int]) -> str:
    """``12-14, 20`` as coverage prints missing lines: a range runs over consecutive *statements* (a blank
    line or a comment between two missing statements does not break it)."""
    wanted = set(missing)
    parts: list[str] = []
    start = end = None
    for line in sorted(set(statements) | wanted):
        if line in wanted:
            start = line if start is None else start
            end = line
            continue
        if start is not None:
            parts.append(f"{start}-{end}" if start != end else str(start))
            start = end = None
    if start is not None:
        parts.append(f"{start}-{end}" if start != end else str(start))
    return ", ".join(parts)


def _branch_text(branch: tuple[int, int]) -> str:
    start, target = branch
    return f"{start}->{target if target > 0 else 'exit'}"


@dataclass(frozen=True)
class HistoryCoverage:
    """What one history's replay executed of orchestration code: body statements ``(path, line)`` and
    branches taken ``(path, from, to)`` (arcs from a line with more than one exit, as ``build_report``
    counts them)."""

    lines: frozenset[tuple[str, int]]
    branches: frozenset[tuple[str, int, int]]


def coverage_by_history(data_file: Path, spans: Sequence[Span]) -> dict[str, HistoryCoverage]:
    """Per history label (the context ``ReplayCoverage.history`` switched to): the orchestration lines
    and branches its replay executed. Histories that reached no orchestration code map to empty sets
    only if they were measured at all; a label missing here was not measured."""
    from coverage import CoverageData

    data = CoverageData(basename=str(data_file))
    data.read()
    bodies: dict[Path, list[tuple[int, int]]] = defaultdict(list)
    for span in spans:
        bodies[span.path].append((span.start, span.end))
    statics = {path: _static(path) for path in bodies}
    wanted: dict[Path, tuple[set[int], set[tuple[int, int]]]] = {}
    for path, ranges in bodies.items():
        statements, arcs, branch_lines = statics[path]
        body = {line for line in statements if any(start < line <= end for start, end in ranges)}
        wanted[path] = (body, {arc for arc in arcs if arc[0] in body and arc[0] in branch_lines})
    found: dict[str, HistoryCoverage] = {}
    for context in sorted(data.measured_contexts()):
        if not context:
            continue
        data.set_query_context(context)
        lines: set[tuple[str, int]] = set()
        branches: set[tuple[str, int, int]] = set()
        for path, (body, branch_arcs) in wanted.items():
            name = str(path)
            # Branch data holds arcs only; the lines executed are their ends (as ``CoverageData.lines``
            # computes them), so one query per file answers both.
            taken = set(data.arcs(name) or ())
            executed = {line for arc in taken for line in arc if line > 0}
            lines.update((name, line) for line in body & executed)
            branches.update((name, a, b) for a, b in branch_arcs & taken)
        found[context] = HistoryCoverage(frozenset(lines), frozenset(branches))
    data.set_query_contexts(None)
    return found


def render_table(report: CoverageReport, display: Any = str) -> str:
    """The text table: one row per workflow type and orchestration function, missing lines and branches
    named."""
    header = ("workflow type", "orchestration function", "lines", "branches", "missing lines", "missing branches")
    rows = [header]
    for row in report.rows:
        rows.append((
            row.workflow_type, row.qualname, f"{len(row.executed)}/{len(row.statements)}",
            f"{len(row.taken)}/{len(row.branches)}", line_ranges(row.missing_lines, row.statements) or "-",
            ", ".join(map(_branch_text, row.missing_branches)) or "-",
        ))
    padded = len(header) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(padded)]
    lines = ["replay coverage of orchestration code:"]
    for r in rows:
        lines.append("  " + "  ".join(r[i].ljust(widths[i]) for i in range(padded)) + "  " + r[padded])
    if report.changed or report.uncovered_changed:
        lines.append(
            f"changed orchestration lines: {len(report.changed)}, reached by no history: "
            f"{len(report.uncovered_changed)} ({report.changed_percent:.0f}% covered)"
        )
        for path, line, qualname in report.uncovered_changed:
            lines.append(f"  {display(path)}:{line} in {qualname}: changed, no saved history reaches it")
    return "\n".join(lines)


def report_data(report: CoverageReport, display: Any = str) -> dict[str, Any]:
    """The report as JSON data (the ``coverage`` object of ``check --output-format json``): per workflow
    type its totals and functions, each with ``lines`` and ``branches`` (``covered``/``total``),
    ``missing_lines`` and ``missing_branches`` (``[from, to]``, ``to`` null for an exit from the
    function); functions no history reached under ``unreached``; the changed lines with ``--diff-base``."""

    def counts(covered: int, total: int) -> dict[str, int]:
        return {"covered": covered, "total": total}

    def function(row: FunctionCoverage) -> dict[str, Any]:
        return {
            "function": row.qualname,
            "path": display(row.path),
            "lines": counts(len(row.executed), len(row.statements)),
            "branches": counts(len(row.taken), len(row.branches)),
            "missing_lines": row.missing_lines,
            "missing_branches": [[start, target if target > 0 else None] for start, target in row.missing_branches],
        }

    by_type: dict[str, list[FunctionCoverage]] = defaultdict(list)
    for row in report.rows:
        if row.workflow_type != NO_HISTORY:
            by_type[row.workflow_type].append(row)
    workflow_types = [
        {
            "workflow_type": workflow_type,
            "lines": counts(sum(len(r.executed) for r in rows), sum(len(r.statements) for r in rows)),
            "branches": counts(sum(len(r.taken) for r in rows), sum(len(r.branches) for r in rows)),
            "functions": [function(row) for row in rows],
        }
        for workflow_type, rows in sorted(by_type.items())
    ]
    return {
        "workflow_types": workflow_types,
        "unreached": [function(row) for row in report.rows if row.workflow_type == NO_HISTORY],
        "changed_lines": {
            "total": len(report.changed),
            "percent": report.changed_percent,
            "unreached": [
                {"path": display(path), "line": line, "function": qualname}
                for path, line, qualname in report.uncovered_changed
            ],
        } if report.compared_changes else None,
    }


def write_html(data_file: Path, spans: Sequence[Span], directory: Path) -> bool:
    """coverage's own HTML report of the orchestration files, with the contexts (histories) per line; False
    (nothing written) when no history executed any of them (a shard that took no history): coverage has
    no data to report then."""
    import coverage

    cov = coverage.Coverage(data_file=str(data_file), branch=True, config_file=False)
    cov.load()
    files = sorted({str(span.path) for span in spans})
    if not files or not set(cov.get_data().measured_files()) & set(files):
        return False
    cov.html_report(directory=str(directory), include=files, show_contexts=True, title="replay coverage")
    return True


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines_since(rev: str, files: Iterable[Path], cwd: Path) -> dict[Path, set[int]]:
    """Lines of ``files`` (as they are now, uncommitted edits included) that differ from revision ``rev``."""
    paths = sorted({str(Path(f).resolve()) for f in files})
    if not paths:
        return {}
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True, check=True)
        diff = subprocess.run(
            ["git", "diff", "--no-color", "--no-ext-diff", "-U0", rev, "--", *paths],
            cwd=cwd, capture_output=True, text=True, check=True,
        )
    except FileNotFoundError as error:
        raise CoverageSetupError(f"--diff-base needs git: {error}") from error
    except subprocess.CalledProcessError as error:
        raise CoverageSetupError(f"--diff-base {rev}: git failed: {error.stderr.strip() or error}") from error
    root = Path(top.stdout.strip())
    changed: dict[Path, set[int]] = defaultdict(set)
    current: Path | None = None
    for line in diff.stdout.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            current = None if name == "/dev/null" else (root / name[2:]).resolve()
        elif current is not None:
            hunk = _HUNK.match(line)
            if hunk:
                start, count = int(hunk.group(1)), int(hunk.group(2) or "1")
                changed[current].update(range(start, start + count))
    return dict(changed)
