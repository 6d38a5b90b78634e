"""``replaytest lint --watch``: the real command in a subprocess lints, lints again when a Python file or the
configuration changes (findings never end it), and Ctrl-C ends it with exit 0; the options a watch cannot
take are usage errors; which changed paths start a run (exclude, .gitignore, the cache folder) is lint's
own path matching; without the watch extra the error names it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, run_replaytest, write_files

# Generous: each step waits for output the watcher prints, never for a time to pass.
_WAIT_SECONDS = 120.0


class _Lines:
    """The lines a pipe has printed so far, read by a thread, so the test can wait for one to appear."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, wanted: Callable[[str], bool], after: int, describe: Callable[[], str]) -> int:
        """The index of the first line from ``after`` on that is ``wanted``, once it has been printed."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(wanted(line) for line in self.lines[after:]), timeout=_WAIT_SECONDS)
            assert found, describe()
            return next(index for index in range(after, len(self.lines)) if wanted(self.lines[index]))


def _restore_sigint() -> None:
    # A test run started in the background inherits SIGINT ignored, and Python then raises no
    # KeyboardInterrupt: give the watcher the default, as a terminal's Ctrl-C finds it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(sys.platform == "win32", reason="Ctrl-C is sent as SIGINT")
def test_watch_lints_again_on_each_change_and_ctrl_c_exits_0(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/wf.py": "VALUE = 1\n"})
    environment = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1")
    environment.pop("REPLAYTEST_CACHE_DIR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "replaytest", "lint", "--watch", "."], cwd=project, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_restore_sigint,
    )
    out, err = _Lines(process.stdout), _Lines(process.stderr)

    def describe() -> str:
        return "stdout:\n" + "\n".join(out.lines) + "\nstderr:\n" + "\n".join(err.lines)

    def watching(line: str) -> bool:
        return line.startswith("replaytest: watching .")

    try:
        out.wait_for(lambda line: line.startswith("All checks passed"), 0, describe)
        ready = err.wait_for(watching, 0, describe)

        # A finding: reported, and the watch goes on.
        (project / "app" / "wf.py").write_text(CLOCK_WORKFLOW, encoding="utf-8")
        found = out.wait_for(lambda line: line.startswith("app/wf.py:") and " RT101 " in line, 0, describe)
        ready = err.wait_for(watching, ready + 1, describe)
        assert any(line == "replaytest: file change detected: app/wf.py" for line in err.lines), describe()

        # The configuration is watched too: ignoring the rule clears the report.
        (project / "pyproject.toml").write_text('[tool.replaytest]\nignore = ["RT101"]\n', encoding="utf-8")
        out.wait_for(lambda line: line.startswith("All checks passed"), found + 1, describe)
        err.wait_for(watching, ready + 1, describe)
        assert process.poll() is None, describe()
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        code = process.wait(timeout=_WAIT_SECONDS)
    assert code == 0, describe()
    assert not any("Traceback" in line for line in err.lines), describe()


@pytest.mark.parametrize(("options", "said"), [
    (("--fix",), "--watch cannot be used with --fix"),
    (("--diff",), "--watch cannot be used with --diff"),
    (("--stdin-filename", "app/wf.py", "-"), "cannot be used with a file read from stdin"),
    (("--output-format", "json"), "--output-format json is for tools"),
    (("--output-format", "sarif"), "--output-format sarif is for tools"),
    (("--write-baseline", "base.json"), "cannot be used with --write-baseline"),
    (("--output-file", "report.txt"), "cannot be used with --output-file"),
])
def test_watch_with_an_option_it_cannot_take_is_a_usage_error(make_project, options, said) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    run = run_replaytest("lint", "--watch", *options, cwd=project, timeout=120)
    assert run.returncode == 2, run.describe()
    assert said in run.stderr, run.describe()
    assert not (project / "base.json").exists() and not (project / "report.txt").exists()
    assert (project / "app" / "wf.py").read_text(encoding="utf-8") == CLOCK_WORKFLOW


def test_watch_without_the_extra_names_it(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    script = ("import sys; sys.modules['watchfiles'] = None; sys.argv = ['replaytest', 'lint', '--watch', '.']; "
              "from replaytest.cli import main; main()")
    run = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "--watch needs the watch extra: python -m pip install 'replaytest[watch]'" in run.stderr


def test_the_changes_that_start_a_run_are_those_lint_would_read(tmp_path: Path) -> None:
    from replaytest.cli.lint_watch import LintedChanges
    from replaytest.config import load_config

    project = write_files(tmp_path / "proj", {
        "pyproject.toml": '[tool.replaytest]\nexclude = ["generated/"]\n',
        ".gitignore": "scratch_*.py\n",
        "app/wf.py": "",
    })
    (project / ".git").mkdir()  # the work tree's top, where .gitignore applies from
    changes = LintedChanges(load_config(project))
    assert changes.wanted(str(project / "app" / "wf.py"))
    assert changes.wanted(str(project / "app" / "types.pyi"))
    assert changes.wanted(str(project / "pyproject.toml"))
    assert changes.wanted(str(project / "app" / ".gitignore"))
    assert not changes.wanted(str(project / "app" / "notes.txt"))
    assert not changes.wanted(str(project / "generated" / "wf.py")), "exclude leaves it out"
    assert not changes.wanted(str(project / "app" / "scratch_1.py")), ".gitignore leaves it out"
    assert not changes.wanted(str(project / ".replaytest_cache" / ".gitignore")), "the cache is lint's own output"
