"""``replaytest corpus --out`` copies a kept neutral history with the blobs its events reference, so the
copy loads and replays where it was written (the "after" measurement replays the copies)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import manual_agent
import pytest

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_the_kept_copy_takes_its_blob_and_replays_in_the_output_folder(tmp_path: Path) -> None:
    shutil.copy(HERE / "manual_agent.py", tmp_path / "manual_agent.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["manual_agent:manual_answer"]\n')
    with Journal(tmp_path / "journal.sqlite3") as journal:
        worker = Worker(journal, [manual_agent.manual_answer])
        for customer in ("ada", "bob"):
            journal.start(manual_agent.manual_answer, {"topic": "setup", "text": f"{customer}: how do I reset it?"},
                          run_id=f"manual-{customer}")
        worker.run_until_idle()
        for customer in ("ada", "bob"):
            save_history(journal.export(f"manual-{customer}"), tmp_path / "histories" / f"manual-{customer}.json")
    (blob,) = (tmp_path / "histories" / "blobs" / "sha256").iterdir()  # both runs fetched the same chapter
    run = subprocess.run([sys.executable, "-m", "replaytest", "corpus", "-q", "--output-format", "json", "--out", "kept"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads(run.stdout)["summary"]
    assert summary["written"] == {"folder": "kept", "histories": 1, "blobs": 1, "missing_blobs": []}
    assert summary["coverage_equal"] is True
    assert (tmp_path / "kept" / "blobs" / "sha256" / blob.name).read_bytes() == blob.read_bytes()
    assert len(list((tmp_path / "kept").glob("*.json"))) == 1
