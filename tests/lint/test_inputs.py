"""Inputs that are not tidy UTF-8 Python files: syntax errors, PEP 263 encodings, undecodable and binary
files, symlink loops, directories named like modules, unreadable files. Each is reported (or skipped
for a stated reason), never a crash, and the other files are still checked."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, CLOCK_WORKFLOW_LINE, findings, run_replaytest

BROKEN_WORKFLOW = '''\
"""A workflow module someone is halfway through editing."""
from temporalio import workflow


@workflow.defn
class Broken:
    @workflow.run
    async def run(self) -> str
        return "missing colon above"
'''

GOOD = ("app/wf.py", CLOCK_WORKFLOW_LINE, "clock")


def _lint(project: Path):
    return run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project, timeout=120)


def _assert_no_crash(run) -> None:
    assert "Traceback" not in run.stderr, run.describe()


def test_syntax_error_is_a_syntax_diagnostic_and_exit_2_and_other_files_still_checked(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/wf.py": CLOCK_WORKFLOW, "app/broken.py": BROKEN_WORKFLOW})
    run = _lint(project)
    _assert_no_crash(run)
    assert run.returncode == 2, run.describe()
    report = run.json()
    syntax = [d for d in report["diagnostics"] if d["category"] == "syntax"]
    assert [d["path"] for d in syntax] == ["app/broken.py"], report["diagnostics"]
    # The error is on the `async def` line (missing colon); a parser may point at it or the next line.
    assert syntax[0]["line"] in (8, 9), syntax[0]
    assert GOOD in findings(report), "the parsable file must still be checked"
    assert report["summary"]["errors"] == 1 and report["summary"]["files"] == 3


def test_syntax_error_in_text_format_names_the_file(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/broken.py": BROKEN_WORKFLOW})
    run = run_replaytest("lint", "--no-cache", ".", cwd=project)
    _assert_no_crash(run)
    assert run.returncode == 2
    assert any(line.startswith("app/broken.py:") for line in run.stdout.splitlines()), run.describe()


def test_pep263_latin1_file_with_non_ascii_literal_is_linted(make_project) -> None:
    source = (
        "# -*- coding: latin-1 -*-\n"
        '"""Caf\u00e9 orders: a workflow module saved in Latin-1."""\n'
        "import time\n"
        "\n"
        "from temporalio import workflow\n"
        "\n"
        "\n"
        "@workflow.defn\n"
        "class Caf\u00e9Order:\n"
        "    @workflow.run\n"
        "    async def run(self) -> str:\n"
        "        greeting = 'Gr\u00fc\u00dfe aus dem Caf\u00e9'\n"
        "        return f'{greeting} {time.time()}'\n"
    )
    project = make_project({"app/wf.py": source.encode("latin-1")})
    run = _lint(project)
    _assert_no_crash(run)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {("app/wf.py", 13, "clock")}


def test_undecodable_file_is_reported_not_crashed(make_project) -> None:
    # Latin-1 bytes without a coding declaration: not valid UTF-8, so the file cannot be decoded.
    source = CLOCK_WORKFLOW.replace('"""A minimal Temporal workflow."""', '"""Caf\u00e9 workflow."""')
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/legacy.py": source.encode("latin-1")})
    run = _lint(project)
    _assert_no_crash(run)
    assert run.returncode == 2, run.describe()
    report = run.json()
    assert ("app/legacy.py", 1, "syntax") in findings(report), report["diagnostics"]
    assert GOOD in findings(report)


def test_binary_file_with_workflow_words_is_reported_not_crashed(make_project) -> None:
    blob = b"\x00\x01\x02from temporalio import workflow\n@workflow.defn\x00\xff\xfe\x89PNG\r\n\x1a\n" * 20
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/blob.py": blob})
    run = _lint(project)
    _assert_no_crash(run)
    assert run.returncode == 2, run.describe()
    report = run.json()
    assert {d["category"] for d in report["diagnostics"] if d["path"] == "app/blob.py"} == {"syntax"}
    assert GOOD in findings(report)


def test_binary_file_without_workflow_words_does_not_crash(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/image.py": bytes(range(256)) * 8})
    run = _lint(project)
    _assert_no_crash(run)
    report = run.json()
    # Whether a file nothing points at is parsed is the engine's choice; if it is, it is a syntax finding.
    assert {d["category"] for d in report["diagnostics"] if d["path"] == "app/image.py"} <= {"syntax"}
    assert GOOD in findings(report)
    assert run.returncode in (1, 2)


def test_symlink_loop_terminates_and_reports_each_file_once(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/wf.py": CLOCK_WORKFLOW})
    os.symlink(project, project / "app" / "loop", target_is_directory=True)
    os.symlink(project / "app", project / "app" / "again", target_is_directory=True)
    run = _lint(project)
    _assert_no_crash(run)
    report = run.json()
    assert findings(report) == {GOOD}, report["diagnostics"]
    assert len(report["diagnostics"]) == 1
    assert run.returncode == 1, run.describe()


def test_dangling_symlink_does_not_crash(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    os.symlink(project / "app" / "gone.py", project / "app" / "dangling.py")
    run = _lint(project)
    _assert_no_crash(run)
    assert GOOD in findings(run.json())
    assert run.returncode in (1, 2)


def test_directory_named_like_a_module_is_walked(make_project) -> None:
    project = make_project({"app/weird.py/__init__.py": "", "app/weird.py/inner.py": CLOCK_WORKFLOW})
    run = _lint(project)
    _assert_no_crash(run)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {("app/weird.py/inner.py", CLOCK_WORKFLOW_LINE, "clock")}
    explicit = run_replaytest("lint", "--format", "json", "--no-cache", "app/weird.py", cwd=project)
    _assert_no_crash(explicit)
    assert findings(explicit.json()) == {("app/weird.py/inner.py", CLOCK_WORKFLOW_LINE, "clock")}


def _without_file_permission_override() -> None:
    """Run in the child before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the capability
    bounding set, so even root is refused a file whose mode denies reading (root's effective
    capabilities after exec are its bounding set)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop = 24
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _unprivileged_reader():
    """A preexec function under which a mode-000 file cannot be read, or None when no change is needed
    (not root). Skips only if this machine can make no such process (root without CAP_SETPCAP)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    if not sys.platform.startswith("linux"):
        pytest.skip("dropping root's file-permission override needs Linux capabilities")
    return _without_file_permission_override


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_unreadable_file_is_reported_and_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/secret.py": CLOCK_WORKFLOW})
    secret = project / "app" / "secret.py"
    secret.chmod(0)
    preexec = _unprivileged_reader()
    try:
        probe = subprocess.run(
            [sys.executable, "-c", f"open({str(secret)!r}, 'rb').read()"], preexec_fn=preexec, capture_output=True
        )
        if probe.returncode == 0:
            pytest.skip("this process keeps read access to mode-000 files (cannot drop the capability)")
        run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project, preexec_fn=preexec)
    finally:
        secret.chmod(0o644)
    _assert_no_crash(run)
    assert run.returncode == 2, run.describe()
    report = run.json()
    assert ("app/secret.py", 1, "syntax") in findings(report), report["diagnostics"]
    assert GOOD in findings(report)
    assert report["summary"]["errors"] == 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_unlistable_directory_is_reported_and_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/private/hidden.py": CLOCK_WORKFLOW})
    private = project / "app" / "private"
    private.chmod(0)
    preexec = _unprivileged_reader()
    try:
        probe = subprocess.run(
            [sys.executable, "-c", f"import os; os.listdir({str(private)!r})"], preexec_fn=preexec, capture_output=True
        )
        if probe.returncode == 0:
            pytest.skip("this process keeps access to mode-000 directories (cannot drop the capability)")
        run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project, preexec_fn=preexec)
    finally:
        private.chmod(0o755)
    _assert_no_crash(run)
    assert run.returncode == 2, run.describe()
    assert "app/private" in run.stdout + run.stderr, run.describe()
    assert GOOD in findings(run.json())


def test_empty_and_whitespace_only_files_are_fine(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/empty.py": "", "app/blank.py": "\n\n   \n"})
    run = _lint(project)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {GOOD}


def test_utf8_bom_and_crlf_line_endings(make_project) -> None:
    source = "\ufeff" + CLOCK_WORKFLOW.replace("\n", "\r\n")
    project = make_project({"app/wf.py": source.encode("utf-8")})
    run = _lint(project)
    _assert_no_crash(run)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {GOOD}
