"""Runs the options desk for real on a SQLite system database: ``python record_options_desk.py SYSTEM_DB
EFFECTS`` registers the review queues (one partitioned), starts ``article-11`` (``review_with_set_options``),
``article-12`` (``review_with_options``) and ``article-13`` (``review_with_options_async``) and exits once
all three wait in ``DBOS.recv`` with their enqueued reviews done (PENDING, as after a crash).
``python record_options_desk.py SYSTEM_DB EFFECTS --resume`` instead launches DBOS on that database (which
recovers the pending runs under the code as it is now), sends each the editor's verdict and prints how each
run ended (one JSON object, by workflow id)."""

from __future__ import annotations

import json
import os
import sys
import time

SYSTEM_DB, EFFECTS = sys.argv[1:3]
RESUME = "--resume" in sys.argv
os.environ["OPTIONS_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the options_desk package of the project being recorded or resumed

from dbos import DBOS, SetWorkflowID  # noqa: E402
from options_desk import app  # noqa: E402

RUNS = {"article-11": app.review_with_set_options, "article-12": app.review_with_options, "article-13": app.review_with_options_async}

DBOS(config={"name": "options-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
DBOS.register_queue(app.REVIEWS, polling_interval_sec=0.1)
DBOS.register_queue(app.PARTITIONED, partition_concurrency=1, polling_interval_sec=0.1)
if RESUME:
    outcomes = {}
    for workflow_id in RUNS:
        DBOS.send(workflow_id, "publish", topic="verdict")
        try:
            outcomes[workflow_id] = {"output": DBOS.retrieve_workflow(workflow_id).get_result()}
        except Exception as error:
            outcomes[workflow_id] = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(outcomes))
    sys.stdout.flush()
    os._exit(0)
for workflow_id, workflow in RUNS.items():
    with SetWorkflowID(workflow_id):
        DBOS.start_workflow(workflow, workflow_id.split("-")[1])
for _ in range(600):  # wait until every run waits in recv: its timeout sleep is the row written last
    if all(any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps(workflow_id)) for workflow_id in RUNS):
        break
    time.sleep(0.05)
else:
    raise SystemExit("the runs never reached their recv")
os._exit(0)  # no shutdown: the runs stay PENDING in recv, as after a crash
