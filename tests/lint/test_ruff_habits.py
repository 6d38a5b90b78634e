"""More of what a ruff user reaches for: ``--extend-select``/``--extend-ignore`` on the command line,
``--exit-non-zero-on-fix``, ``lint --diff``, ``fix`` of a file read from stdin, ``-q``/``-qq``/``--silent``,
``--color`` with ``NO_COLOR``/``FORCE_COLOR``, ``-v``, and ``--output-format junit``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lintkit import run_replaytest, write_files

WORKFLOW = '''\
import random
import time

from temporalio import workflow


@workflow.defn
class Stamp:
    @workflow.run
    async def run(self) -> float:
        return time.time() + random.random()
'''
# The imports only the fixed calls used are removed (the blank line after them stays).
FIXED = WORKFLOW.replace("import random\nimport time\n", "").replace(
    "time.time() + random.random()", "workflow.time() + workflow.random().random()")
ESC = "\x1b["


def _project(tmp_path: Path, config: str = "") -> Path:
    write_files(tmp_path, {"app/wf.py": WORKFLOW, "replaytest.toml": config})
    return tmp_path


def _rules(root: Path, *args: str) -> set[str]:
    run = run_replaytest("lint", "--no-cache", "--format", "json", "app", *args, cwd=root)
    assert run.returncode in (0, 1), run.stderr
    return {d["rule"] for d in json.loads(run.stdout)["diagnostics"]}


def test_extend_select_and_extend_ignore_add_to_the_configuration(tmp_path: Path) -> None:
    root = _project(tmp_path, 'select = ["RT101"]\n')
    assert _rules(root) == {"RT101"}
    assert _rules(root, "--extend-select", "RT102") == {"RT101", "RT102"}
    assert _rules(root, "--select", "RT102", "--extend-select", "RT101") == {"RT101", "RT102"}
    assert _rules(root, "--extend-select", "RT102", "--extend-ignore", "RT101") == {"RT102"}
    bad = run_replaytest("lint", "app", "--extend-select", "nonsense", cwd=root)
    assert bad.returncode == 2 and "--extend-select" in bad.stderr


def test_exit_non_zero_on_fix(tmp_path: Path) -> None:
    root = _project(tmp_path)
    plain = run_replaytest("fix", "--no-cache", "app", cwd=root)
    assert plain.returncode == 0 and (root / "app/wf.py").read_text(encoding="utf-8") == FIXED, plain.stderr
    (root / "app/wf.py").write_text(WORKFLOW, encoding="utf-8")
    strict = run_replaytest("lint", "--no-cache", "--fix", "--exit-non-zero-on-fix", "app", cwd=root)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert (root / "app/wf.py").read_text(encoding="utf-8") == FIXED
    # Nothing left to fix: the flag has nothing to report.
    assert run_replaytest("fix", "--no-cache", "--exit-non-zero-on-fix", "app", cwd=root).returncode == 0


def test_lint_diff_prints_the_fixes_writes_nothing_and_exits_1(tmp_path: Path) -> None:
    root = _project(tmp_path)
    run = run_replaytest("lint", "--no-cache", "--diff", "app", cwd=root)
    assert run.returncode == 1, run.stderr
    assert "--- a/app/wf.py" in run.stdout and "+        return workflow.time() + workflow.random().random()" in run.stdout
    assert (root / "app/wf.py").read_text(encoding="utf-8") == WORKFLOW
    (root / "app/wf.py").write_text(FIXED, encoding="utf-8")
    clean = run_replaytest("lint", "--no-cache", "--diff", "app", cwd=root)
    assert clean.returncode == 0 and clean.stdout == ""
    both = run_replaytest("lint", "--fix", "--diff", "app", cwd=root)
    assert both.returncode == 2 and "give one of them" in both.stderr


def test_fix_reads_stdin_and_writes_the_fixed_source_to_stdout(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "app/wf.py").unlink()  # the path only names the file: nothing is read or written there
    done = subprocess.run([sys.executable, "-m", "replaytest", "fix", "--no-cache", "-", "--stdin-filename", "app/wf.py"],
                          input=WORKFLOW.encode(), capture_output=True, cwd=root, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == FIXED
    assert "Fixed 2 finding(s); 0 remaining." in done.stderr.decode()
    assert not (root / "app/wf.py").exists()
    # ruff's `check --fix --stdin-filename` spelling works the same.
    via_lint = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--fix", "--no-cache", "--stdin-filename",
                               "app/wf.py"], input=WORKFLOW.encode(), capture_output=True, cwd=root, timeout=180)
    assert via_lint.returncode == 0 and via_lint.stdout.decode() == FIXED, via_lint.stderr
    missing = subprocess.run([sys.executable, "-m", "replaytest", "fix", "-"], input=b"", capture_output=True,
                             cwd=root, timeout=180)
    assert missing.returncode == 2 and b"--stdin-filename" in missing.stderr


def test_quiet_drops_the_summary_line_and_silent_prints_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path)
    loud = run_replaytest("lint", "--no-cache", "app", cwd=root)
    assert "Found 2 findings" in loud.stdout
    quiet = run_replaytest("lint", "--no-cache", "-q", "app", cwd=root)
    assert quiet.returncode == 1 and "RT101" in quiet.stdout and "Found" not in quiet.stdout
    for flags in (("-qq",), ("--silent",)):
        silent = run_replaytest("lint", "--no-cache", *flags, "app", cwd=root)
        assert silent.returncode == 1 and silent.stdout == "" and silent.stderr == ""
    (root / "app/wf.py").write_text(FIXED, encoding="utf-8")
    clean = run_replaytest("lint", "--no-cache", "-q", "app", cwd=root)
    assert clean.returncode == 0 and clean.stdout == ""


def test_color_follows_the_flag_then_force_color_then_no_color(tmp_path: Path) -> None:
    root = _project(tmp_path)

    def colored(*flags: str, **env: str) -> bool:
        run = run_replaytest("lint", "--no-cache", *flags, "app", cwd=root, env={"NO_COLOR": "", **env})
        assert run.returncode == 1 and "RT101" in run.stdout
        return ESC in run.stdout

    assert not colored()  # auto, and stdout is a pipe
    assert colored("--color", "always")
    assert colored("--color", "always", NO_COLOR="1")  # the flag wins over the environment
    assert colored(FORCE_COLOR="1")
    assert not colored("--color", "never", FORCE_COLOR="1")
    assert not colored(NO_COLOR="1")
    # Machine-readable formats are never coloured.
    json_run = run_replaytest("lint", "--no-cache", "--format", "json", "--color", "always", "app", cwd=root)
    assert ESC not in json_run.stdout and json.loads(json_run.stdout)


def test_verbose_says_which_configuration_file_was_read(tmp_path: Path) -> None:
    root = _project(tmp_path, 'select = ["RT101"]\n')
    run = run_replaytest("lint", "--no-cache", "-v", "app", cwd=root)
    assert f"replaytest: configuration file: {root.resolve() / 'replaytest.toml'}" in run.stderr
    assert "replaytest: 1 file(s) checked" in run.stderr
    assert "configuration file" not in run_replaytest("lint", "--no-cache", "app", cwd=root).stderr


def test_output_format_junit_is_one_failing_case_per_file_with_findings(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    root = _project(tmp_path)
    write_files(root, {"app/clean.py": "x = 1\n"})
    for flag in ("--output-format", "--format"):
        run = run_replaytest("lint", "--no-cache", flag, "junit", "app", cwd=root)
        assert run.returncode == 1, run.stderr
        suite = ET.fromstring(run.stdout).find("testsuite")
        assert suite is not None and suite.get("name") == "replaytest lint"
        [case] = suite.findall("testcase")
        assert case.get("file") == "app/wf.py"
        failure = case.find("failure")
        assert failure is not None and failure.get("type") == "RT101,RT102" and "app/wf.py:11:16: RT101" in (failure.text or "")
    (root / "app/wf.py").write_text(FIXED, encoding="utf-8")
    clean = run_replaytest("lint", "--no-cache", "--output-format", "junit", "app", cwd=root)
    assert clean.returncode == 0 and ET.fromstring(clean.stdout).get("failures") == "0", clean.stdout
