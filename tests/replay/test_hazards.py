"""A runtime-guard hit does not hide the change (a clock read is reported and the comparison goes on), and
no effect gets through: shell, subprocess, file writes and changes, a step body called directly — each is
stopped before it happens and reported at its line. On the journal runtime, with a recorded refund agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import refund_agent as agent
from click.testing import CliRunner
from replaykit import record, replay, tagged_line

from replaytest.cli import cli
from replaytest.replay.report import render_text

HERE = Path(__file__).resolve().parent


@pytest.fixture()
def recorded(tmp_path: Path) -> tuple[Path, Path]:
    """The refund agent's history, and its outbox emptied after recording (the step bodies really ran)."""
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    history = record(tmp_path, agent.refund_agent, {"order_id": "A-17", "outbox": str(outbox)}, name="refund")
    assert sorted(p.name for p in outbox.iterdir()) == ["email-sent", "refund-issued"]
    for made in outbox.iterdir():
        made.unlink()
    (outbox / "ledger.csv").write_text("A-17,42.50\n")
    return history, outbox


def test_unchanged_code_reports_the_clock_hazard_only(recorded: tuple[Path, Path]) -> None:
    history, outbox = recorded
    result = replay(history, agent.refund_agent)
    assert result.status == "diverged"
    [hazard] = result.hazards
    assert result.divergence == hazard
    assert hazard.kind == "nondeterministic-call" and hazard.severity == "error"
    assert hazard.source.line == tagged_line(agent.refund_agent, "clock")
    assert hazard.position == 1  # before the first recorded step
    assert "datetime.now()" in hazard.message and "use ctx.now()" in hazard.message
    # The fix adds a recorded command: the message says it breaks runs in flight and names the guard.
    assert "breaking change for runs already in flight" in hazard.message and "ctx.patched(" in hazard.message
    assert sorted(p.name for p in outbox.iterdir()) == ["ledger.csv"]  # no step body ran


def test_a_renamed_step_is_reported_beside_the_clock_hazard(recorded: tuple[Path, Path]) -> None:
    history, _ = recorded
    result = replay(history, agent.refund_agent_renamed_step)
    assert result.status == "diverged"
    assert result.divergence.kind == "command-mismatch"  # the primary divergence: what the change breaks
    assert result.divergence.position == 2
    assert result.divergence.source.line == tagged_line(agent.refund_agent_renamed_step, "renamed")
    assert "'refund payment'" in result.divergence.message and "'issue refund'" in result.divergence.message
    assert [(h.kind, h.source.line) for h in result.hazards] == [
        ("nondeterministic-call", tagged_line(agent.refund_agent_renamed_step, "clock, renamed"))
    ]
    text = render_text(result)
    assert "command-mismatch at event #2" in text and "nondeterministic-call at event #1" in text


def test_under_warn_the_hazard_is_a_warning_and_the_renamed_step_still_fails(recorded: tuple[Path, Path]) -> None:
    history, _ = recorded
    unchanged = replay(history, agent.refund_agent, hazards="warn")
    assert unchanged.status == "passed" and unchanged.divergence is None
    assert [(w.kind, w.severity) for w in unchanged.warnings] == [("nondeterministic-call", "warning")]
    assert unchanged.hazards == unchanged.warnings
    renamed = replay(history, agent.refund_agent_renamed_step, hazards="warn")
    assert renamed.status == "diverged" and renamed.divergence.kind == "command-mismatch"
    assert [h.severity for h in renamed.hazards] == ["warning"]


def test_json_output_carries_the_divergence_and_the_hazards(recorded: tuple[Path, Path], monkeypatch) -> None:
    history, _ = recorded
    monkeypatch.syspath_prepend(str(HERE))
    result = CliRunner().invoke(
        cli, ["replay", str(history), "--workflows", "refund_agent:refund_agent_renamed_step", "--format", "json"]
    )
    assert result.exit_code == 1, result.output
    [data] = json.loads(result.output)["results"]
    assert data["divergence"]["kind"] == "command-mismatch"
    assert [(h["kind"], h["severity"], h["position"], h["source"]["line"]) for h in data["hazards"]] == [
        ("nondeterministic-call", "error", 1, tagged_line(agent.refund_agent, "clock, renamed"))
    ]
    warned = CliRunner().invoke(
        cli, ["replay", str(history), "--workflows", "refund_agent:refund_agent", "--hazards", "warn", "--format", "json"]
    )
    assert warned.exit_code == 0, warned.output
    [data] = json.loads(warned.output)["results"]
    assert data["status"] == "passed" and [h["severity"] for h in data["hazards"]] == ["warning"]


# Each effect, the call the report names, and the files that must still be (or not be) in the outbox after.
STOPPED = {
    "runs_shell": "os.system",
    "runs_subprocess": "subprocess.Popen",
    "writes_with_pathlib": "open",
    "appends_with_open": "open",
    "creates_with_os_open": "os.open",
    "makes_a_folder": "os.makedirs",
    "deletes_the_ledger": "os.remove",
    "renames_the_ledger": "os.replace",
    "copies_the_ledger": "shutil.copy",
    "removes_the_outbox": "shutil.rmtree",
    "emails_directly": "refund_agent.send_email",
}


@pytest.mark.parametrize("effect", sorted(STOPPED))
def test_an_effect_in_orchestration_code_is_stopped_and_named_at_its_line(recorded: tuple[Path, Path], effect: str) -> None:
    history, outbox = recorded
    edit = agent.EDITS[effect]
    result = replay(history, edit)
    # Nothing happened: the outbox holds the ledger exactly as it was, and nothing else.
    assert sorted(p.name for p in outbox.iterdir()) == ["ledger.csv"]
    assert (outbox / "ledger.csv").read_text() == "A-17,42.50\n"
    assert result.status == "diverged"
    divergence = result.divergence
    assert divergence.kind == "nondeterministic-call" and divergence.severity == "error"
    function = getattr(agent, effect)
    assert (divergence.source.path, divergence.source.line) == (agent.__file__, tagged_line(function, effect))
    body = "the step body " if effect == "emails_directly" else ""
    assert divergence.message.startswith(f"stopped {body}{STOPPED[effect]}()")
    assert result.hazards == [divergence]


def test_an_effect_is_stopped_even_under_warn(recorded: tuple[Path, Path]) -> None:
    history, outbox = recorded
    result = replay(history, agent.EDITS["runs_shell"], hazards="warn")
    assert result.status == "diverged" and result.divergence.severity == "error"
    assert not (outbox / "shell-ran").exists()


def test_reading_a_file_is_no_effect(recorded: tuple[Path, Path]) -> None:
    history, _ = recorded
    result = replay(history, agent.EDITS["reads_the_ledger"])
    assert result.status == "passed", render_text(result)
    assert result.hazards == []


def test_the_step_body_works_again_after_replay(recorded: tuple[Path, Path]) -> None:
    history, outbox = recorded
    replay(history, agent.EDITS["emails_directly"])
    assert agent.send_email(str(outbox), "ana@example.com", "hello") is True
    assert (outbox / "email-sent").read_text() == "ana@example.com: hello"


PROCESS_SCRIPT = '''
import os, pty, sys
from replaytest.replay.guards import NondeterministicCall, guarded

marker = sys.argv[1]
shell = ["/bin/sh", "-c", f"touch {marker}"]
attempts = {
    "os.execv": lambda: os.execv(shell[0], shell),
    "os.execvp": lambda: os.execvp("sh", shell),
    "os.spawnv": lambda: os.spawnv(os.P_WAIT, shell[0], shell),
    "os.posix_spawn": lambda: os.posix_spawn(shell[0], shell, dict(os.environ)),
    "os.fork": lambda: os.fork() or None,
    "os.forkpty": lambda: os.forkpty(),
    "pty.spawn": lambda: pty.spawn(shell),
    "os.system": lambda: os.system(shell[2]),
}
with guarded() as state:
    for name, attempt in attempts.items():
        try:
            attempt()
        except NondeterministicCall as stopped:
            print(name, stopped.call, stopped.source.line)
        else:
            print(name, "RAN")
'''


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process calls")
def test_every_kind_of_process_creation_is_stopped(tmp_path: Path) -> None:
    """In a child process of its own: a guard that failed must not replace or fork the test process."""
    script = tmp_path / "orchestration.py"
    script.write_text(PROCESS_SCRIPT)
    marker = tmp_path / "marker"
    run = subprocess.run([sys.executable, str(script), str(marker)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = PROCESS_SCRIPT.splitlines()
    names = ("os.execv", "os.execvp", "os.spawnv", "os.posix_spawn", "os.fork", "os.forkpty", "pty.spawn", "os.system")
    # Each is named at the lambda that made the call (the line of its entry in ``attempts``).
    entry = {name: next(number for number, text in enumerate(lines, 1) if text.startswith(f'    "{name}"')) for name in names}
    expected = [f"{name} {name} {entry[name]}" for name in names]
    assert run.stdout.splitlines() == expected
    assert not marker.exists()


def test_pytest_fails_on_the_hazard_by_default_and_warns_with_replay_hazards_warn(
    recorded: tuple[Path, Path], pytester: pytest.Pytester
) -> None:
    history, _ = recorded
    (pytester.path / "histories").mkdir()
    (pytester.path / "histories/refund.json").write_text(history.read_text())
    (pytester.path / "refund_agent.py").write_text((HERE / "refund_agent.py").read_text())
    pytester.makefile(".ini", pytest='[pytest]\nreplay_paths = histories\nreplay_workflows = refund_agent:refund_agent\n')
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*nondeterministic-call at event #1: orchestration code called datetime.now()*"])
    warned = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--replay-hazards=warn")
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(["nondeterministic-call: 1 warning(s) (replay_hazards = warn)"])
    (pytester.path / "pytest.ini").write_text(
        "[pytest]\nreplay_paths = histories\nreplay_workflows = refund_agent:refund_agent\nreplay_hazards = warn\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1, warnings=1)


def test_check_annotates_the_renamed_step_and_the_clock_hazard_each_at_its_line(recorded: tuple[Path, Path]) -> None:
    from replaytest.replay.annotations import replay_annotations

    history, _ = recorded
    result = replay(history, agent.refund_agent_renamed_step)
    found = [(a.code, a.line, a.level) for a in replay_annotations([result])]
    assert found == [
        ("replay/command-mismatch", tagged_line(agent.refund_agent, "renamed"), "error"),
        ("replay/nondeterministic-call", tagged_line(agent.refund_agent, "clock, renamed"), "error"),
    ]
