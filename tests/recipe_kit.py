"""A small project on the journal runtime for the CI recipe's tests: an invoice-dispute agent whose reply
prompt is a text file read when the module is imported, and two histories recorded by the real journal
(one finished, one parked waiting for finance's approval, before the reply is drafted)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = '''\
"""Invoice disputes: classify the customer's message, look the invoice up, wait for finance to approve a
credit when the customer was overcharged, then draft and send the reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replaytest.journal import Prompt, workflow

CLASSIFY = Prompt("classify", "Is this invoice dispute an overcharge or a question? Message:\\n{message}")
REPLY = Prompt("reply", (Path(__file__).parent / "prompts" / "reply.txt").read_text(encoding="utf-8"))
INVOICES = {"INV-7": {"amount": 120.0, "billed": 150.0}, "INV-8": {"amount": 80.0, "billed": 80.0}}
SENT: list[str] = []


def call_model(prompt_text: str) -> str:
    """Stands in for an LLM client: deterministic, no network."""
    if prompt_text.startswith("Is this invoice dispute"):
        return "overcharge" if "twice" in prompt_text or "too much" in prompt_text else "question"
    return "Dear customer, " + prompt_text.splitlines()[-1]


def fetch_invoice(invoice_id: str) -> dict[str, float]:
    return INVOICES[invoice_id]


def send_reply(to: str, body: str) -> bool:
    SENT.append(f"{to}: {body}")
    return True


@workflow(name="invoice_dispute", version="1")
def invoice_dispute(ctx: Any, dispute: dict[str, str]) -> dict[str, Any]:
    kind = ctx.model("classify", call_model, CLASSIFY.render(message=dispute["message"]), prompt=CLASSIFY)
    invoice = ctx.step("fetch invoice", fetch_invoice, dispute["invoice"])
    credit = 0.0
    if kind == "overcharge":
        approval = ctx.wait_signal("finance approval", timeout=3 * 86400)
        if approval and approval.get("approved"):
            credit = invoice["billed"] - invoice["amount"]
    text = REPLY.render(credit=credit, invoice=dispute["invoice"])
    body = ctx.model("draft reply", call_model, text, prompt=REPLY)
    ctx.step("send reply", send_reply, dispute["customer"], body)
    return {"kind": kind, "credit": credit}
'''
REPLY_PROMPT = "Write a short reply about invoice {invoice}.\nA credit of {credit} is applied.\n"
PYPROJECT = """\
[tool.replaytest.replay]
paths = ["histories"]
workflows = ["disputes.agent:invoice_dispute"]
"""
RECORD = '''\
import sys
from pathlib import Path

from disputes.agent import invoice_dispute
from replaytest.history import save_history
from replaytest.journal import Journal, Worker

out = Path("histories")
out.mkdir()
with Journal(Path(sys.argv[1])) as journal:
    worker = Worker(journal, [invoice_dispute])
    journal.start(invoice_dispute, {"customer": "kim@example.com", "invoice": "INV-8",
                                    "message": "What is this line on my invoice?"}, run_id="run-question")
    journal.start(invoice_dispute, {"customer": "lee@example.com", "invoice": "INV-7",
                                    "message": "You billed me too much this month."}, run_id="run-overcharge")
    worker.run_until_idle()
    save_history(journal.export("run-question"), out / "dispute-question.json")
    save_history(journal.export("run-overcharge"), out / "dispute-overcharge-waiting.json")
'''
HISTORIES = ("dispute-overcharge-waiting.json", "dispute-question.json")


def write_project(root: Path) -> Path:
    """The agent's project under ``root`` with its two recorded histories; returns ``root``."""
    (root / "disputes" / "prompts").mkdir(parents=True)
    (root / "disputes" / "__init__.py").write_text("", encoding="utf-8")
    (root / "disputes" / "agent.py").write_text(AGENT, encoding="utf-8")
    (root / "disputes" / "prompts" / "reply.txt").write_text(REPLY_PROMPT, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    journal = root.parent / f"{root.name}-journal.sqlite3"  # outside the project: not a file it commits
    subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD), str(journal)], cwd=root, check=True,
                   capture_output=True, timeout=120)
    return root
