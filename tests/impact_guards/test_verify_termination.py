"""``replaytest impact`` cut short while it verifies a guard: SIGTERM (a cancelled CI job) and Ctrl-C both
remove the temporary copy and end the child replay together with what it started, leaving no process behind;
SIGTERM then ends the process by SIGTERM. The child is held inside the copy by the project's own package, which
(imported from the copy only) starts a helper process there, one that ignores SIGTERM, and waits; the signal goes to ``replaytest impact``
alone, as a CI runner sends it. ``sigterm_as_interrupt`` itself: the previous handler is back afterwards and
gets the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from guardkit import make_repo
from test_guards_journal_claims import INSERTED_AFTER_WAIT, _version_2

from replaytest.impact.termination import Terminated, sigterm_as_interrupt, uninterrupted

pytestmark = pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="looks for processes in /proc")

# Generous: a loaded machine may take long to replay; nothing is asserted about how long it took.
BOUND_S = 180.0

HOLDING_PACKAGE = '''\
import os
import subprocess
import sys
import time

IGNORING_SIGTERM = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open(sys.argv[1], 'w').close(); "
    "time.sleep(600)"
)

if "replaytest-impact-" in __file__:
    # Imported from the verification copy, i.e. by the child replay: start a helper there (one that ignores
    # SIGTERM: only SIGKILL ends it), say so once it ignores it, then wait.
    marker = os.environ["HOLD_MARKER"]
    helper = subprocess.Popen([sys.executable, "-c", IGNORING_SIGTERM, marker + ".helper"],
                              cwd=os.path.dirname(__file__), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    while not os.path.exists(marker + ".helper") and helper.poll() is None:
        time.sleep(0.05)
    with open(marker + ".part", "w") as handle:
        handle.write(f"{os.getpid()} {helper.pid}")
    os.replace(marker + ".part", marker)
    time.sleep(600)
'''


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _processes_in(folder: Path) -> list[int]:
    """The live processes whose working folder, command line or environment names ``folder``."""
    needle = str(folder)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _alive(int(entry.name)):
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            text = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if cwd.startswith(needle) or needle.encode() in text:
            found.append(int(entry.name))
    return found


def _wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < deadline, f"still waiting after {BOUND_S} s for {what}"
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signal_during_verification_removes_the_copy_and_ends_the_child_replay(tmp_path: Path, signum: int) -> None:
    repo = make_repo(tmp_path)
    _version_2(repo, INSERTED_AFTER_WAIT)
    (repo.root / "expenses" / "__init__.py").write_text(HOLDING_PACKAGE)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = tmp_path / "held"
    env = {"PYTHONPATH": str(repo.root), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch), "HOLD_MARKER": str(marker)}
    impact = subprocess.Popen([sys.executable, "-m", "replaytest", "impact", "--quiet"], cwd=repo.root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    held: list[int] = []
    try:
        _wait_for(lambda: marker.exists() or impact.poll() is not None, "the child replay to hold in the copy")
        assert impact.poll() is None, impact.stderr.read() if impact.stderr else ""
        held = [int(pid) for pid in marker.read_text().split()]
        [copy] = scratch.glob("replaytest-impact-*")
        assert all(_alive(pid) for pid in held)
        assert set(held) <= set(_processes_in(copy))

        impact.send_signal(signum)
        try:
            impact.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"replaytest impact still runs {BOUND_S} s after the signal")
        if signum == signal.SIGTERM:
            assert impact.returncode == -signal.SIGTERM, "SIGTERM, once everything is undone, ends the process by it"
        else:
            assert impact.returncode != 0
        assert not copy.exists(), "the temporary copy is removed"
        assert list(scratch.iterdir()) == []
        # Ended before the parent exits; polled only because a killed process may wait a moment to be reaped.
        _wait_for(lambda: not any(_alive(pid) for pid in held), "the child replay and its helper to end")
        assert _processes_in(copy) == []
    finally:
        if impact.poll() is None:
            impact.kill()
            impact.wait()
        for pid in held:  # left running only when the feature broke: do not leave them to the machine
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if impact.stderr is not None:
            impact.stderr.close()


def test_sigterm_inside_is_delivered_to_the_previous_handler_after_the_section(tmp_path: Path) -> None:
    calls: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    try:
        undone = []
        with pytest.raises(SystemExit) as ended:
            with sigterm_as_interrupt():
                assert signal.getsignal(signal.SIGTERM) is not previous
                try:
                    with uninterrupted():
                        os.kill(os.getpid(), signal.SIGTERM)
                        undone.append("the section ran to its end")
                    undone.append("not reached: Terminated is raised when the section ends")
                finally:
                    undone.append("cleanup")
        assert undone == ["the section ran to its end", "cleanup"]
        # The previous handler was put back and got the signal; it returned, so the process is to end with 143.
        assert calls == [signal.SIGTERM]
        assert ended.value.code == 128 + signal.SIGTERM
        assert isinstance(ended.value.__context__, Terminated)
    finally:
        handler = signal.signal(signal.SIGTERM, previous)
    assert handler is not None and handler not in (signal.SIG_DFL, signal.SIG_IGN)


def test_an_ignored_sigterm_stays_ignored_and_the_handler_is_restored_after_a_normal_exit() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with sigterm_as_interrupt():
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: nothing happens
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with sigterm_as_interrupt():
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
