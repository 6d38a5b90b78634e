"""Ending impact's verification cleanly: SIGTERM handled as Ctrl-C is, and child replays ended whole.

- ``sigterm_as_interrupt()``: while the verification copy exists, SIGTERM (what a CI system sends when it
  cancels a job) raises ``Terminated`` in the main thread instead of ending the process on the spot, so the
  ``finally`` blocks on the way out remove the copy and end the running child. On the way out the previous
  handler is put back and the signal delivered to it again: with the default disposition the process then
  ends by SIGTERM, the conventional status (143 in a shell, -15 to a Python parent); a previous Python handler
  that returns leaves ``SystemExit(143)``. A SIGTERM ignored by whoever started the process stays ignored.
- ``uninterrupted()``: a section a SIGTERM must not cut halfway (starting a child, whose process would be
  left unnamed; removing the copy, which would be left half there) takes it when the section is over.
- ``run_child(...)``: one child process in a session, so a process group, of its own; when it is cut short
  (SIGTERM, Ctrl-C, its timeout) the whole group gets SIGTERM, and SIGKILL once the child has exited or
  ``END_GRACE_S`` passed, so nothing it started lives on reading a copy that is gone. Ctrl-C does not reach
  the group from the terminal (another session): the child is ended the same way, by its parent.

Only the main thread can set a signal handler: elsewhere (a verification run from another thread) SIGTERM
keeps its disposition, and the copy is still removed on every exception that reaches its ``finally``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

# How long the child's process group has to end after SIGTERM before whatever is left of it gets SIGKILL.
END_GRACE_S = 5.0
_POLL_S = 0.05


class Terminated(BaseException):
    """SIGTERM arrived while the verification ran. A BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on the way out takes it for an error of the code under test."""


class _Watch:
    """One ``sigterm_as_interrupt`` in force: whether SIGTERM came, whether ``Terminated`` was raised for it,
    and how many ``uninterrupted`` sections are open (a SIGTERM waits for them to end)."""

    def __init__(self) -> None:
        self.received = False
        self.raised = False
        self.deferring = 0


_watch: _Watch | None = None


def _handle(signum: int, frame: FrameType | None) -> None:
    watch = _watch
    if watch is None:
        return
    watch.received = True
    if watch.raised or watch.deferring:
        return  # a second SIGTERM must not cut the cleanup the first one started
    watch.raised = True
    raise Terminated()


class sigterm_as_interrupt:
    """``with sigterm_as_interrupt():`` around everything that must be undone (see the module docstring)."""

    def __init__(self) -> None:
        self._previous: Any = None  # what signal.getsignal gave: a callable, SIG_DFL
        self._watch: _Watch | None = None

    def __enter__(self) -> sigterm_as_interrupt:
        global _watch
        if _watch is not None or threading.current_thread() is not threading.main_thread():
            return self  # nested, or not the main thread: the outer one (or nobody) handles it
        previous = signal.getsignal(signal.SIGTERM)
        if previous is None or previous == signal.SIG_IGN:
            return self  # ignored on purpose, or set outside Python: left as it is
        self._previous, self._watch = previous, _Watch()
        _watch = self._watch
        signal.signal(signal.SIGTERM, _handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        global _watch
        watch = self._watch
        if watch is None:
            return
        watch.deferring += 1  # from here on a SIGTERM is only noted: the previous handler gets it below
        signal.signal(signal.SIGTERM, self._previous)
        _watch = None
        if watch.received:
            # Everything is undone: SIGTERM now does what it would have done without us.
            signal.raise_signal(signal.SIGTERM)
            raise SystemExit(128 + signal.SIGTERM)


@contextmanager
def uninterrupted() -> Iterator[None]:
    """A SIGTERM arriving meanwhile raises ``Terminated`` when the section ends, not inside it."""
    watch = _watch
    if watch is None:
        yield
        return
    watch.deferring += 1
    try:
        yield
    finally:
        watch.deferring -= 1
    if watch.received and not watch.raised and not watch.deferring:
        watch.raised = True
        raise Terminated()


def run_child(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float | None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)`` in a session of its own, its process group
    ended whole when anything (its timeout included: ``TimeoutExpired`` is raised after) cuts it short."""
    process: subprocess.Popen[str] | None = None
    try:
        with uninterrupted():
            process = subprocess.Popen(
                command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, start_new_session=hasattr(os, "killpg"),
            )
        stdout, stderr = process.communicate(timeout=timeout_s)
    except BaseException:
        if process is not None:
            with uninterrupted():
                end_process_group(process)
        raise
    return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)


def end_process_group(process: subprocess.Popen[str], grace_s: float = END_GRACE_S) -> None:
    """SIGTERM to the process group ``process`` leads, SIGKILL to what is left of it once ``process`` has
    exited or after ``grace_s``; then ``process`` is reaped. It is reaped last so that its id, the group's,
    cannot be taken by an unrelated process while signals are still sent to it."""
    if not hasattr(os, "killpg"):
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
    elif process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while not _exited(process) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        _signal_group(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    process.wait()


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone (some systems say EPERM for a group of zombies)


def _exited(process: subprocess.Popen[str]) -> bool:
    """Whether ``process`` has exited, without reaping it (``WNOWAIT``) where the system has ``waitid``."""
    if not hasattr(os, "waitid"):
        return process.poll() is not None
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
