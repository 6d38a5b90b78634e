"""Redacted histories must replay as the unredacted ones do. ``redact`` runs ``replaytest redact`` (the
command users run, with its default rules) on recorded histories; ``assert_same_verdicts`` replays the
recorded and the redacted files with the same code and compares what each replay concluded: status, run
status and, for a divergence, its kind, position, recorded and issued command and source line. Each engine's
test folder drives it with histories recorded on the real engine, against unchanged and changed code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from replaytest.replay.divergence import ReplayResult

_TIMEOUT = 300


def redact(paths: Sequence[Path], out: Path) -> list[Path]:
    """``replaytest redact --out out paths…``, run beside ``out`` (no project's redaction settings apply
    there: the default rules); the redacted copies, in the order of ``paths``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "redact", "--out", str(out), *(str(path) for path in paths)],
        cwd=out.parent, capture_output=True, text=True, timeout=_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return [out / path.name for path in paths]


def redacted_paths(paths: Sequence[Path]) -> dict[str, list[str]]:
    """The JSON paths each redacted history says were redacted (``$.redacted``), by file name."""
    return {path.name: list(json.loads(path.read_text(encoding="utf-8")).get("redacted", [])) for path in paths}


def verdict(result: ReplayResult) -> tuple[Any, ...]:
    """What a replay concluded, without what names the file (its path, the redaction note)."""
    divergence = result.divergence
    shown: tuple[Any, ...] = ()
    if divergence is not None:
        shown = (
            divergence.kind,
            divergence.position,
            None if divergence.recorded is None else (divergence.recorded.kind, divergence.recorded.name),
            None if divergence.issued is None else (divergence.issued.kind, divergence.issued.name),
            None if divergence.source is None else (Path(divergence.source.path).name, divergence.source.line),
        )
    return (result.status, result.run_status, result.error is None, shown)


def assert_same_verdicts(
    recorded: Sequence[Path], redacted: Sequence[Path], replay: Callable[[Path], ReplayResult]
) -> list[tuple[Any, ...]]:
    """Replay each recorded history and its redacted copy with ``replay``; their verdicts must be equal.
    Returns the verdicts (of the recorded histories) for the caller to check what they are."""
    before = {path.name: verdict(replay(path)) for path in recorded}
    after = {path.name: verdict(replay(path)) for path in redacted}
    differing = {name: (before[name], after.get(name)) for name in before if after.get(name) != before[name]}
    assert after == before, f"recorded vs redacted verdicts differ: {differing}"
    return [before[path.name] for path in recorded]


def verdict_data(item: dict[str, Any]) -> tuple[Any, ...]:
    """``verdict`` of one result of ``replaytest replay --format json``."""
    divergence = item.get("divergence")
    shown: tuple[Any, ...] = ()
    if divergence is not None:
        recorded, issued, source = divergence.get("recorded"), divergence.get("issued"), divergence.get("source")
        shown = (
            divergence["kind"],
            divergence["position"],
            None if recorded is None else (recorded["kind"], recorded["name"]),
            None if issued is None else (issued["kind"], issued["name"]),
            None if source is None else (Path(source["path"]).name, source["line"]),
        )
    return (item["status"], item["run_status"], item["error"] is None, shown)


def replay_cli(folder: Path, specs: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, tuple[Any, ...]]:
    """``replaytest replay --format json folder -w spec…`` in a fresh process (an engine that keeps one
    registry of workflows per process gets each version of the code in its own); the verdicts by file name."""
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "--format", "json", str(folder), *(f"--workflows={spec}" for spec in specs)],
        cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT, env=env,
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    return {Path(item["history"]).name: verdict_data(item) for item in json.loads(completed.stdout)["results"]}


def assert_same_cli_verdicts(
    recorded: Path, redacted: Path, specs: Sequence[str], cwd: Path, env: dict[str, str] | None = None
) -> dict[str, tuple[Any, ...]]:
    """``assert_same_verdicts`` for two folders replayed by ``replay_cli``."""
    before = replay_cli(recorded, specs, cwd, env)
    after = replay_cli(redacted, specs, cwd, env)
    assert before and after == before
    return before
