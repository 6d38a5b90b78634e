"""Lint every fixture project and compare the findings with the ``# expect:`` marks in its files.

A mark ``# expect: clock`` at the end of a line means exactly one finding of that category on that line;
``# expect: clock via`` means the finding is reached through a helper, so its ``trace`` must name the
chain. Several marks on one line are separated by commas. Every line without a mark must stay quiet,
so the comparison is on exact sets and the failure lists what is missing and what is extra.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lintkit import findings, run_replaytest

from replaytest.config import CATEGORIES

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "fixtures"
PROJECTS = sorted(path for path in (FIXTURES / "lint_projects").iterdir() if path.is_dir())
_MARK = re.compile(r"#\s*expect:\s*(?P<marks>[a-z\-]+(?:\s+via)?(?:\s*,\s*[a-z\-]+(?:\s+via)?)*)\s*$")


def expected_marks(project: Path) -> tuple[set[tuple[str, int, str]], set[tuple[str, int, str]]]:
    """All (path, line, category) marks of a project, and the subset marked ``via``."""
    expected: set[tuple[str, int, str]] = set()
    via: set[tuple[str, int, str]] = set()
    for file in sorted(project.rglob("*.py")):
        relative = file.relative_to(project).as_posix()
        for number, text in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if "# expect:" not in text:
                continue
            match = _MARK.search(text)
            assert match, f"{relative}:{number}: malformed expect mark: {text.strip()}"
            for mark in match["marks"].split(","):
                category, _, transitive = mark.strip().partition(" ")
                assert category in CATEGORIES, f"{relative}:{number}: unknown category {category!r}"
                expected.add((relative, number, category))
                if transitive.strip() == "via":
                    via.add((relative, number, category))
    return expected, via


def _format(entries: set[tuple[str, int, str]], project: Path) -> str:
    lines = []
    for path, line, category in sorted(entries):
        source = (project / path).read_text(encoding="utf-8").splitlines()
        text = source[line - 1].strip() if 0 < line <= len(source) else "<no such line>"
        lines.append(f"  {path}:{line} [{category}]  {text}")
    return "\n".join(lines) or "  (none)"


def _check_project(project: Path, *, cwd: Path, prefix: str = "") -> None:
    expected, via = expected_marks(project)
    assert expected, f"{project} has no expect marks"
    if prefix:
        expected = {(prefix + path, line, category) for path, line, category in expected}
        via = {(prefix + path, line, category) for path, line, category in via}
    target = prefix.rstrip("/") or "."
    run = run_replaytest("lint", "--format", "json", "--no-cache", target, cwd=cwd)
    report = run.json()
    actual = findings(report)
    missing = expected - actual
    extra = actual - expected
    shown = _format({(p[len(prefix):], l, c) for p, l, c in missing}, project)
    shown_extra = _format({(p[len(prefix):], l, c) for p, l, c in extra if p.startswith(prefix)}, project)
    assert not missing and not extra, (
        f"{project.name}: findings differ from the expect marks\n"
        f"missing (marked, not reported):\n{shown}\n"
        f"extra (reported, not marked):\n{shown_extra}\n"
        + "".join(
            f"  (unexpected path) {p}:{l} [{c}]\n" for p, l, c in sorted(extra) if not p.startswith(prefix)
        )
    )
    by_key: dict[tuple[str, int, str], list[dict]] = {}
    for diagnostic in report["diagnostics"]:
        key = (diagnostic["path"].replace("\\", "/"), diagnostic["line"], diagnostic["category"])
        by_key.setdefault(key, []).append(diagnostic)
    untraced = sorted(key for key in via if not any(d["trace"] for d in by_key[key]))
    assert not untraced, f"{project.name}: `via` findings reported without a trace: {untraced}"
    direct_with_trace = sorted(
        key for key in expected - via if all(d["trace"] for d in by_key[key])
    )
    assert not direct_with_trace, (
        f"{project.name}: direct findings (no `via` mark) reported with a helper trace: {direct_with_trace}"
    )
    assert run.returncode == 1, run.describe()


@pytest.mark.parametrize("project", PROJECTS, ids=[path.name for path in PROJECTS])
def test_fixture_project_findings_match_marks(project: Path) -> None:
    # cwd = the project, so its own pyproject.toml applies and paths are relative to it.
    _check_project(project, cwd=project)


def test_all_frameworks_have_a_fixture_project() -> None:
    names = {path.name for path in PROJECTS}
    assert {"temporal", "dbos", "langgraph", "restate", "azure_durable", "config_declared", "journal"} <= names


def test_example_app_findings_match_marks() -> None:
    example = FIXTURES / "example_app"
    _check_project(example, cwd=example)


def test_example_app_from_repository_root_uses_its_own_configuration() -> None:
    # The README runs `replaytest lint fixtures/example_app` from the repository root: the example's
    # pyproject.toml (nearest to the linted files) must apply, e.g. its `exclude` of scripts/.
    example = FIXTURES / "example_app"
    _check_project(example, cwd=REPO_ROOT, prefix="fixtures/example_app/")


def test_marks_parser_reads_via_and_multiple_marks(tmp_path: Path) -> None:
    # The comparison above is only as good as the mark parser, so pin its reading down.
    (tmp_path / "m.py").write_text(
        "a = 1  # expect: clock\nb = 2  # expect: environment via, random\nc = 3  # a comment\n",
        encoding="utf-8",
    )
    expected, via = expected_marks(tmp_path)
    assert expected == {("m.py", 1, "clock"), ("m.py", 2, "environment"), ("m.py", 2, "random")}
    assert via == {("m.py", 2, "environment")}
