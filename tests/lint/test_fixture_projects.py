"""Lint every fixture project and compare the findings with the ``# expect:`` marks in its files.

The one expectation syntax, a comment at the end of the line the finding is reported on::

    deadline = time.time()                   # expect: RT101
    received = datetime.now()                # expect: RT101:12
    summary = build_summary(ticket)          # expect: RT101 via
    tag = support.runtime_tag()              # expect: RT204 via support.runtime_tag
    pair = (time.time(), os.getenv("X"))     # expect: RT101:9, RT204:22

- ``RT101`` is a rule code: exactly one finding of that rule on this line. Write a code twice for two
  findings of the same rule on the line.
- ``RT101:12`` also pins the finding's 1-based column (the ``column`` of the JSON report; the examples
  here count from the start of the code, without the indent of this docstring).
- ``via`` means the finding is reached through a helper, so its ``trace`` must name the chain; a mark
  without ``via`` must be reported directly (empty trace). ``via NAME`` also names the helper called
  on this line: the first helper of the trace must be ``NAME`` or end with ``.NAME``
  (``support.runtime_tag`` matches ``orders.support.runtime_tag``).
- Several marks on one line are separated by commas.

The marks are read strictly, so a typo never silently expects nothing: a malformed mark or a look-alike
comment (``# expect RT101``, ``# expects:``, ``# Expect:``, ``# expected: ...``), a code that no installed
rule has, a category where a code belongs, a mark on a line without code, or ``# expect`` anywhere but in
a comment (a string) fails the test with ``file:line``. Every line without a mark must stay quiet,
so the comparison is exact both ways: the failure lists what is missing (marked, not reported) and what is
extra (reported, not marked), each with its source line, and separately any finding whose trace
disagrees with its ``via``.

The same reader and comparison check the throwaway projects the in-process tests write
(``assert_marks`` in ``test_engine_resolution``, through ``assert_findings_match_marks``), so the lint tests
have one expectation syntax.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lintkit import run_replaytest

from replaytest.lint.model import Diagnostic
from replaytest.lint.rules import load_rules

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "fixtures"
PROJECTS = sorted(path for path in (FIXTURES / "lint_projects").iterdir() if path.is_dir())

# The installed rules (built-in and third-party), so a mark can only name a code that can be reported.
_RULES = load_rules()
RULE_CODES = frozenset(rule.code for rule in _RULES)
_CODES_OF_CATEGORY: dict[str, list[str]] = {}
for _rule in _RULES:
    _CODES_OF_CATEGORY.setdefault(_rule.category, []).append(_rule.code)

# Anything that looks like an attempt at a mark: "# expect", "#expect:", "# Expects:", "# expected: ..."
_ATTEMPT = re.compile(r"#\s*expect(?:s|ed)?\b", re.IGNORECASE)
_MARK = re.compile(r"#\s*expect:(?P<items>.*)")
# The older mark syntax, refused so that one left behind on a quiet line cannot silently expect nothing.
_OLD_MARK = re.compile(r"#\s*<-\s*[A-Z]+[0-9]")
_ITEM = re.compile(
    r"(?P<code>[A-Z]+[0-9]+)(?::(?P<column>[1-9][0-9]*))?"
    r"(?:\s+(?P<via>via)(?:\s+(?P<helper>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*))?)?"
)
_NOT_CODE = {
    tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
    tokenize.ENCODING,
}


class MarkError(AssertionError):
    """A mark that cannot be read; the message starts with ``file:line``."""


@dataclass(frozen=True)
class Mark:
    """One expected finding: rule ``code`` on ``path:line``, optionally at ``column``, direct or ``via``."""

    path: str
    line: int
    code: str
    column: int | None = None
    via: bool = False
    helper: str | None = None  # ``via NAME``: the helper called on the line

    def spelled(self) -> str:
        column = f":{self.column}" if self.column is not None else ""
        via = (" via " + self.helper if self.helper else " via") if self.via else ""
        return f"{self.code}{column}{via}"


@dataclass(frozen=True)
class Finding:
    """One reported diagnostic, as the comparison needs it."""

    path: str
    line: int
    column: int
    code: str
    trace: tuple[str, ...]

    def spelled(self) -> str:
        # Written as the mark that would expect it, so the failure shows what to write if it is right.
        via = f" via {self.trace[1]}" if len(self.trace) > 2 else (" via" if self.trace else "")
        return f"{self.code}:{self.column}{via}"


def parse_marks(text: str, relative: str) -> list[Mark]:
    """The marks of one file's source ``text``; a MarkError for anything that is not a well-formed mark."""
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
            elif token.type not in _NOT_CODE:
                code_lines.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass  # marks after the point tokenizing stopped are reported below as not being in a comment
    marks: list[Mark] = []
    for number, line in enumerate(text.splitlines(), 1):
        if _OLD_MARK.search(line):
            raise MarkError(f"{relative}:{number}: `# <- CODE` is the old mark syntax; write `# expect: CODE`")
        if not _ATTEMPT.search(line):
            continue
        where = f"{relative}:{number}"
        comment = comments.get(number, "")
        attempt = _ATTEMPT.search(comment)
        if attempt is None or len(_ATTEMPT.findall(line)) > len(_ATTEMPT.findall(comment)):
            raise MarkError(f"{where}: `# expect` outside a comment (in a string?) is not a mark: {line.strip()}")
        mark = _MARK.fullmatch(comment[attempt.start() :].rstrip())
        if mark is None:
            raise MarkError(
                f"{where}: malformed expect mark (write `# expect: RT101[:column][ via[ helper]], ...`): "
                f"{line.strip()}"
            )
        if number not in code_lines:
            raise MarkError(f"{where}: an expect mark must end a line of code, not stand on its own: {line.strip()}")
        items = mark["items"].strip()
        if not items:
            raise MarkError(f"{where}: expect mark names no rule code: {line.strip()}")
        for item in (part.strip() for part in items.split(",")):
            match = _ITEM.fullmatch(item)
            if match is None:
                word = item.split(" ")[0].split(":")[0]
                hint = (
                    f"; `{word}` is a category, write its rule code ({', '.join(_CODES_OF_CATEGORY[word])})"
                    if word in _CODES_OF_CATEGORY
                    else ""
                )
                raise MarkError(f"{where}: malformed expect mark item {item!r}{hint}: {line.strip()}")
            if match["code"] not in RULE_CODES:
                raise MarkError(f"{where}: unknown rule code {match['code']!r} (no installed rule has it): {line.strip()}")
            marks.append(
                Mark(
                    path=relative,
                    line=number,
                    code=match["code"],
                    column=int(match["column"]) if match["column"] else None,
                    via=match["via"] is not None,
                    helper=match["helper"],
                )
            )
    return marks


def expected_marks(project: Path) -> list[Mark]:
    """Every mark in the project's Python files, in file and line order."""
    marks: list[Mark] = []
    for file in sorted(project.rglob("*.py")):
        marks.extend(parse_marks(file.read_text(encoding="utf-8"), file.relative_to(project).as_posix()))
    return marks


def _helper_matches(helper: str, trace: Sequence[str]) -> bool:
    first = trace[1] if len(trace) > 2 else ""
    return first == helper or first.endswith("." + helper)


def _via_agrees(mark: Mark, finding: Finding) -> bool:
    if mark.via != bool(finding.trace):
        return False
    return mark.helper is None or _helper_matches(mark.helper, finding.trace)


def _match(
    marks: Sequence[Mark], found: Sequence[Finding], fits: Callable[[Mark, Finding], bool]
) -> list[tuple[Mark, Finding]]:
    """A maximum matching of marks to findings under ``fits`` (a few per line: simple augmenting paths)."""
    owner: dict[int, int] = {}  # finding index -> mark index

    def place(m: int, seen: set[int]) -> bool:
        for f, finding in enumerate(found):
            if f in seen or not fits(marks[m], finding):
                continue
            seen.add(f)
            if f not in owner or place(owner[f], seen):
                owner[f] = m
                return True
        return False

    for m in range(len(marks)):
        place(m, set())
    return [(marks[m], found[f]) for f, m in sorted(owner.items(), key=lambda item: item[1])]


@dataclass
class Comparison:
    missing: list[Mark]
    extra: list[Finding]
    # A mark and a finding that agree on path, line, code and column but not on ``via``.
    wrong_via: list[tuple[Mark, Finding]]

    @property
    def agrees(self) -> bool:
        return not (self.missing or self.extra or self.wrong_via)


def compare(marks: Iterable[Mark], found: Iterable[Finding]) -> Comparison:
    """Pair marks with findings on the same (path, line, code), column where the mark gives one."""
    marks_at: dict[tuple[str, int, str], list[Mark]] = defaultdict(list)
    found_at: dict[tuple[str, int, str], list[Finding]] = defaultdict(list)
    for mark in marks:
        marks_at[(mark.path, mark.line, mark.code)].append(mark)
    for finding in found:
        found_at[(finding.path, finding.line, finding.code)].append(finding)
    result = Comparison(missing=[], extra=[], wrong_via=[])

    def column_fits(mark: Mark, finding: Finding) -> bool:
        return mark.column is None or mark.column == finding.column

    for key in sorted(set(marks_at) | set(found_at)):
        want, got = marks_at.get(key, []), found_at.get(key, [])
        exact = _match(want, got, lambda m, f: column_fits(m, f) and _via_agrees(m, f))
        want = [m for m in want if all(m is not pair[0] for pair in exact)]
        got = [f for f in got if all(f is not pair[1] for pair in exact)]
        loose = _match(want, got, column_fits)
        result.wrong_via.extend(loose)
        result.missing.extend(m for m in want if all(m is not pair[0] for pair in loose))
        result.extra.extend(f for f in got if all(f is not pair[1] for pair in loose))
    return result


def _source_line(project: Path, path: str, line: int) -> str:
    file = project / path
    source = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
    return source[line - 1].strip() if 0 < line <= len(source) else "<no such line>"


def describe(comparison: Comparison, project: Path, name: str) -> str:
    """The failure message: what is missing, what is extra, and which traces disagree with ``via``."""

    def block(lines: list[str]) -> str:
        return "\n".join(lines) or "  (none)"

    missing = [
        f"  {m.path}:{m.line} {m.spelled()}  {_source_line(project, m.path, m.line)}" for m in comparison.missing
    ]
    extra = [
        f"  {f.path}:{f.line} {f.spelled()}  {_source_line(project, f.path, f.line)}" for f in comparison.extra
    ]
    wrong_via = []
    for mark, finding in comparison.wrong_via:
        if not finding.trace:
            problem = "reported directly (empty trace)"
        elif not mark.via:
            problem = "reported through a helper: " + " -> ".join(finding.trace)
        else:
            problem = f"trace does not start with helper {mark.helper}: " + " -> ".join(finding.trace)
        wrong_via.append(
            f"  {mark.path}:{mark.line} {mark.spelled()}: {problem}  {_source_line(project, mark.path, mark.line)}"
        )
    return (
        f"{name}: findings differ from the expect marks\n"
        f"missing (marked, not reported):\n{block(missing)}\n"
        f"extra (reported, not marked):\n{block(extra)}\n"
        f"via (marked and reported, trace disagrees):\n{block(wrong_via)}"
    )


def reported_findings(report: Mapping[str, Any]) -> list[Finding]:
    """The findings of a JSON report (``replaytest lint --format json``)."""
    return [
        Finding(
            path=str(d["path"]).replace("\\", "/"),
            line=int(d["line"]),
            column=int(d["column"]),
            code=str(d["rule"]),
            trace=tuple(d["trace"]),
        )
        for d in report["diagnostics"]
    ]


def linted_findings(diagnostics: Iterable[Diagnostic]) -> list[Finding]:
    """The findings of an in-process ``lint_paths`` result's diagnostics (same fields as the JSON report)."""
    return [Finding(path=d.path, line=d.line, column=d.column, code=d.rule, trace=tuple(d.trace)) for d in diagnostics]


def assert_findings_match_marks(project: Path, found: Iterable[Finding], name: str | None = None) -> list[Mark]:
    """Fail unless ``found`` (paths relative to ``project``) matches the marks in ``project`` exactly.

    A mark that cannot be read raises MarkError (``file:line``); a difference raises AssertionError with
    the message of ``describe``. Returns the marks."""
    marks = expected_marks(project)
    comparison = compare(marks, found)
    if not comparison.agrees:
        # Raised, not asserted, so the message reaches the drift tests below exactly as written.
        raise AssertionError(describe(comparison, project, name or project.name))
    return marks


def check_project(project: Path, *, cwd: Path, prefix: str = "") -> list[dict[str, Any]]:
    """Lint ``project`` and fail unless its findings match its marks exactly; returns the diagnostics."""
    assert expected_marks(project), f"{project} has no expect marks"
    target = prefix.rstrip("/") or "."
    run = run_replaytest("lint", "--format", "json", "--no-cache", target, cwd=cwd)
    found = reported_findings(run.json())
    outside = sorted(f"{f.path}:{f.line} {f.code}" for f in found if not f.path.startswith(prefix))
    assert not outside, f"{project.name}: findings outside the project: {outside}"
    inside = [Finding(f.path[len(prefix) :], f.line, f.column, f.code, f.trace) for f in found]
    assert_findings_match_marks(project, inside)
    assert run.returncode == 1, run.describe()
    return run.json()["diagnostics"]


@pytest.mark.parametrize("project", PROJECTS, ids=[path.name for path in PROJECTS])
def test_fixture_project_findings_match_marks(project: Path) -> None:
    # cwd = the project, so its own pyproject.toml applies and paths are relative to it.
    check_project(project, cwd=project)


def test_all_frameworks_have_a_fixture_project() -> None:
    names = {path.name for path in PROJECTS}
    assert {"temporal", "dbos", "langgraph", "restate", "azure_durable", "config_declared", "journal"} <= names


def test_example_app_findings_match_marks() -> None:
    example = FIXTURES / "example_app"
    check_project(example, cwd=example)


def test_example_app_from_repository_root_uses_its_own_configuration() -> None:
    # The README runs `replaytest lint fixtures/example_app` from the repository root: the example's
    # pyproject.toml (nearest to the linted files) must apply, e.g. its `exclude` of scripts/.
    example = FIXTURES / "example_app"
    check_project(example, cwd=REPO_ROOT, prefix="fixtures/example_app/")


# --- the mark reader -------------------------------------------------------------------------------


def test_marks_parser_reads_codes_columns_via_and_several_marks() -> None:
    # The comparison is only as good as the mark reader, so pin its reading down.
    source = (
        "a = 1  # expect: RT101\n"
        "b = 2  # expect: RT204 via, RT102:7\n"
        "c = 3  # a comment\n"
        "d = f()  # replaytest: ignore[RT101]  # expect: RT003:10\n"
        "e = g()  # expect: RT101 via support.deadline_from_now, RT101\n"
        "s = '''\n"
        "text'''  # expect: RT103\n"
    )
    assert parse_marks(source, "m.py") == [
        Mark("m.py", 1, "RT101"),
        Mark("m.py", 2, "RT204", via=True),
        Mark("m.py", 2, "RT102", column=7),
        Mark("m.py", 4, "RT003", column=10),
        Mark("m.py", 5, "RT101", via=True, helper="support.deadline_from_now"),
        Mark("m.py", 5, "RT101"),
        Mark("m.py", 7, "RT103"),
    ]


@pytest.mark.parametrize(
    ("lines", "complaint"),
    [
        ("x = f()  # expect: clock", "`clock` is a category, write its rule code (RT101)"),
        ("x = f()  # expect: RT101 via clock, sleep", "malformed expect mark item 'sleep'; `sleep` is a category"),
        ("x = f()  # expect: RT999", "unknown rule code 'RT999'"),
        ("x = f()  # expect: RT101:0", "malformed expect mark item 'RT101:0'"),
        ("x = f()  # expect: RT101 :9", "malformed expect mark item 'RT101 :9'"),
        ("x = f()  # expect: RT101, ", "malformed expect mark item ''"),
        ("x = f()  # expect: RT101 vai", "malformed expect mark item 'RT101 vai'"),
        ("x = f()  # expect: rt101", "malformed expect mark item 'rt101'"),
        ("x = f()  # expect:", "names no rule code"),
        ("x = f()  # expect RT101", "malformed expect mark"),
        ("x = f()  # Expect: RT101", "malformed expect mark"),
        ("x = f()  # expects: RT101", "malformed expect mark"),
        ("x = f()  # expect: RT101 # and a note", "malformed expect mark item"),
        ("x = f()  # expected: RT101", "malformed expect mark"),
        ("x = f()  # expect: RT101  # expect: RT102", "malformed expect mark item 'RT101  # expect: RT102'"),
        ("# expect: RT101", "must end a line of code"),
        ("x = '# expect: RT101'", "outside a comment"),
        ("x = '# expect: RT102'  # expect: RT101", "outside a comment"),
        ('x = """\n\n# expect: RT101\n"""', "outside a comment"),
    ],
)
def test_marks_parser_rejects_what_is_not_a_mark(lines: str, complaint: str) -> None:
    # ``lines`` starts on line 2; the bad mark is on its one line that mentions "expect".
    source = "import time\n" + lines + "\n"
    bad_line = 2 + next(index for index, text in enumerate(lines.splitlines()) if "expect" in text.lower())
    with pytest.raises(MarkError) as caught:
        parse_marks(source, "pkg/m.py")
    message = str(caught.value)
    assert message.startswith(f"pkg/m.py:{bad_line}: "), message
    assert complaint in message, message


def test_marks_parser_leaves_prose_about_expectations_alone() -> None:
    source = "x = f()  # we expect this to be quiet, and it is\ny = g()  # expectation: none  # unexpected\n"
    assert parse_marks(source, "m.py") == []


def test_a_malformed_mark_fails_the_project_check_with_file_and_line(make_project) -> None:
    project = make_project({"app/flow.py": "from datetime import datetime\nx = datetime.now()  # expect: RT101 vai\n"})
    with pytest.raises(MarkError, match=r"^app/flow\.py:2: malformed expect mark item 'RT101 vai'"):
        check_project(project, cwd=project)


# --- the comparison catches drift --------------------------------------------------------------------

_DRIFT_SUPPORT = """\
import os


def runtime_region() -> str:
    return os.environ.get("REGION", "eu")


def runtime_host() -> str:
    return os.environ.get("HOST", "local")
"""

# A Temporal workflow: two direct clock reads on one line (columns 17 and 30) and two environment reads
# through helpers.
_DRIFT_WORKFLOW = """\
import time

from temporalio import workflow

from app import support


@workflow.defn
class Drift:
    @workflow.run
    async def run(self) -> str:
        pair = (time.time(), time.monotonic())  {first}
        region = support.runtime_region()  {second}
        host = support.runtime_host()  {third}
        return f"{{pair}} {{region}} {{host}}"
"""

_RIGHT = {
    "first": "# expect: RT101:17, RT101:30",
    "second": "# expect: RT204 via support.runtime_region",
    "third": "# expect: RT204:16 via",
}


def _drift_project(make_project, **marks: str) -> Path:
    workflow = _DRIFT_WORKFLOW.format(**{**_RIGHT, **marks})
    return make_project({"app/__init__.py": "", "app/support.py": _DRIFT_SUPPORT, "app/flow.py": workflow})


def _drift_failure(make_project, **marks: str) -> str:
    project = _drift_project(make_project, **marks)
    with pytest.raises(AssertionError) as caught:
        check_project(project, cwd=project)
    return str(caught.value)


def test_drift_project_with_right_marks_passes(make_project) -> None:
    # The baseline of the drift tests below: with the right marks the same project passes.
    project = _drift_project(make_project)
    check_project(project, cwd=project)


def test_drift_wrong_code_is_missing_and_extra(make_project) -> None:
    marks = "# expect: RT101:17, RT102:30"
    message = _drift_failure(make_project, first=marks)
    line = f"pair = (time.time(), time.monotonic())  {marks}"
    assert f"missing (marked, not reported):\n  app/flow.py:12 RT102:30  {line}\n" in message, message
    assert f"extra (reported, not marked):\n  app/flow.py:12 RT101:30  {line}\n" in message, message


def test_drift_wrong_column_is_missing_and_extra(make_project) -> None:
    message = _drift_failure(make_project, first="# expect: RT101:17, RT101:29")
    assert "missing (marked, not reported):\n  app/flow.py:12 RT101:29  pair = " in message, message
    assert "extra (reported, not marked):\n  app/flow.py:12 RT101:30  pair = " in message, message


def test_drift_one_mark_for_two_findings_of_a_rule_is_an_extra(make_project) -> None:
    message = _drift_failure(make_project, first="# expect: RT101")
    assert "missing (marked, not reported):\n  (none)\n" in message, message
    assert "extra (reported, not marked):\n  app/flow.py:12 RT101:" in message, message


def test_drift_missing_via_is_reported_with_the_trace(make_project) -> None:
    message = _drift_failure(make_project, third="# expect: RT204:16")
    assert (
        "via (marked and reported, trace disagrees):\n"
        "  app/flow.py:14 RT204:16: reported through a helper: "
        "app.flow.Drift.run -> app.support.runtime_host -> os.environ  host = support.runtime_host()"
    ) in message, message
    assert "missing (marked, not reported):\n  (none)\n" in message, message


def test_drift_via_naming_the_wrong_helper_fails(make_project) -> None:
    message = _drift_failure(make_project, second="# expect: RT204 via support.runtime_host")
    assert (
        "  app/flow.py:13 RT204 via support.runtime_host: trace does not start with helper support.runtime_host: "
        "app.flow.Drift.run -> app.support.runtime_region -> os.environ"
    ) in message, message


def test_drift_via_on_a_direct_finding_fails(make_project) -> None:
    message = _drift_failure(make_project, first="# expect: RT101:17 via, RT101:30")
    assert "  app/flow.py:12 RT101:17 via: reported directly (empty trace)" in message, message


def test_drift_unmarked_line_is_extra_and_stray_mark_is_missing(make_project) -> None:
    message = _drift_failure(make_project, third="# expect: RT204 via, RT101")
    assert "missing (marked, not reported):\n  app/flow.py:14 RT101  host = " in message, message
    message = _drift_failure(make_project, third="")
    assert "extra (reported, not marked):\n  app/flow.py:14 RT204:16 via app.support.runtime_host  host = " in message


def test_helper_name_matches_on_a_dotted_suffix_only() -> None:
    trace = ("app.flow.run", "orders.support.deadline_from_now", "orders.support._utc_now", "datetime.datetime.now")
    assert _helper_matches("deadline_from_now", trace)
    assert _helper_matches("support.deadline_from_now", trace)
    assert _helper_matches("orders.support.deadline_from_now", trace)
    assert not _helper_matches("from_now", trace)
    assert not _helper_matches("support._utc_now", trace)  # a deeper helper is not the one called here
