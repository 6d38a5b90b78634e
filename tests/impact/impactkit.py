"""Recording the impact tests' histories with the real journal runtime: five runs of ``invoice_dispute`` v1
(two parked at the reviewer's decision, two approved and one rejected, completed), each exported into one
histories folder; and finding a line tagged ``# [tag]`` in a source file."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from replaytest.history import save_history
from replaytest.journal import Journal, Timing, Worker

# run name -> (claim, reviewer decision or None for a run left parked at the wait)
RUNS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "parked-1": ({"invoice": "INV-100", "customer": "acme", "reason": "billed twice"}, None),
    "parked-2": ({"invoice": "INV-200", "customer": "globex", "reason": "price too high"}, None),
    "approved-1": ({"invoice": "INV-300", "customer": "initech", "reason": "goods damaged"}, {"approve": True}),
    "approved-2": ({"invoice": "INV-400", "customer": "umbrella", "reason": "billed twice"}, {"approve": True}),
    "rejected-1": ({"invoice": "INV-500", "customer": "hooli", "reason": "changed my mind"}, {"approve": False}),
}


def record_runs(folder: Path, workflow_fn: Any, runs: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = RUNS) -> Path:
    """Run each of ``runs`` on one SQLite journal under ``folder`` (workflow id ``dispute-<name>``), deliver
    its decision when it has one, and save every run's export as ``folder/histories/<name>.json``."""
    histories = folder / "histories"
    histories.mkdir(parents=True, exist_ok=True)
    with Journal(folder / "journal.sqlite3", clock=lambda: 1_700_000_000.0) as journal:
        worker = Worker(journal, [workflow_fn], timing=Timing(sleep=lambda seconds: None))
        for name, (claim, decision) in runs.items():
            run = journal.start(workflow_fn, claim, run_id=f"run-{name}", workflow_id=f"dispute-{name}")
            worker.run_until_idle()
            if decision is not None:
                journal.signal(run, "decision", decision)
                worker.run_until_idle()
            save_history(journal.export(run), histories / f"{name}.json")
    return histories


def tagged_line(obj: Any, tag: str) -> int:
    """The number of the line of ``obj``'s source file that ends with ``# [tag]``."""
    lines = Path(inspect.getsourcefile(obj) or "").read_text().splitlines()
    matches = [number for number, text in enumerate(lines, 1) if text.rstrip().endswith(f"# [{tag}]")]
    assert len(matches) == 1, f"expected one line tagged {tag!r}, found {matches}"
    return matches[0]


def replay_all(histories: Path, workflow_fn: Any) -> list[Any]:
    """Replay every history of ``histories`` against ``workflow_fn`` (the dispatch the CLI uses), by name."""
    from replaytest.plugins.journal import PLUGIN
    from replaytest.replay.adapter import ReplayOptions
    from replaytest.replay.runner import load_workflows, replay_file

    assert PLUGIN.replayer is not None
    workflows = load_workflows((), None, [workflow_fn])
    return [replay_file(path, [PLUGIN.replayer], workflows, ReplayOptions()) for path in sorted(histories.glob("*.json"))]
