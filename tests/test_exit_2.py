"""Input that cannot be used gives exit 2 and one clear ``error:`` line, never a traceback (exit 1 is
reserved for findings and divergences). Each case runs the real command line in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "fixtures/histories/support_agent-question.json"
AGENT = REPO / "fixtures/journal_app/agent.py"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def _one_error_line(run: subprocess.CompletedProcess[str], expected: str) -> None:
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expected in errors[0], run.stderr


@pytest.mark.parametrize(
    ("pyproject", "expected"),
    [
        (b'tool = "x"\n', "[tool] must be a table"),
        (b"[tool.replaytest]\n# \xff\xfe not UTF-8\n", "is not UTF-8 (byte"),
        (b"[tool.replaytest]\nx = " + b"[" * 3000 + b"]" * 3000 + b"\n", "is nested too deeply to read"),
    ],
    ids=["tool-is-a-string", "non-utf8", "deep-toml"],
)
def test_broken_pyproject(tmp_path: Path, pyproject: bytes, expected: str) -> None:
    (tmp_path / "pyproject.toml").write_bytes(pyproject)
    (tmp_path / "a.py").write_text("x = 1\n")
    _one_error_line(_run(tmp_path, "lint", "--no-cache", "."), expected)
    _one_error_line(_run(tmp_path, "replay", str(HISTORY), "-w", "agent:support_agent"), expected)


def test_write_baseline_into_a_missing_folder_makes_it_as_output_file_does(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    run = _run(tmp_path, "lint", "--no-cache", "--write-baseline", "missing/b.json", ".")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads((tmp_path / "missing" / "b.json").read_text())["findings"] == []
    run = _run(tmp_path, "lint", "--no-cache", "-o", "nodir/out.txt", ".")
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "nodir" / "out.txt").is_file()


def test_write_baseline_where_a_file_stands_for_its_folder(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "taken").write_text("a file, not a folder\n")
    _one_error_line(_run(tmp_path, "lint", "--no-cache", "--write-baseline", "taken/b.json", "."),
                    "cannot write the baseline taken/b.json:")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"version": 1, "findings": [Infinity]}', "Infinity is not a JSON value"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
    ids=["infinity", "deep"],
)
def test_broken_baseline(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "baseline.json").write_text(text)
    _one_error_line(_run(tmp_path, "lint", "--no-cache", "--baseline", "baseline.json", "."), expected)


def test_deeply_nested_cache_entry_is_a_miss(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "wf.py").write_text(
        "import time\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass W:\n    @workflow.run\n"
        "    async def run(self) -> float:\n        return time.time()\n")
    first = _run(tmp_path, "lint", ".")
    assert first.returncode == 1, first.stdout + first.stderr
    entries = list((tmp_path / ".replaytest_cache").rglob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text("[" * 100_000 + "]" * 100_000)
    second = _run(tmp_path, "lint", ".")
    assert (second.returncode, second.stdout) == (1, first.stdout), second.stderr


def _histories(folder: Path) -> dict[str, str]:
    text = HISTORY.read_text(encoding="utf-8")
    document = json.loads(text)
    nested: object = "x"
    for _ in range(900):
        nested = [nested]
    cases = {
        "surrogate.json": (text.replace('"id": "', '"id": "\\ud800', 1), "$.workflow.id: string holds a lone UTF-16 surrogate"),
        "bigint.json": (text.replace('"format_version": 1', '"format_version": ' + "9" * 5000),
                        "an integer has more digits than Python converts"),
        "deep.json": (json.dumps(dict(document, input={"nested": nested})), "nested deeper than 400 levels"),
    }
    for name, (content, _) in cases.items():
        (folder / name).write_text(content, encoding="utf-8")
    return {name: expected for name, (_, expected) in cases.items()}


def test_hostile_histories_in_diff_and_redact(tmp_path: Path) -> None:
    for name, expected in _histories(tmp_path).items():
        _one_error_line(_run(tmp_path, "diff", name, str(HISTORY)), expected)
        _one_error_line(_run(tmp_path, "redact", "--out", "out", name), expected)


def test_hostile_histories_in_replay(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT.read_text())
    for name, expected in _histories(tmp_path).items():
        run = _run(tmp_path, "replay", name, "-w", "agent:support_agent")
        assert run.returncode == 2 and "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
        assert expected in run.stdout


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("raise RuntimeError('boom')\n", "cannot import 'broken_mod:x': importing it raised RuntimeError: boom"),
        ("def f(:\n", "cannot import 'broken_mod:x': syntax error ("),
        ("import sys\nsys.exit(3)\n", "cannot import 'broken_mod:x': importing it called sys.exit(3)"),
    ],
    ids=["raises", "syntax-error", "sys-exit-3"],
)
def test_workflows_module_that_fails_on_import(tmp_path: Path, source: str, expected: str) -> None:
    (tmp_path / "broken_mod.py").write_text(source)
    _one_error_line(_run(tmp_path, "replay", str(HISTORY), "--workflows", "broken_mod:x"), expected)


def test_pytest_reports_a_failing_import_as_one_short_usage_error(tmp_path: Path) -> None:
    (tmp_path / "broken_mod.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "histories").mkdir()
    for name in ("a.json", "b.json"):
        (tmp_path / "histories" / name).write_text(HISTORY.read_text(encoding="utf-8"))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["broken_mod:x"]\n')
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "histories"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 4, run.stdout + run.stderr  # pytest's usage error, as `replay` exits 2
    reason = "cannot import 'broken_mod:x': importing it raised RuntimeError: boom"
    # One line for the run, naming the setting, not one failure per history.
    [line] = [line for line in run.stderr.splitlines() if reason in line]
    assert line.startswith("ERROR: cannot load the current code to replay the histories against (replay_workflows in ")
    assert "Traceback" not in run.stderr and "failed" not in run.stdout


NOT_PYTHON = "not a Python file (lint reads .py and .pyi files, and scripts whose first line is a python shebang)"


@pytest.mark.parametrize("whole_project", [False, True], ids=["files", "whole-project"])
def test_a_named_file_that_is_not_python_is_an_error(tmp_path: Path, whole_project: bool) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "wf.py").write_text("x = 1\n")
    (tmp_path / "notes.md").write_text("# Notes\n\nNot *Python*.\n")
    (tmp_path / "settings.yaml").write_text("retries: 3\n")  # parses as Python: it must not pass silently
    (tmp_path / "deploy").write_text("#!/usr/bin/env python3\nimport os\n")  # a script pre-commit calls Python
    scope = ("--whole-project",) if whole_project else ()
    for name in ("notes.md", "settings.yaml"):
        _one_error_line(_run(tmp_path, "lint", "--no-cache", *scope, name, "wf.py"), f"{name}: {NOT_PYTHON}")
    run = _run(tmp_path, "lint", "--no-cache", *scope, "deploy", "wf.py")
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_missing_file_named_with_whole_project_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "wf.py").write_text("x = 1\n")
    _one_error_line(_run(tmp_path, "lint", "--whole-project", "--force-exclude", "gone.py"),
                    "gone.py: no such file or directory")


@pytest.mark.parametrize("quiet", ["-q", "-qq", "--silent"])
def test_verbose_with_quiet_is_a_usage_error(tmp_path: Path, quiet: str) -> None:
    (tmp_path / "wf.py").write_text("x = 1\n")
    shown = "--silent" if quiet == "--silent" else "-q/--quiet"
    _one_error_line(_run(tmp_path, "lint", "-v", quiet, "wf.py"),
                    f"-v/--verbose cannot be used with {shown}: give one of them")


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "error: missing.toml: cannot be read: No such file or directory"),
     ("[select\n", "error: missing.toml: is not valid TOML: Expected ']'")],
    ids=["missing", "not-toml"],
)
def test_a_config_file_that_cannot_be_read_is_named_without_a_table(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    # --config takes either shape; an unreadable file has no [tool.replaytest] table to name.
    (tmp_path / "wf.py").write_text("x = 1\n")
    if content is not None:
        (tmp_path / "missing.toml").write_text(content)
    run = _run(tmp_path, "lint", "--config", "missing.toml", "wf.py")
    _one_error_line(run, expected.removeprefix("error: "))
    assert run.stderr.startswith(expected), run.stderr
