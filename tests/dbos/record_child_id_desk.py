"""Runs the child-id desk for real on a SQLite system database: ``python record_child_id_desk.py SYSTEM_DB EFFECTS``
registers the children's queue, starts every parent of ``child_id_desk.app`` (workflow id = its name) and exits once
all of them wait in ``DBOS.recv`` with their child finished (PENDING, as after a crash).
``python record_child_id_desk.py SYSTEM_DB EFFECTS --resume`` instead launches DBOS on that database (which recovers
the pending parents: each starts its child again under a new fresh id), sends each its go-ahead and prints, as one
JSON object by parent, what the parent returned, the ids of every child workflow recorded under it and how many
times DBOS ran the parent (its recovery attempts)."""

from __future__ import annotations

import json
import os
import sys
import time

SYSTEM_DB, EFFECTS = sys.argv[1:3]
RESUME = "--resume" in sys.argv
os.environ["CHILD_ID_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the child_id_desk package of the project being recorded or resumed

from dbos import DBOS, SetWorkflowID  # noqa: E402
from child_id_desk import app  # noqa: E402

PARENTS = {
    "start_under_fresh_id": (app.start_under_fresh_id, ("a",)),
    "enqueue_under_local_id": (app.enqueue_under_local_id, ("b",)),
    "queue_enqueue_under_fresh_id": (app.queue_enqueue_under_fresh_id, ("c",)),
    "enqueue_through_helpers": (app.enqueue_through_helpers, ("d", True)),
    "start_async_under_fresh_id": (app.start_async_under_fresh_id, ("e",)),
    "enqueue_async_under_fresh_id": (app.enqueue_async_under_fresh_id, ("f",)),
    "queue_enqueue_async_under_fresh_id": (app.queue_enqueue_async_under_fresh_id, ("g",)),
}

DBOS(config={"name": "child-id-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
DBOS.register_queue(app.CHILDREN, polling_interval_sec=0.1)


def children(parent: str) -> list[str]:
    return sorted(status.workflow_id for status in DBOS.list_workflows(parent_workflow_id=parent))


if RESUME:
    outcomes = {}
    for parent in PARENTS:
        DBOS.send(parent, "go", topic="go")
        output = DBOS.retrieve_workflow(parent).get_result()
        status = DBOS.get_workflow_status(parent)
        outcomes[parent] = {"output": output, "children": children(parent),
                            "recovery_attempts": status.recovery_attempts if status else None}
    print(json.dumps(outcomes))
    sys.stdout.flush()
    os._exit(0)
for parent, (workflow, arguments) in PARENTS.items():
    with SetWorkflowID(parent):
        DBOS.start_workflow(workflow, *arguments)
for _ in range(600):  # wait until every parent waits in recv: its timeout sleep is the row written last
    if all(any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps(parent)) for parent in PARENTS):
        break
    time.sleep(0.05)
else:
    raise SystemExit("the parents never reached their recv")
print(json.dumps({parent: children(parent) for parent in PARENTS}))
sys.stdout.flush()
os._exit(0)  # no shutdown: the parents stay PENDING in recv, as after a crash
