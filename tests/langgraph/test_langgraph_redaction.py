"""Default redaction on ``import langgraph`` keeps what code branches on: an e-mail address becomes a
pseudonym at the same domain (the same redactor as every other importer), so a recorded thread replays
on unchanged code while the imported file holds no original address."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from conftest import effect_lines, import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import support_desk, tasks

from replaytest.cli import cli

SPEC = "lg_apps.support_desk:support_router"
ADDRESSES = {"enterprise": "dana.whitfield@acme.com", "retail": "sam.okafor@example.org"}


def record(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = support_desk.support_router.copy(update={"checkpointer": SqliteSaver(conn)})
        for thread_id, email in ADDRESSES.items():
            graph.invoke({"customer_email": email, "question": "how do I rotate my invoice"}, thread(thread_id))
    finally:
        conn.close()


def test_an_email_domain_branch_replays_after_default_redaction(tmp_path: Path) -> None:
    db = tmp_path / "support.sqlite"
    tasks.EFFECTS = tmp_path / "recording.log"
    try:
        record(db)
    finally:
        tasks.EFFECTS = None
    assert effect_lines(tmp_path / "recording.log") == [
        "ask_account_manager dana.whitfield@acme.com", "answer_from_faq how do I rotate my invoice",
    ]  # fmt: skip
    code, output = import_histories(db, tmp_path / "histories", "--workflows", SPEC)
    assert code == 0, output
    enterprise = (tmp_path / "histories/support_router-enterprise.json").read_text()
    retail = (tmp_path / "histories/support_router-retail.json").read_text()
    for text in (enterprise, retail):
        assert "dana.whitfield" not in text and "sam.okafor" not in text
    document = json.loads(enterprise)
    assert re.fullmatch(r"user-[0-9a-f]{10}@acme\.com", document["input"]["customer_email"])
    # the same address, the same pseudonym: in the input, in the task's result and in the final result
    assert document["events"][0]["result"]["reply_to"] == document["input"]["customer_email"]
    assert document["result"]["contact"] == document["input"]["customer_email"]
    assert re.fullmatch(r"user-[0-9a-f]{10}@example\.org", json.loads(retail)["input"]["customer_email"])

    tasks.EFFECTS = tmp_path / "replay.log"
    try:
        replayed = CliRunner().invoke(cli, ["replay", str(tmp_path / "histories"), "--workflows", SPEC])
    finally:
        tasks.EFFECTS = None
    assert replayed.exit_code == 0, replayed.output
    assert "replayed 2 histories: 2 passed, 0 diverged" in replayed.output
    assert effect_lines(tmp_path / "replay.log") == []  # no task body ran
