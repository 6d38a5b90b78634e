"""Helpers for the lint tests: run the real ``replaytest`` command line in a subprocess, build small
throwaway projects from inline sources, and read findings out of a JSON report.

The linter is exercised through ``python -m replaytest`` (the interpreter running the tests), exactly
as a user or CI runs it, so the tests check the documented contract rather than internal names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class CliRun:
    """One finished ``replaytest`` invocation."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as error:
            raise AssertionError(
                f"`replaytest {' '.join(self.args)}` did not print JSON ({error}); exit {self.returncode}\n"
                f"stdout:\n{self.stdout[:2000]}\nstderr:\n{self.stderr[:2000]}"
            ) from None

    def describe(self) -> str:
        return (
            f"`replaytest {' '.join(self.args)}` exited {self.returncode}\n"
            f"stdout:\n{self.stdout[:3000]}\nstderr:\n{self.stderr[:3000]}"
        )


def run_replaytest(
    *args: str,
    cwd: Path,
    timeout: float = 180,
    env: Mapping[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> CliRun:
    environment = dict(os.environ)
    # A stray cache or colour setting of the developer's shell must not change what the tests see.
    environment.pop("REPLAYTEST_CACHE_DIR", None)
    environment["NO_COLOR"] = "1"
    if env:
        environment.update(env)
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env=environment,
        preexec_fn=preexec_fn,
    )
    return CliRun(
        args=tuple(args),
        returncode=completed.returncode,
        stdout=completed.stdout.decode("utf-8", errors="replace"),
        stderr=completed.stderr.decode("utf-8", errors="replace"),
    )


def write_files(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Create ``files`` (relative path -> text, dedented, or raw bytes) under ``root``; returns root."""
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


def findings(report: Mapping[str, Any]) -> set[tuple[str, int, str]]:
    """(posix path, line, category) of every diagnostic of a JSON report."""
    return {
        (str(d["path"]).replace("\\", "/"), int(d["line"]), str(d["category"])) for d in report["diagnostics"]
    }


def line_of(source: str, needle: str) -> int:
    """1-based line of the only line of ``source`` containing ``needle``."""
    hits = [number for number, text in enumerate(source.splitlines(), 1) if needle in text]
    assert len(hits) == 1, f"{needle!r} occurs on lines {hits} of the test input"
    return hits[0]


# A Temporal workflow with exactly one direct finding: the clock read in ``run``.
CLOCK_WORKFLOW = '''\
"""A minimal Temporal workflow."""
from datetime import datetime

from temporalio import workflow


@workflow.defn
class Greeting:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"{name} at {datetime.now()}"
'''
CLOCK_WORKFLOW_LINE = line_of(CLOCK_WORKFLOW, "datetime.now()")


# Runs the command line with concurrent.futures.ProcessPoolExecutor wrapped so that each pool's
# creation and how its `with` block ended are written to POOL_LOG at exit: the engine falls back to
# serial work when a pool fails, which would otherwise be invisible from the output.
_POOL_RECORDER = """
import atexit, concurrent.futures, concurrent.futures.process, json, os, runpy, sys
events = []
Original = concurrent.futures.ProcessPoolExecutor
class Recording(Original):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        events.append("created")
    def __exit__(self, exc_type, exc, tb):
        events.append("completed" if exc_type is None else f"failed: {exc!r}")
        return super().__exit__(exc_type, exc, tb)
concurrent.futures.ProcessPoolExecutor = Recording
concurrent.futures.process.ProcessPoolExecutor = Recording
def dump():
    with open(os.environ["POOL_LOG"], "w") as handle:
        json.dump(events, handle)
atexit.register(dump)
sys.argv = ["replaytest", *sys.argv[1:]]
runpy.run_module("replaytest", run_name="__main__", alter_sys=True)
"""


def run_recording_pools(*args: str, cwd: Path, log: Path, timeout: float = 300) -> tuple[CliRun, list[str]]:
    """``replaytest ARGS`` plus the list of process-pool events ("created", "completed", "failed: …")."""
    environment = dict(os.environ, NO_COLOR="1", POOL_LOG=str(log))
    completed = subprocess.run(
        [sys.executable, "-c", _POOL_RECORDER, *args], cwd=cwd, capture_output=True, timeout=timeout, env=environment
    )
    run = CliRun(
        args=tuple(args),
        returncode=completed.returncode,
        stdout=completed.stdout.decode("utf-8", errors="replace"),
        stderr=completed.stderr.decode("utf-8", errors="replace"),
    )
    events = json.loads(log.read_text(encoding="utf-8")) if log.exists() else ["no log written"]
    return run, events
