"""A project with many small histories, for the benchmarks that time whole runs over them (``pytest_path_bench``,
``shard_bench``): a delivery-delay agent on the journal runtime, a handful of runs recorded by the real journal,
and copies of them up to the number wanted, each with its own workflow and run id (so every file has its own
bytes and digest, as production histories do).

Copying is what keeps generating 100,000 histories to seconds; the copies replay exactly as the recorded run
does, because the ids are no input of the workflow's decisions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = '''\
"""Delivery delays: ask the model whether the customer wants a refund or a new date, look the order up,
then rebook the courier or refund and tell the customer."""

from typing import Any

from replaytest.journal import Prompt, workflow

TRIAGE = Prompt("triage", "Does this customer want a refund or a new delivery date? Message:\\n{message}")


def call_model(prompt_text: str) -> str:
    return "refund" if "refund" in prompt_text else "rebook"


def order(order_id: str) -> dict[str, Any]:
    return {"id": order_id, "total": 30.0}


def act(choice: str, found: dict[str, Any]) -> str:
    return f"{choice}:{found['id']}"


def tell(customer: str, outcome: str) -> bool:
    return True


@workflow(name="delivery_delay", version="1")
def delivery_delay(ctx: Any, request: dict[str, str]) -> str:
    choice = ctx.model("triage", call_model, TRIAGE.render(message=request["message"]), prompt=TRIAGE)
    found = ctx.step("fetch order", order, request["order"])
    outcome = ctx.step("act", act, choice, found)
    ctx.step("tell customer", tell, request["customer"], outcome)
    return outcome
'''
PYPROJECT = """\
[tool.replaytest.replay]
paths = ["histories"]
workflows = ["delays:delivery_delay"]

[tool.pytest.ini_options]
pythonpath = ["."]
"""
RECORD = '''\
import sys
from pathlib import Path

from delays import delivery_delay
from replaytest.history import save_history
from replaytest.journal import Journal, Worker

messages = ["I want a refund, it is a week late", "can it come on Friday instead", "refund please", "new date?"]
with Journal(Path(sys.argv[1])) as journal:
    worker = Worker(journal, [delivery_delay])
    for number, message in enumerate(messages):
        request = {"customer": f"c{number}@example.com", "order": f"O-{number}", "message": message}
        journal.start(delivery_delay, request, run_id=f"seed-{number}")
    worker.run_until_idle()
    for number in range(len(messages)):
        save_history(journal.export(f"seed-{number}"), Path("seeds") / f"seed-{number}.json")
'''


def make_project(root: Path, histories: int) -> Path:
    """The project under ``root`` with ``histories`` history files in ``histories/`` (100 per folder)."""
    root.mkdir(parents=True)
    (root / "delays.py").write_text(AGENT, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD), str(root.parent / "journal.sqlite3")], cwd=root,
                   check=True, capture_output=True, timeout=120)
    seeds = [json.loads(path.read_text(encoding="utf-8")) for path in sorted((root / "seeds").glob("*.json"))]
    for number in range(histories):
        document = seeds[number % len(seeds)]
        document["workflow"]["id"] = document["workflow"]["run_id"] = f"delay-{number:06d}"
        folder = root / "histories" / f"batch-{number // 100:04d}"
        if number % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"delay-{number:06d}.json").write_text(json.dumps(document), encoding="utf-8")
    return root
