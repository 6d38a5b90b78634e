"""The crash experiment at a small size: the journal with keys sends no duplicate email, both journal
strategies see the same crashes, the in-memory strategy repeats far more work, and the replay
demonstration reports the swapped steps."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fixtures.crash_experiment.run import in_memory, journaled, print_table, replay_demo


def test_crash_experiment_small(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    memory = in_memory(600, 0.03, seed=7)
    plain, plain_journal, _ = journaled(600, 0.03, seed=7, keys=False)
    plain_journal.close()
    keyed, journal, run_ids = journaled(600, 0.03, seed=7, keys=True)
    request.addfinalizer(journal.close)
    assert plain.crashes == keyed.crashes > 0
    assert plain.model_calls == keyed.model_calls
    assert keyed.duplicate_emails == 0
    assert plain.duplicate_emails > 0
    assert memory.duplicate_emails > plain.duplicate_emails
    assert memory.extra > 3 * keyed.extra > 0
    assert all(journal.status(run_id) == "completed" for run_id in run_ids)

    out = io.StringIO()
    print_table([memory, plain, keyed], 0.03, out)
    assert "journal + keys" in out.getvalue()
    report = io.StringIO()
    replay_demo(journal, run_ids, tmp_path, report)
    text = report.getvalue()
    assert "replay against current code:" in text and "passed (6 events)" in text
    assert "command-mismatch at event #1" in text
    assert "the code issued step 'read order' where the history recorded model 'plan'" in text
    assert (tmp_path / "task-0.json").is_file()
