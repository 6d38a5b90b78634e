"""The README stays true: its rule table lists every registered rule and its option table every declared
rule option, `.ci/run` runs exactly the README's test command, and the "30 seconds" example (files and
terminal session parsed from the README, so the README stays the single source) prints byte for byte what
the README shows."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from replaytest.lint.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_rule_table_lists_every_rule_with_its_category() -> None:
    rows = dict(re.findall(r"^\| `(RT\d{3})` \| `([a-z-]+)` \|", README, flags=re.M))
    registered = {rule.code: rule.category for rule in load_rules()}
    assert rows == registered


def test_rule_option_table_lists_every_declared_option_with_its_default() -> None:
    rows = set(re.findall(r"^\| `\[tool\.replaytest\.rules\.(\w+)\]` \| `([\w-]+)` \| [^|]+ \| `([^`]*)` \|",
                          README, flags=re.M))
    declared = {(rule.code, option.name, json.dumps(list(option.default) if isinstance(option.default, tuple)
                                                     else option.default))
                for rule in load_rules() for option in rule.options}
    assert rows == declared and rows


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = next(block.strip() for block in _shell_blocks() if "pytest" in block)
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci_script.splitlines(), f"{test_command!r} is not a line of .ci/run"


def _thirty_second_files() -> dict[str, str]:
    """The "30 seconds" source files, exactly as the README shows them (path from the first comment line)."""
    section = README.split("## 30 seconds", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"```python\n# ([\w/]+\.py)\n(.*?)```", section, flags=re.S))


def _thirty_second_session() -> list[tuple[list[str], str]]:
    """(command words, printed output) for each ``$ replaytest ...`` line of the example's terminal block."""
    section = README.split("## 30 seconds", 1)[1].split("\n## ", 1)[0]
    block = next(text for text in re.findall(r"```text\n(.*?)```", section, flags=re.S) if "$ replaytest lint" in text)
    session = []
    for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
        command, _, output = chunk.partition("\n")
        session.append((shlex.split(command), output.rstrip("\n") + "\n"))
    return session


def test_thirty_second_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    # The README's files and nothing else (no __init__.py: Python imports app/ as a namespace package),
    # then the README's commands in order, each printing exactly the README's text.
    files = _thirty_second_files()
    assert set(files) == {"app/workflows.py", "app/util.py"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    session = _thirty_second_session()
    assert [words[:2] for words, _ in session] == [["replaytest", "lint"], ["replaytest", "fix"]]
    for words, expected in session:
        run = subprocess.run(
            [sys.executable, "-m", "replaytest", *words[1:]],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        assert run.stdout == expected, f"$ {' '.join(words)}\n{run.stdout}\nstderr:\n{run.stderr}"
        assert run.returncode == 1, run.stderr  # a finding remains after each step
        assert run.stderr == "", run.stderr  # the terminal shows nothing beyond the README's text
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")) == sorted(files)


_DIVERGENCE = re.compile(r"^(\S+\.json): .*: diverged .*\n(?:(?: {2}.*)\n)+", flags=re.M)


def _divergence_reports(output: str) -> dict[str, str]:
    """history path -> its whole divergence report, from replaytest's or pytest's output."""
    return {match.group(1): match.group(0) for match in _DIVERGENCE.finditer(output)}


def test_check_fails_on_the_ci_example_with_the_divergences_pytest_reports(tmp_path: Path) -> None:
    # The README's CI example: its pyproject.toml exactly as shown (replay configured only through
    # [tool.pytest.ini_options]), the bundled agent with a step added after its histories were recorded.
    section = README.split("Then, in CI, replay what production recorded", 1)[1]
    pyproject = re.search(r"```toml\n# pyproject.toml\n(.*?)```", section, flags=re.S)
    assert pyproject is not None and "[tool.replaytest" not in pyproject.group(1)
    (tmp_path / "pyproject.toml").write_text(pyproject.group(1), encoding="utf-8")
    shutil.copytree(ROOT / "fixtures" / "histories", tmp_path / "histories")
    source = (ROOT / "fixtures" / "journal_app" / "agent.py").read_text(encoding="utf-8")
    fetch = '    orders = ctx.step("fetch orders", fetch_orders, ticket["customer"])\n'
    assert fetch in source
    # The step the README says was added, as it shows it: the demo can be reproduced from the text alone.
    added = re.search(r"this line right after its `fetch orders` step:\n\n```python\n(.*?)```", section, flags=re.S)
    assert added is not None
    assert added.group(1) == '    ctx.step("load profile", fetch_orders, ticket["customer"])\n'
    (tmp_path / "agent.py").write_text(source.replace(fetch, fetch + added.group(1)), encoding="utf-8")

    check = subprocess.run([sys.executable, "-m", "replaytest", "check"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=180)
    pytest_run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert check.returncode == 1, check.stdout + check.stderr
    assert pytest_run.returncode == 1, pytest_run.stdout + pytest_run.stderr
    assert "replay skipped" not in check.stdout
    from_check, from_pytest = _divergence_reports(check.stdout), _divergence_reports(pytest_run.stdout)
    assert sorted(from_check) == sorted(from_pytest) == [
        "histories/support_agent-question.json", "histories/support_agent-refund-approved.json",
        "histories/support_agent-refund-waiting.json"]
    assert from_check == from_pytest
    # And both print the report the README shows (its text between the "..." elisions).
    shown = re.search(r"\$ python -m pytest\n(.*?)```", section, flags=re.S)
    assert shown is not None
    report = shown.group(1).split("...\n")[1]
    assert report in from_check["histories/support_agent-question.json"]
    assert report in from_pytest["histories/support_agent-question.json"]
    assert "replayed 3 histories: 0 passed, 3 diverged, 0 stale" in pytest_run.stdout
    assert "replayed 3 histories: 0 passed, 3 diverged, 0 stale" in check.stdout


def test_the_langgraph_nested_graphs_paragraph_says_what_replay_does() -> None:
    # The paragraph once said nested runs were refused after replay had learnt to check them; the verdicts it
    # names are the ones tests/langgraph/test_langgraph_nested.py asserts on threads recorded on a real saver.
    paragraph = README.split("- **Nested graphs**", 1)[1].split("\n- ", 1)[0].split("\n#", 1)[0]
    for verdict in ("`args-mismatch` at the\n  `invoke` line", "`missing-command`", "warns\n  a thread in flight"):
        assert verdict in paragraph, verdict
    nested_tests = (ROOT / "tests" / "langgraph" / "test_langgraph_nested.py").read_text(encoding="utf-8")
    for test in ("test_drafts_swapped_before_the_nested_call_diverge_on_both_threads",
                 "test_a_nested_run_the_code_no_longer_starts_is_missing",
                 "test_another_nested_entrypoint_diverges_the_completed_thread_and_warns_the_parked_one"):
        assert f"def {test}(" in nested_tests, test
