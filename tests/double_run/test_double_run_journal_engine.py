"""The engine is the judge: a module counter ``double-run`` reports for a journal workflow makes the real journal
runtime fail the run when it resumes it in the same process (``JournalDivergence`` at the same commands)."""

import json
import subprocess
import sys
from pathlib import Path

from replaytest.journal import Journal, Worker

HERE = Path(__file__).parent


def test_double_run_difference_is_what_the_runtime_fails_on_resume(tmp_path):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs",
                                  "cases": [{"workflow": "resume_counter", "input": "order-1"}]}))
    done = subprocess.run([sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format",
                           "json", "-w", "dr_app.journal_resume:resume_counter"], cwd=HERE, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    divergence = json.loads(done.stdout)["results"][0]["divergence"]
    assert (divergence["recorded"]["name"], divergence["issued"]["name"]) == ("welcome", "charge")

    from dr_app.journal_resume import resume_counter

    with Journal(tmp_path / "journal.db") as journal:
        run_id = journal.start(resume_counter, "order-1")
        worker = Worker(journal, [resume_counter], "w")
        worker.run_once()  # welcome, charge, then it parks waiting for "go"
        assert journal.status(run_id) == "parked"
        journal.signal(run_id, "go", True)
        worker.run_once()  # the resume re-executes the function: the counter has moved on
        assert journal.status(run_id) == "failed"
        error = journal.error(run_id)
    assert error.type == "JournalDivergence"
    assert "holds step 'welcome' but the code now issues step 'charge'" in error.message
