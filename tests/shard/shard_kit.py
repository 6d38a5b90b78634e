"""A project on the journal runtime for the sharding tests: a parcel-claims agent (a customer reports a
lost or damaged parcel; the agent checks the tracking, waits for a warehouse photo when the parcel is
damaged, then offers a reship or a refund) with twelve histories recorded by the real journal, some
finished and some parked on the photo."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = '''\
"""Parcel claims: read the claim, look the parcel up, wait for the warehouse's photo of a damaged one,
then offer a reship or a refund and tell the customer."""

from __future__ import annotations

from typing import Any

from replaytest.journal import Prompt, workflow

TRIAGE = Prompt("triage", "Is this parcel claim about a lost or a damaged parcel? Claim:\\n{claim}")
TRACKING = {"P-1": "delivered", "P-2": "in transit", "P-3": "returned"}
OUTBOX: list[str] = []


def call_model(prompt_text: str) -> str:
    """Stands in for an LLM client: deterministic, no network."""
    return "damaged" if "broken" in prompt_text or "crushed" in prompt_text else "lost"


def track(parcel: str) -> str:
    return TRACKING.get(parcel, "unknown")


def notify(customer: str, offer: str) -> bool:
    OUTBOX.append(f"{customer}: {offer}")
    return True


@workflow(name="parcel_claim", version="1")
def parcel_claim(ctx: Any, claim: dict[str, str]) -> dict[str, Any]:
    kind = ctx.model("triage", call_model, TRIAGE.render(claim=claim["text"]), prompt=TRIAGE)
    status = ctx.step("track parcel", track, claim["parcel"])
    offer = "reship" if status == "delivered" else "refund"
    if kind == "damaged":
        photo = ctx.wait_signal("warehouse photo", timeout=2 * 86400)
        offer = "refund" if photo and photo.get("visible_damage") else "reship"
    ctx.step("notify customer", notify, claim["customer"], offer)
    return {"kind": kind, "offer": offer}
'''
PYPROJECT = """\
[tool.replaytest.replay]
paths = ["histories"]
workflows = ["claims.agent:parcel_claim"]
"""
RECORD = '''\
import sys
from pathlib import Path

from claims.agent import parcel_claim
from replaytest.history import save_history
from replaytest.journal import Journal, Worker

out = Path("histories")
out.mkdir(exist_ok=True)
texts = ["my parcel never came", "the box arrived crushed", "where is my order", "the vase is broken"]
with Journal(Path(sys.argv[1])) as journal:
    worker = Worker(journal, [parcel_claim])
    for number in range(int(sys.argv[2]), int(sys.argv[3])):
        claim = {"customer": f"c{number}@example.com", "parcel": f"P-{number % 3 + 1}", "text": texts[number % 4]}
        journal.start(parcel_claim, claim, run_id=f"claim-{number:02d}")
    worker.run_until_idle()
    for number in range(int(sys.argv[2]), int(sys.argv[3])):
        save_history(journal.export(f"claim-{number:02d}"), out / f"claim-{number:02d}.json")
'''
HISTORIES = tuple(f"claim-{number:02d}.json" for number in range(12))


def record(root: Path, first: int, last: int) -> None:
    """Record the claims numbered ``first`` to ``last - 1`` into ``root/histories``."""
    journal = root.parent / f"{root.name}-journal-{first}.sqlite3"  # outside the project
    subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD), str(journal), str(first), str(last)], cwd=root,
                   check=True, capture_output=True, timeout=120)


def write_project(root: Path) -> Path:
    """The agent's project under ``root`` with its twelve recorded histories; returns ``root``."""
    (root / "claims").mkdir(parents=True)
    (root / "claims" / "__init__.py").write_text("", encoding="utf-8")
    (root / "claims" / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    record(root, 0, 12)
    return root
