"""Helpers for replay tests: record a history with the real journal runtime, replay it, find tagged lines."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Iterable

from replaytest.history import save_history
from replaytest.journal import Journal, Timing, Worker
from replaytest.plugins.journal import PLUGIN
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.runner import load_workflows, replay_file


def record(
    directory: Path,
    fn: Any,
    input: Any,
    *,
    name: str = "history",
    signals: Iterable[tuple[str, Any]] = (),
) -> Path:
    """Run ``fn`` on a fresh SQLite journal until idle, deliver ``signals`` one by one (running until
    idle after each), and save the run's export as ``<directory>/<name>.json``. The journal's clock is
    fake and jumps a day whenever the run is idle, so durable timers fire without waiting."""
    now = [1_700_000_000.0]
    with Journal(directory / f"{name}.sqlite3", clock=lambda: now[0]) as journal:
        run_id = journal.start(fn, input, run_id=f"run-{name}", workflow_id=f"wf-{name}")
        worker = Worker(journal, [fn], timing=Timing(sleep=lambda seconds: None))

        def run_due() -> None:
            while worker.run_until_idle():
                now[0] += 86_400

        run_due()
        for signal, payload in signals:
            journal.signal(run_id, signal, payload)
            run_due()
        path = directory / f"{name}.json"
        save_history(journal.export(run_id), path)
    return path


def replay(path: Path, *workflows: Any, **options: Any) -> ReplayResult:
    """Replay ``path`` against ``workflows`` through the same dispatch the CLI and pytest plugin use."""
    assert PLUGIN.replayer is not None
    return replay_file(path, [PLUGIN.replayer], load_workflows((), None, workflows), ReplayOptions(**options))


def tagged_line(obj: Any, tag: str) -> int:
    """The line number of the line in ``obj``'s source file that ends with ``# [tag]``."""
    lines = Path(inspect.getsourcefile(obj) or "").read_text().splitlines()
    matches = [number for number, text in enumerate(lines, 1) if text.rstrip().endswith(f"# [{tag}]")]
    assert len(matches) == 1, f"expected one line tagged {tag!r}, found {matches}"
    return matches[0]
