"""Progress with counts for long runs: a click progress bar on stderr when it is a terminal (a real
pseudo-terminal here), nothing extra when it is not, nor with ``--quiet``."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COUNT = 25  # above the threshold below which a run is too short for a bar
WORKFLOW = '''\
from temporalio import workflow


@workflow.defn
class Flow{n}:
    @workflow.run
    async def run(self) -> str:
        return "ok"
'''


def _run(args: list[str], cwd: Path, terminal: bool) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) with stderr a pseudo-terminal or a pipe."""
    command = [sys.executable, "-m", "replaytest", *args]
    if not terminal:
        run = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
        return run.returncode, run.stdout, run.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed: the process is done with it
            break
        if not data:
            break
        chunks.append(data)
    stdout = process.stdout.read() if process.stdout else ""
    code = process.wait(timeout=300)
    os.close(master)
    return code, stdout, b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture
def histories(tmp_path: Path) -> Path:
    shutil.copy(REPO / "fixtures" / "journal_app" / "agent.py", tmp_path / "agent.py")
    (tmp_path / "histories").mkdir()
    source = REPO / "fixtures" / "histories" / "support_agent-question.json"
    for n in range(COUNT):
        shutil.copy(source, tmp_path / "histories" / f"question-{n:02}.json")
    return tmp_path


def test_replay_shows_a_counting_bar_on_a_terminal(histories: Path) -> None:
    args = ["replay", "--workflows", "agent:support_agent", "histories"]
    code, stdout, stderr = _run(args, histories, terminal=True)
    assert code == 0, stdout + stderr
    assert "replaying" in stderr and f"{COUNT}/{COUNT}" in stderr
    assert "replaying" not in stdout


@pytest.mark.parametrize(("terminal", "quiet"), [(False, False), (True, True)], ids=["pipe", "quiet"])
def test_replay_adds_nothing_off_a_terminal_or_when_quiet(histories: Path, terminal: bool, quiet: bool) -> None:
    args = ["replay", "--workflows", "agent:support_agent", *(["--quiet"] if quiet else []), "histories"]
    code, stdout, stderr = _run(args, histories, terminal=terminal)
    assert code == 0, stdout + stderr
    assert stderr == ""
    assert f"replayed {COUNT} histories" in stdout


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    (tmp_path / "flows").mkdir()
    for n in range(COUNT):
        (tmp_path / "flows" / f"flow_{n:02}.py").write_text(WORKFLOW.format(n=n))
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    return tmp_path


def test_lint_shows_a_counting_bar_on_a_terminal_only(workflows: Path) -> None:
    code, stdout, stderr = _run(["lint", "--no-cache", "--jobs", "1", "flows"], workflows, terminal=True)
    assert code == 0, stdout + stderr
    assert "linting" in stderr and f"{COUNT}/{COUNT}" in stderr
    assert stdout.startswith("All checks passed")
    for terminal, extra in ((False, []), (True, ["--quiet"])):
        code, stdout, stderr = _run(["lint", "--no-cache", "--jobs", "1", *extra, "flows"], workflows, terminal=terminal)
        assert code == 0 and stderr == "", stderr


def test_check_shows_both_bars_on_a_terminal(histories: Path) -> None:
    (histories / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n'
    )
    code, stdout, stderr = _run(["check", "--no-cache", "agent.py"], histories, terminal=True)
    assert code == 0, stdout + stderr
    assert "replaying" in stderr and f"{COUNT}/{COUNT}" in stderr


def test_unknown_total_counts_in_place_on_a_terminal() -> None:
    """What ``import`` shows without --limit: a counter rewritten in place, ended with a newline."""
    code = (
        "from replaytest.replay.progress import Progress\n"
        "with Progress('importing', True) as bar:\n"
        "    for n in range(1, 4): bar.update(n, None)\n"
    )
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", code], stderr=slave)
    os.close(slave)
    output = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        output += data
    assert process.wait(timeout=60) == 0
    os.close(master)
    assert output.decode().replace("\r\n", "\n") == "\rimporting: 1\rimporting: 2\rimporting: 3\n"
