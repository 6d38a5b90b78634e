"""Files nested too deeply: CPython's parser refuses them at once (RT001, and every other file is still
checked), and a long deep chain it accepts is analysed like any file. libcst's native parser, which only
``fix`` uses now, crashes on the first kind (SIGSEGV) and takes minutes over the second: ``parse_guard``
keeps both from it. Lint runs in a subprocess here (as everywhere in these tests), so a crash would show
as exit 139 instead of killing pytest."""

from __future__ import annotations

import os
import signal
import sys

import pytest
from lintkit import CLOCK_WORKFLOW, CLOCK_WORKFLOW_LINE, findings, run_replaytest

from replaytest.lint.parse_guard import run_bounded, screen_source

HEADER = "from temporalio import workflow\n\n\n@workflow.defn\nclass Wf:\n    @workflow.run\n    async def run(self) -> None:\n        return None\n\n\n"

# Each crashed libcst 1.x (exit 139) when parsed in-process; CPython refuses all of them at once.
CRASHERS = {
    "calls.py": "f(" * 3000 + ")" * 3000,
    "unary.py": "x = " + "-" * 30_000 + "1",
    "nots.py": "x = " + "not " * 10_000 + "1",
    "lambdas.py": "x = " + "lambda: " * 5_000 + "1",
}
# Valid Python CPython accepts, but libcst needs minutes for (time grows with the cube of the chain).
SLOW = {"subscripts.py": "x = a" + '["k"]' * 2_000}
# Refused by CPython's parser (recursion during AST construction) - not even tried by libcst.
# From 3.11 CPython refuses this depth at once; 3.10's parser has no limit and crashes on a deeper one, which
# lint parses in a child first (summarise._crashes_parser).
TOO_LONG = {"attributes.py": "x = a" + ".b" * (20_000 if sys.version_info >= (3, 11) else 300_000)}


def _lint(project, env=None):
    return run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project, timeout=240, env=env)


def _by_path(report):
    out: dict[str, list[dict]] = {}
    for diagnostic in report["diagnostics"]:
        out.setdefault(diagnostic["path"], []).append(diagnostic)
    return out


def test_files_too_deeply_nested_for_python_are_rt001_and_the_run_goes_on(make_project) -> None:
    files = {name: HEADER + body + "\n" for name, body in {**CRASHERS, **TOO_LONG}.items()}
    project = make_project({"app/__init__.py": "", "app/wf.py": CLOCK_WORKFLOW, **{f"app/{k}": v for k, v in files.items()}})
    run = _lint(project)
    assert run.returncode == 2, run.describe()
    report = run.json()
    assert ("app/wf.py", CLOCK_WORKFLOW_LINE, "clock") in findings(report)
    by_path = _by_path(report)
    for name in files:
        diagnostics = by_path.get(f"app/{name}")
        assert diagnostics and [d["rule"] for d in diagnostics] == ["RT001"], (name, run.describe())
        assert "nested too deeply" in diagnostics[0]["message"]
    assert report["summary"]["errors"] == len(files)


def test_a_long_deep_chain_python_accepts_is_analysed(make_project) -> None:
    # libcst needed minutes for this (time grows with the cube of the chain); CPython's parser does not.
    chain = "def lookup(a):\n    return a" + '["k"]' * 2_000 + "\n\n\n"
    files = {"app/subscripts.py": chain + CLOCK_WORKFLOW}
    project = make_project({"app/__init__.py": "", **files})
    run = _lint(project)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {("app/subscripts.py", CLOCK_WORKFLOW_LINE + chain.count("\n"), "clock")}


def test_fix_keeps_a_long_deep_chain_from_libcst(make_project) -> None:
    chain = "def lookup(a):\n    return a" + '["k"]' * 2_000 + "\n\n\n"
    project = make_project({"app/__init__.py": "", "app/subscripts.py": chain + CLOCK_WORKFLOW})
    before = (project / "app/subscripts.py").read_bytes()
    run = run_replaytest("fix", "--unsafe-fixes", ".", cwd=project, timeout=240)
    assert "nested too deeply for the rewriting parser" in run.stdout + run.stderr, run.describe()
    assert (project / "app/subscripts.py").read_bytes() == before


def test_broken_file_without_framework_code_is_not_counted_as_checked(make_project) -> None:
    project = make_project({"util.py": "def helper(:\n    return 1\n", "fine.py": "x = 1\n"})
    run = _lint(project)
    assert run.returncode == 2, run.describe()
    [diagnostic] = run.json()["diagnostics"]
    assert (diagnostic["path"], diagnostic["line"], diagnostic["rule"]) == ("util.py", 1, "RT001")


def test_shallow_long_statements_and_deep_short_ones_stay_in_process() -> None:
    table = "TABLE = {" + ", ".join(f'"k{i}": {i}' for i in range(2_000)) + "}\n"
    assert screen_source(table.encode(), "t.py").risky is False
    assert screen_source(("x = " + "-" * 120 + "1\n").encode(), "u.py").risky is False
    assert screen_source(("x = a" + ".b" * 1_000 + "\n").encode(), "a.py").risky is True


def _crash() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def _sleep() -> None:
    import time

    time.sleep(60)


def test_bounded_run_reports_a_crash_and_a_timeout() -> None:
    assert run_bounded(_crash, (), 30).problem == f"the parser crashed (signal {int(signal.SIGSEGV)})"
    assert run_bounded(_sleep, (), 0.5).problem == "the parser did not finish within 0 s"
    assert run_bounded(len, ("abc",), 30).value == 3


def test_the_vetting_check_accepts_what_cpython_accepts() -> None:
    from replaytest.lint.summarise import compiles

    risky = SLOW["subscripts.py"]  # valid: CPython accepts it, only a libcst parse of it would be guarded
    assert screen_source(risky.encode(), "risky.py").risky
    assert compiles(risky.encode(), "risky.py")
    assert compiles(b"x = 1\n", "ok.py")
    assert not compiles(b"def broken(:\n", "broken.py")
    assert not compiles(CRASHERS["calls.py"].encode(), "calls.py")
    assert screen_source(CRASHERS["calls.py"].encode(), "calls.py").refusal is not None


def test_pep_695_syntax_is_analysed_under_any_supported_python(make_project) -> None:
    # Under 3.10 and 3.11 CPython rejects these; lint blanks them out (newer_grammar) keeping every position.
    newer = (
        "import time\nfrom temporalio import workflow\n\ntype Alias = int\n\n\n"
        "def pick[T](items: list[T]) -> T:\n    return items[0]\n\n\n"
        "@workflow.defn\nclass Flow[T]:\n    @workflow.run\n    async def run(self) -> float:\n"
        "        return time.time() + pick([1])  # line 15\n"
    )
    project = make_project({"app/__init__.py": "", "app/newer.py": newer})
    run = _lint(project)
    assert run.returncode == 1, run.describe()
    [diagnostic] = run.json()["diagnostics"]
    assert (diagnostic["path"], diagnostic["line"], diagnostic["column"], diagnostic["rule"]) == (
        "app/newer.py", 15, 16, "RT101")


# PEP 701 f-strings (Python 3.12): a backslash, the enclosing quote and a nested f-string in expression
# parts, a format spec holding an expression, a parenthesised concatenation over two lines. Each hazard
# call is in an expression part; lint must report it at its own line and column under every Python.
PEP_701 = (
    "import time\nfrom datetime import datetime\nfrom temporalio import workflow\n\n\n"
    "@workflow.defn\nclass Flow:\n    @workflow.run\n    async def run(self, names: dict[str, str]) -> str:\n"
    '        label = f"{"\\n".join(names)} at {datetime.now():%H:%M} {f"{time.time()}"}"\n'  # line 10
    '        note = ("plain" f"{names["k"]!r:>{len(names)}}"\n'
    '                "tail")\n'
    '        return label + note + f"{time.monotonic()}"\n'  # line 13
)
PEP_701_FINDINGS = [(10, 42, "datetime.now()"), (10, 68, "time.time()"), (13, 34, "time.monotonic()")]


def test_pep_701_f_strings_are_analysed_under_any_supported_python(make_project) -> None:
    # Under 3.10 and 3.11 CPython rejects the file; lint rewrites the f-strings (newer_grammar) keeping positions.
    project = make_project({"app/__init__.py": "", "app/flow.py": PEP_701})
    run = _lint(project)
    assert run.returncode == 1, run.describe()
    report = run.json()
    assert [(d["line"], d["column"], d["rule"]) for d in report["diagnostics"]] == [
        (line, column, "RT101") for line, column, _ in PEP_701_FINDINGS]
    assert [d["message"].split(" ")[0] for d in report["diagnostics"]] == [call for _, _, call in PEP_701_FINDINGS]


def test_the_rewrite_keeps_every_call_of_a_newer_file_at_its_position() -> None:
    import ast

    from replaytest.lint.newer_grammar import downgrade

    downgraded = downgrade(PEP_701.encode(), PEP_701)
    assert downgraded.valid and downgraded.text is not None
    assert downgraded.needs == ((3, 12) if sys.version_info < (3, 12) else None)  # 3.12 reads these f-strings
    rewritten = ast.parse(downgraded.text)  # the running Python reads it, whichever that is

    def calls(tree: ast.AST) -> list[tuple[int, int, str]]:
        return sorted((c.lineno, c.col_offset, ast.unparse(c.func)) for c in ast.walk(tree) if isinstance(c, ast.Call))

    assert downgraded.text.count("\n") == PEP_701.count("\n")
    assert calls(rewritten) == [(10, 19, "'\\n'.join"), (10, 41, "datetime.now"), (10, 67, "time.time"),
                                (11, 42, "len"), (13, 33, "time.monotonic")]
    if sys.version_info >= (3, 12):  # the file itself is readable here: the rewrite moved no call
        assert calls(rewritten) == calls(ast.parse(PEP_701))


def test_a_newer_file_the_project_does_not_declare_is_analysed_with_a_note(make_project) -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("this Python reads 3.12 syntax itself: no newer grammar is needed")
    project = make_project({"app/__init__.py": "", "app/flow.py": PEP_701},
                           pyproject='[project]\nname = "p"\nrequires-python = ">=3.10"\n\n[tool.replaytest]\n')
    for _ in range(2):  # cold, then warm from the cache: the summary keeps the grammar it needed
        run = run_replaytest("lint", "--format", "json", ".", cwd=project, timeout=240)
        assert run.returncode == 1, run.describe()
        assert len(run.json()["diagnostics"]) == len(PEP_701_FINDINGS)
        assert ("app/flow.py uses Python 3.12 syntax, but the project's requires-python '>=3.10' accepts Python "
                "3.10, which cannot parse it; analysed with the Python 3.12 grammar") in run.stderr, run.describe()
    declared = make_project({"app/__init__.py": "", "app/flow.py": PEP_701}, name="declared",
                            pyproject='[tool.ruff]\ntarget-version = "py312"\n\n[tool.replaytest]\n')
    run = _lint(declared)
    assert run.returncode == 1 and "syntax" not in run.stderr, run.describe()


def test_newer_syntax_that_cannot_be_rewritten_is_named_so_not_called_broken(make_project) -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("no syntax newer than this Python is known that libcst parses and lint cannot rewrite")
    # A type parameter list over several lines with an empty line inside: blanked, that line could not end in
    # the backslash that joins the others.
    spanning = "def pick[\n    T,\n\n](items: list[T]) -> T:\n    return items[0]\n"
    project = make_project({"app/__init__.py": "", "app/wf.py": CLOCK_WORKFLOW, "app/newer.py": HEADER + spanning})
    run = _lint(project)
    assert run.returncode == 2, run.describe()
    [diagnostic] = _by_path(run.json())["app/newer.py"]
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert diagnostic["rule"] == "RT001"
    assert diagnostic["message"].startswith(f"not analysed: Python {running} cannot parse this file (")
    assert diagnostic["message"].endswith("which is valid for a newer Python; run replaytest under the Python version "
                                          "the project uses")
    assert diagnostic["line"] == HEADER.count("\n") + 1
    assert ("app/wf.py", CLOCK_WORKFLOW_LINE, "clock") in findings(run.json())  # the rest is still checked


def test_a_type_parameter_list_over_several_lines_is_joined_by_backslashes() -> None:
    import ast

    from replaytest.lint.newer_grammar import downgrade

    # Blanked, the brackets no longer join the lines they spanned; each line of the list ends in a backslash
    # instead (CRLF line breaks too), so the class statement and every later call keep their lines.
    for newline in ("\n", "\r\n"):
        source = newline.join([
            "class Service[", "    T: Base,  # the record type", "    U,", "](Generic):",
            "    def run(self) -> float:", "        return time.time()", ""])
        downgraded = downgrade(source.encode(), source)
        assert downgraded.valid and downgraded.text is not None and downgraded.needs == (3, 12)
        assert downgraded.text.count("\n") == source.count("\n")
        tree = ast.parse(downgraded.text)
        [service] = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        assert (service.name, service.lineno, [ast.unparse(base) for base in service.bases]) == (
            "Service", 1, ["Generic"])
        calls = [(c.lineno, c.col_offset, ast.unparse(c.func)) for c in ast.walk(tree) if isinstance(c, ast.Call)]
        assert calls == [(6, 15, "time.time")]


def test_the_rewrite_keeps_line_breaks_and_parentheses_inside_the_braces() -> None:
    import ast

    from replaytest.lint.newer_grammar import downgrade

    # A parenthesised expression over lines, followed by a line break inside the braces (PEP 701).
    source = 'x = f"{(\n    time.time() +\n    1\n)}"\ny = time.monotonic()\n'
    downgraded = downgrade(source.encode(), source)
    assert downgraded.text is not None
    if sys.version_info < (3, 12):
        assert downgraded.text.count("\n") == source.count("\n")
        calls = sorted((c.lineno, c.col_offset, ast.unparse(c.func))
                       for c in ast.walk(ast.parse(downgraded.text)) if isinstance(c, ast.Call))
        assert calls == [(2, 4, "time.time"), (5, 4, "time.monotonic")]


def test_a_file_libcst_does_not_give_back_exactly_is_not_rewritten_by_its_positions() -> None:
    from replaytest.lint.newer_grammar import downgrade

    # libcst drops the spaces after an f-string conversion, so its positions after it are not the file's.
    source = 'a = f"{"q"!s  }"\nb = f"{"r"}"\n'
    assert downgrade(source.encode(), source) == (True, None, None)
