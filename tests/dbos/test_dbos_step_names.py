"""RT105 against DBOS's own recovery: a step run with ``DBOS.run_step`` whose options name it with a value that
differs between runs is reported by lint at the name, and DBOS, recovering the run parked after that step in
another process, stops it with ``DBOSUnexpectedStepError`` (the step recorded under the old name is not the one
the code runs now); with a fixed name the same recovery finishes the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

APP = '''\
import uuid

from dbos import DBOS


def fetch(order_id: str) -> str:
    return f"fetched {order_id}"


@DBOS.workflow()
def sync(order_id: str) -> str:
    fetched = DBOS.run_step({"name": f"fetch-{uuid.uuid4().hex[:8]}"}, fetch, order_id)
    decision = DBOS.recv("go", timeout_seconds=600)
    return f"{fetched}: {decision}"
'''
NAMING_LINE = next(n for n, text in enumerate(APP.splitlines(), 1) if '"name": f"fetch-' in text)
FIXED = APP.replace('{"name": f"fetch-{uuid.uuid4().hex[:8]}"}', '{"name": "fetch"}')

# ``record``: starts the run and exits once it waits in recv (its timeout sleep is the row DBOS writes last),
# without shutting down, as a crash would; ``recover``: DBOS's launch() recovers it under the code as it is
# now, it gets its message, and its outcome is printed.
DRIVER = '''\
import json, os, sys, time
sys.path.insert(0, os.getcwd())
from dbos import DBOS, SetWorkflowID
import step_names_app as app

DBOS(config={"name": "step-names", "system_database_url": f"sqlite:///{sys.argv[2]}", "application_version": "v1"})
DBOS.launch()
if sys.argv[1] == "record":
    with SetWorkflowID("order-1"):
        DBOS.start_workflow(app.sync, "o-1")
    deadline = time.monotonic() + 60
    while not any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps("order-1")):
        assert time.monotonic() < deadline, "the run never waited in recv"
        time.sleep(0.05)
    print(json.dumps([step["function_name"] for step in DBOS.list_workflow_steps("order-1")]))
else:
    DBOS.send("order-1", "yes", topic="go")
    try:
        print(json.dumps({"output": DBOS.retrieve_workflow("order-1").get_result()}))
    except Exception as error:
        print(json.dumps({"error_type": type(error).__name__, "error": str(error)}))
sys.stdout.flush()
os._exit(0)
'''


def _run(folder: Path, mode: str) -> object:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("DBOS")}
    done = subprocess.run([sys.executable, "driver.py", mode, str(folder / "system.sqlite3")], cwd=folder,
                          capture_output=True, text=True, timeout=180, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _recorded_then_recovered(folder: Path, source: str) -> tuple[object, object]:
    folder.mkdir()
    (folder / "step_names_app.py").write_text(source, encoding="utf-8")
    (folder / "driver.py").write_text(DRIVER, encoding="utf-8")
    return _run(folder, "record"), _run(folder, "recover")


def test_lint_reports_the_run_step_name_that_differs_between_runs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    diagnostics = json.loads(run.stdout)["diagnostics"]
    # The uuid4() read in the workflow is RT103 as well; the name made from it is RT105.
    assert sorted((d["rule"], d["line"]) for d in diagnostics) == [("RT103", NAMING_LINE), ("RT105", NAMING_LINE)]
    [finding] = [d for d in diagnostics if d["rule"] == "RT105"]
    assert finding["message"].startswith('f"fetch-{uuid.uuid4().hex[:8]}" names the step with a value that differs '
                                         "between runs (uuid.uuid4())")


def test_dbos_recovery_stops_at_the_renamed_step_and_finishes_with_a_fixed_name(tmp_path: Path) -> None:
    steps, outcome = _recorded_then_recovered(tmp_path / "per_run", APP)
    assert isinstance(steps, list) and steps[0].startswith("fetch-"), steps
    assert isinstance(outcome, dict) and outcome.get("error_type") == "DBOSUnexpectedStepError", outcome
    assert steps[0] in outcome["error"], outcome

    steps, outcome = _recorded_then_recovered(tmp_path / "fixed", FIXED)
    assert steps[0] == "fetch", steps
    assert outcome == {"output": "fetched o-1: yes"}
