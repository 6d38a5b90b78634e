"""A refund agent on the journal runtime, as recorded (``refund_agent``) and as later edits of it (same
workflow type). It stamps its log lines with ``datetime.now()`` in the workflow itself — the hazard the
runtime guards report without ending the comparison. Step bodies write into the ``outbox`` folder named in
the input, so a test sees whether one really ran. Lines a report should name end with ``# [tag]``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from replaytest.journal import workflow

log = logging.getLogger("refund_agent")


def look_up_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "amount": 42.5, "email": "ana@example.com"}


def issue_refund(outbox: str, order: dict[str, Any]) -> str:
    Path(outbox, "refund-issued").write_text(order["order_id"])
    return f"re_{order['order_id']}"


def send_email(outbox: str, to: str, text: str) -> bool:
    Path(outbox, "email-sent").write_text(f"{to}: {text}")
    return True


@workflow("refund")
def refund_agent(ctx: Any, request: dict[str, str]) -> str:
    log.info("refund for %s started at %s", request["order_id"], datetime.now())  # [clock]
    order = ctx.step("look up order", look_up_order, request["order_id"])
    refund = ctx.step("issue refund", issue_refund, request["outbox"], order)
    ctx.step("email customer", send_email, request["outbox"], order["email"], f"refund {refund} is on its way")
    return refund


@workflow("refund")
def refund_agent_renamed_step(ctx: Any, request: dict[str, str]) -> str:
    log.info("refund for %s started at %s", request["order_id"], datetime.now())  # [clock, renamed]
    order = ctx.step("look up order", look_up_order, request["order_id"])
    refund = ctx.step("refund payment", issue_refund, request["outbox"], order)  # [renamed]
    ctx.step("email customer", send_email, request["outbox"], order["email"], f"refund {refund} is on its way")
    return refund


# -- effects in orchestration code: each edit does one thing a replay must stop -------------------------


def _edit(effect: Any) -> Any:
    """The agent with ``effect(request, order)`` run by the workflow itself after the lookup."""

    def refund_agent_with_effect(ctx: Any, request: dict[str, str]) -> str:
        order = ctx.step("look up order", look_up_order, request["order_id"])
        effect(request, order)
        refund = ctx.step("issue refund", issue_refund, request["outbox"], order)
        ctx.step("email customer", send_email, request["outbox"], order["email"], f"refund {refund} is on its way")
        return refund

    refund_agent_with_effect.__name__ = f"refund_agent_{effect.__name__}"
    return workflow("refund")(refund_agent_with_effect)


def runs_shell(request: dict[str, str], order: dict[str, Any]) -> None:
    os.system(f"touch {request['outbox']}/shell-ran")  # [runs_shell]


def runs_subprocess(request: dict[str, str], order: dict[str, Any]) -> None:
    subprocess.run([sys.executable, "-c", "open('subprocess-ran', 'w')"], cwd=request["outbox"])  # [runs_subprocess]


def writes_with_pathlib(request: dict[str, str], order: dict[str, Any]) -> None:
    Path(request["outbox"], "audit.json").write_text(str(order))  # [writes_with_pathlib]


def appends_with_open(request: dict[str, str], order: dict[str, Any]) -> None:
    with open(os.path.join(request["outbox"], "audit.log"), "a") as audit:  # [appends_with_open]
        audit.write(order["order_id"])


def creates_with_os_open(request: dict[str, str], order: dict[str, Any]) -> None:
    os.close(os.open(os.path.join(request["outbox"], "lock"), os.O_CREAT | os.O_WRONLY))  # [creates_with_os_open]


def makes_a_folder(request: dict[str, str], order: dict[str, Any]) -> None:
    os.makedirs(os.path.join(request["outbox"], "receipts", "2026"))  # [makes_a_folder]


def deletes_the_ledger(request: dict[str, str], order: dict[str, Any]) -> None:
    os.remove(os.path.join(request["outbox"], "ledger.csv"))  # [deletes_the_ledger]


def renames_the_ledger(request: dict[str, str], order: dict[str, Any]) -> None:
    os.replace(os.path.join(request["outbox"], "ledger.csv"), os.path.join(request["outbox"], "old.csv"))  # [renames_the_ledger]


def copies_the_ledger(request: dict[str, str], order: dict[str, Any]) -> None:
    shutil.copy(os.path.join(request["outbox"], "ledger.csv"), os.path.join(request["outbox"], "copy.csv"))  # [copies_the_ledger]


def removes_the_outbox(request: dict[str, str], order: dict[str, Any]) -> None:
    shutil.rmtree(request["outbox"])  # [removes_the_outbox]


def emails_directly(request: dict[str, str], order: dict[str, Any]) -> None:
    send_email(request["outbox"], order["email"], "we are on it")  # [emails_directly]


def reads_the_ledger(request: dict[str, str], order: dict[str, Any]) -> None:
    with open(os.path.join(request["outbox"], "ledger.csv")) as ledger:  # reading is no effect
        ledger.read()


EFFECTS = [
    runs_shell, runs_subprocess, writes_with_pathlib, appends_with_open, creates_with_os_open, makes_a_folder,
    deletes_the_ledger, renames_the_ledger, copies_the_ledger, removes_the_outbox, emails_directly,
]  # fmt: skip
EDITS = {effect.__name__: _edit(effect) for effect in [*EFFECTS, reads_the_ledger]}
