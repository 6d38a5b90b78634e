"""The pre-commit hook's ``replaytest lint`` without click (``replaytest.lint_entry``): for each argument list it
takes, its stdout, stderr and exit code are the click command's byte for byte, and it really ran without
click; any other argument goes to click."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, write_files

# Runs replaytest's console-script function (lean where it can be) or the click group's, in a fresh process,
# and says on the last stderr line whether click was imported.
RUNNER = """
import sys
which = sys.argv[1]
sys.argv = ["replaytest", *sys.argv[2:]]
if which == "lean":
    from replaytest.cli import main
else:
    from replaytest.cli.process import main
try:
    main()
finally:
    sys.stdout.flush()
    print(f"click imported: {'click' in sys.modules}", file=sys.stderr)
"""

HELPER_WITH_CLOCK = "import time\n\n\ndef label(name):\n    return f'{name}{time.time()}'\n"
WORKFLOW = '''\
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from app.labels import label


@workflow.defn
class Labelled:
    @workflow.run
    async def run(self, name: str) -> str:
        return label(name)
'''


def _run(project: Path, which: str, *arguments: str) -> tuple[int, str, str, bool]:
    done = subprocess.run([sys.executable, "-c", RUNNER, which, *arguments], cwd=project, capture_output=True,
                          text=True, timeout=120)
    *stderr, flag = done.stderr.rstrip("\n").split("\n")
    return done.returncode, done.stdout, "\n".join(stderr), flag == "click imported: True"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return write_files(tmp_path / "proj", {
        "pyproject.toml": '[tool.replaytest]\nexclude = ["generated"]\n',
        "app/__init__.py": "",
        "app/labels.py": HELPER_WITH_CLOCK,
        "app/wf.py": WORKFLOW,
        "app/clock.py": CLOCK_WORKFLOW,
        "app/quiet.py": CLOCK_WORKFLOW.replace("datetime.now()", "datetime.now()  # replaytest: ignore[RT102]"),
        "generated/skip.py": CLOCK_WORKFLOW,
    })


@pytest.mark.parametrize("arguments", [
    ("lint", "--whole-project", "--force-exclude", "app/labels.py"),
    ("lint", "--whole-project", "--force-exclude", "app/wf.py", "app/clock.py"),
    ("lint", "--format", "json", "."),
    ("lint", "--format=sarif", "--no-cache", "."),
    ("lint", "--output-format", "github", "--exit-zero", "app"),
    ("lint", "--force-exclude", "generated/skip.py"),
    ("lint", "missing.py"),
    ("lint",),
])
def test_lean_lint_writes_what_the_click_command_writes(project: Path, arguments: tuple[str, ...]) -> None:
    click_run = _run(project, "click", *arguments)
    lean_run = _run(project, "lean", *arguments)
    assert lean_run[:3] == click_run[:3]
    assert lean_run[3] is False and click_run[3] is True, "the lean path imported click (or click did not run)"


def test_a_configuration_error_is_the_same_exit_2(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.replaytest]\nselect = ["XX9"]\n', encoding="utf-8")
    for arguments in (("lint", "."), ("lint", "--format", "json", "--whole-project", "app/wf.py")):
        click_run, lean_run = _run(project, "click", *arguments), _run(project, "lean", *arguments)
        assert lean_run[:3] == click_run[:3] and lean_run[0] == 2, lean_run
        assert not lean_run[3]


def test_a_syntax_error_is_the_same_exit_2(project: Path) -> None:
    (project / "app" / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    click_run, lean_run = _run(project, "click", "lint", "."), _run(project, "lean", "lint", ".")
    assert lean_run[:3] == click_run[:3] and lean_run[0] == 2, lean_run


@pytest.mark.parametrize("arguments", [
    ("lint", "--statistics", "."), ("lint", "--help"), ("lint", "-", "--stdin-filename", "x.py"),
    ("lint", "--format", "junit", "."), ("lint", "--", "app"), ("rules",),
])
def test_other_arguments_are_left_to_click(project: Path, arguments: tuple[str, ...]) -> None:
    assert _run(project, "lean", *arguments)[3], "a run the lean path does not cover skipped click"


# What a serial hook run must not load, compile or run: threading (a process pool's and the deep-nesting fallback's),
# textwrap (replay's model-call lookup) and the control-character patterns (compiled by ``re`` on their first use,
# and a clean run in the JSON format escapes nothing), nor the cyclic garbage collector.
IMPORT_PROBE = """
import re, sys
sys.argv = ["replaytest", *sys.argv[1:]]
from replaytest.cli import main
try:
    main()
finally:
    from replaytest import fileio
    compiled = {key[1] for key in re._cache}
    loaded = [name for name in ("threading", "textwrap") if name in sys.modules]
    loaded += [name for name in ("_CONTROL", "_CONTROL_AND_NEWLINE")  # compiled at import, or during the run
               if not isinstance(getattr(fileio, name), str) or getattr(fileio, name) in compiled]
    import gc
    loaded += [] if not gc.isenabled() else ["the cyclic garbage collector"]  # off for the lean run's short life
    print("loaded: " + " ".join(loaded), file=sys.stderr)
"""


def test_a_serial_hook_run_loads_and_runs_only_what_it_needs(project: Path) -> None:
    (project / "app" / "quiet.py").unlink()  # its suppression comment brings libcst's rule, and libcst imports both
    arguments = ("lint", "--format", "json", "--whole-project", "--force-exclude", "app/labels.py")
    for _ in range(2):  # cold, then warm
        done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, *arguments], cwd=project, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 1, done.stderr  # the clock helper reached from the workflow is a finding
        assert done.stderr.rstrip("\n").split("\n")[-1] == "loaded: ", done.stderr


# What a hook run after the first (the cache filled) must not import, whether the named file is unchanged or was
# just edited (parsed again): ``dataclasses`` (with ``inspect``, ``dis`` and ``tokenize`` under it: the classes a
# lint run builds are records, ``replaytest.records``), nor ``tokenize`` (only a file with suppression comments
# needs it).
WARM_PROBE = """
import sys
sys.argv = ["replaytest", *sys.argv[1:]]
from replaytest.cli import main
try:
    main()
finally:
    print("loaded: " + " ".join(name for name in ("dataclasses", "inspect", "tokenize") if name in sys.modules),
          file=sys.stderr)
"""


def test_a_warm_hook_run_imports_no_dataclasses_machinery(project: Path) -> None:
    (project / "app" / "quiet.py").unlink()  # its suppression comment is read with tokenize on every run
    arguments = ("lint", "--format", "json", "--whole-project", "--force-exclude", "app/labels.py")

    def probe() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", WARM_PROBE, *arguments], cwd=project, capture_output=True,
                              text=True, timeout=120)

    cold, warm = probe(), probe()
    with (project / "app" / "labels.py").open("a", encoding="utf-8") as handle:
        handle.write("# an edit: the file is read and parsed again\n")
    edited = probe()
    for run in (cold, warm, edited):
        assert run.returncode == 1, run.stderr  # the clock helper reached from the workflow is a finding
    assert cold.stdout == warm.stdout == edited.stdout
    assert warm.stderr.rstrip("\n").split("\n")[-1] == "loaded: ", warm.stderr
    assert edited.stderr.rstrip("\n").split("\n")[-1] == "loaded: ", edited.stderr
