"""Choosing what is reported: configuration errors, ``select``/``ignore`` (command line and
pyproject.toml), ``per-file-ignores``, ``exclude`` and ``# replaytest: ignore[...]`` comments."""

from __future__ import annotations

from lintkit import findings, line_of, run_replaytest

MIXED = '''\
"""A workflow with one clock, one random and one uuid finding."""
import random
import time
import uuid

from temporalio import workflow


@workflow.defn
class Mixed:
    @workflow.run
    async def run(self) -> str:
        started = time.time()
        roll = random.random()
        ident = uuid.uuid4()
        return f"{started} {roll} {ident}"
'''
CLOCK = ("app/wf.py", line_of(MIXED, "time.time()"), "clock")
RANDOM = ("app/wf.py", line_of(MIXED, "random.random()"), "random")
UUID = ("app/wf.py", line_of(MIXED, "uuid.uuid4()"), "uuid")


def _lint(project, *options: str):
    return run_replaytest("lint", "--format", "json", "--no-cache", *options, ".", cwd=project)


def _config_error(run, *names: str) -> None:
    output = run.stdout + run.stderr
    assert run.returncode == 2, run.describe()
    assert "Traceback" not in run.stderr, run.describe()
    for name in names:
        assert name in output, f"{name!r} not named in the error\n{run.describe()}"


def test_baseline_project_reports_all_three(make_project) -> None:
    project = make_project({"app/wf.py": MIXED})
    assert findings(_lint(project).json()) == {CLOCK, RANDOM, UUID}


def test_unknown_config_key_is_exit_2_naming_key_and_file(make_project) -> None:
    project = make_project({"app/wf.py": MIXED}, pyproject='[tool.replaytest]\nselct = ["clock"]\n')
    _config_error(_lint(project), "selct", "pyproject.toml")


def test_wrongly_typed_config_value_is_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": MIXED}, pyproject='[tool.replaytest]\nselect = "clock"\n')
    _config_error(_lint(project), "select", "pyproject.toml")


def test_unknown_selector_in_config_is_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": MIXED}, pyproject='[tool.replaytest]\nignore = ["clocks"]\n')
    _config_error(_lint(project), "clocks", "pyproject.toml")


def test_invalid_toml_is_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": MIXED}, pyproject="[tool.replaytest\nselect = [\n")
    _config_error(_lint(project), "pyproject.toml")


def test_unknown_framework_is_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": MIXED}, pyproject='[tool.replaytest]\nframeworks = ["temporl"]\n')
    _config_error(_lint(project), "temporl")


def test_select_on_the_command_line(make_project) -> None:
    project = make_project({"app/wf.py": MIXED})
    assert findings(_lint(project, "--select", "clock").json()) == {CLOCK}


def test_ignore_on_the_command_line(make_project) -> None:
    project = make_project({"app/wf.py": MIXED})
    assert findings(_lint(project, "--ignore", "clock").json()) == {RANDOM, UUID}


def test_select_by_rule_code(make_project) -> None:
    project = make_project({"app/wf.py": MIXED})
    report = _lint(project).json()
    [random_rule] = {d["rule"] for d in report["diagnostics"] if d["category"] == "random"}
    assert findings(_lint(project, "--select", random_rule).json()) == {RANDOM}
    assert findings(_lint(project, "--ignore", random_rule).json()) == {CLOCK, UUID}


def test_select_everything_filtered_out_exits_0(make_project) -> None:
    project = make_project({"app/wf.py": MIXED})
    run = _lint(project, "--select", "network")
    assert run.returncode == 0, run.describe()
    assert run.json()["diagnostics"] == []


def test_select_and_ignore_in_pyproject(make_project) -> None:
    selected = make_project({"app/wf.py": MIXED}, pyproject='[tool.replaytest]\nselect = ["random", "uuid"]\n', name="a")
    assert findings(_lint(selected).json()) == {RANDOM, UUID}
    ignored = make_project({"app/wf.py": MIXED}, pyproject='[tool.replaytest]\nignore = ["uuid"]\n', name="b")
    assert findings(_lint(ignored).json()) == {CLOCK, RANDOM}


def test_per_file_ignores(make_project) -> None:
    project = make_project(
        {"app/wf.py": MIXED, "app/legacy/old.py": MIXED},
        pyproject='[tool.replaytest.per-file-ignores]\n"app/legacy/*.py" = ["clock", "uuid"]\n',
    )
    legacy_random = ("app/legacy/old.py", RANDOM[1], "random")
    assert findings(_lint(project).json()) == {CLOCK, RANDOM, UUID, legacy_random}


def test_exclude(make_project) -> None:
    project = make_project(
        {"app/wf.py": MIXED, "scripts/scratch.py": MIXED}, pyproject='[tool.replaytest]\nexclude = ["scripts/*"]\n'
    )
    assert findings(_lint(project).json()) == {CLOCK, RANDOM, UUID}


SUPPRESSED = '''\
"""Suppression comments in every accepted form, and two that must not suppress."""
import random
import time
import uuid

from temporalio import workflow


@workflow.defn
class Suppressed:
    @workflow.run
    async def run(self) -> str:
        a = time.time()  # replaytest: ignore[clock]
        # replaytest: ignore[random]
        b = random.random()
        c = uuid.uuid4()  # replaytest: ignore
        d = time.time()  # replaytest: ignore[random]
        # replaytest: ignore[clock]

        e = time.time()
        f = time.monotonic()  # replaytest: ignore[uuid, clock]
        return f"{a} {b} {c} {d} {e} {f}"
'''


def test_suppression_comments(make_project) -> None:
    project = make_project({"app/wf.py": SUPPRESSED})
    report = _lint(project).json()
    assert findings(report) == {
        # The wrong category does not suppress; a comment two lines up does not either.
        ("app/wf.py", line_of(SUPPRESSED, "d = time.time()"), "clock"),
        ("app/wf.py", line_of(SUPPRESSED, "e = time.time()"), "clock"),
        # ... and those two comments, and the unneeded `uuid` of the last one, are unused suppressions (RT003).
        ("app/wf.py", line_of(SUPPRESSED, "d = time.time()"), "suppression"),
        ("app/wf.py", line_of(SUPPRESSED, "e = time.time()") - 2, "suppression"),
        ("app/wf.py", line_of(SUPPRESSED, "f = time.monotonic()"), "suppression"),
    }
    unused = {d["line"]: d["message"] for d in report["diagnostics"] if d["rule"] == "RT003"}
    assert unused[line_of(SUPPRESSED, "f = time.monotonic()")] == (
        "unused suppression: uuid in `# replaytest: ignore[uuid, clock]` suppresses nothing here"
    )


def test_suppression_by_rule_code(make_project) -> None:
    project = make_project({"app/wf.py": MIXED})
    report = _lint(project).json()
    [clock_rule] = {d["rule"] for d in report["diagnostics"] if d["category"] == "clock"}
    suppressed = MIXED.replace("started = time.time()", f"started = time.time()  # replaytest: ignore[{clock_rule}]")
    (project / "app" / "wf.py").write_text(suppressed, encoding="utf-8")
    assert findings(_lint(project).json()) == {RANDOM, UUID}


def test_suppression_of_a_transitive_finding_at_the_call_site(make_project) -> None:
    helper = 'import os\n\n\ndef region() -> str:\n    return os.environ["REGION"]\n'
    workflow_source = (
        "from temporalio import workflow\n\n"
        "with workflow.unsafe.imports_passed_through():\n"
        "    from app.env import region\n\n\n"
        "@workflow.defn\n"
        "class Regional:\n"
        "    @workflow.run\n"
        "    async def run(self) -> str:\n"
        "        first = region()  # replaytest: ignore[environment]\n"
        "        return first + region()\n"
    )
    project = make_project({"app/__init__.py": "", "app/env.py": helper, "app/wf.py": workflow_source})
    assert findings(_lint(project).json()) == {("app/wf.py", 12, "environment")}


def test_suppression_text_inside_a_string_does_not_suppress(make_project) -> None:
    # Only comments suppress; the same words inside a string literal are data.
    source = MIXED.replace(
        "        started = time.time()",
        '        marker = "# replaytest: ignore[clock]"; started = time.time()',
    )
    project = make_project({"app/wf.py": source})
    assert findings(_lint(project).json()) == {CLOCK, RANDOM, UUID}


DBOS_WORKFLOW = '''\
"""A DBOS workflow with one clock finding."""
import time

from dbos import DBOS


@DBOS.workflow()
def settle() -> float:
    return time.time()
'''


def test_frameworks_setting_turns_profiles_off(make_project) -> None:
    files = {"app/wf.py": MIXED, "app/settle.py": DBOS_WORKFLOW}
    dbos_clock = ("app/settle.py", line_of(DBOS_WORKFLOW, "time.time()"), "clock")
    everything = make_project(files, name="all")
    assert findings(_lint(everything).json()) == {CLOCK, RANDOM, UUID, dbos_clock}
    only_dbos = make_project(files, pyproject='[tool.replaytest]\nframeworks = ["dbos"]\n', name="dbos-only")
    assert findings(_lint(only_dbos).json()) == {dbos_clock}


def test_exclude_on_the_command_line(make_project) -> None:
    project = make_project({"app/wf.py": MIXED, "app/generated/wf.py": MIXED})
    assert findings(_lint(project, "--exclude", "app/generated/*").json()) == {CLOCK, RANDOM, UUID}


def test_explicit_config_file(make_project, tmp_path) -> None:
    project = make_project({"app/wf.py": MIXED})
    other = tmp_path / "strict.toml"
    other.write_text('[tool.replaytest]\nselect = ["uuid"]\n', encoding="utf-8")
    assert findings(_lint(project, "--config", str(other)).json()) == {UUID}


def test_suppression_comments_are_found_beside_strings_that_look_like_them() -> None:
    import replaytest.lint.filtering as filtering

    found = filtering.parse_suppressions('LIMIT = "# noqa: E501"  # noqa: RT101\n')
    assert [(s.line, s.selectors, s.spelling) for s in found] == [(1, ("RT101",), "noqa")]
    assert filtering.parse_suppressions('NOTE = "# replaytest: ignore"\nLIMIT = "# noqa: RT101"\n') == []


def test_other_tools_noqa_comments_cost_no_tokenizer(monkeypatch) -> None:
    import tokenize

    import replaytest.lint.filtering as filtering

    tokenized: list[str] = []
    real = tokenize.generate_tokens  # filtering imports tokenize when it first needs it
    monkeypatch.setattr(tokenize, "generate_tokens", lambda readline: tokenized.append("x") or real(readline))
    assert filtering.parse_suppressions("import logging  # noqa\nimport readline  # noqa: F401, E501\n") == []
    assert tokenized == []
    assert [s.selectors for s in filtering.parse_suppressions("import time  # noqa: F401, RT101\n")] == [("RT101",)]
    assert tokenized == ["x"]
