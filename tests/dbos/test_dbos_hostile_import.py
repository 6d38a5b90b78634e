"""``replaytest import dbos`` of a real system database whose rows hold hostile payloads next to the good
ones the shop recorded: each hostile run is refused with its workflow, function id and budget or type,
the process stays inside a memory limit, and every other run is imported as before."""

from __future__ import annotations

import base64
import collections
import json
import pickle
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from dbos_kit import Recording
from test_dbos_pickle_budget import COUNTER_TAMPER, CYCLE, DEEP, HUGE_BYTES, SHARED

from replaytest.cli import cli

MEMORY_LIMIT = 1024 * 1024 * 1024  # bytes(2**34) alone is sixteen times this


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def set_output(db: Path, workflow_id: str, function_id: int, text: str, serialization: str = "py_pickle") -> None:
    with sqlite3.connect(db) as connection:
        changed = connection.execute(
            "UPDATE operation_outputs SET output = ?, serialization = ? WHERE workflow_uuid = ? AND function_id = ?",
            (text, serialization, workflow_id, function_id),
        ).rowcount
    assert changed == 1, (workflow_id, function_id)


def limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_hostile_payloads_refuse_their_runs_only(pickled: Recording, tmp_path: Path) -> None:
    db = tmp_path / "system.sqlite3"
    shutil.copy(pickled.system_db, db)
    set_output(db, "order-ok", 2, b64(HUGE_BYTES))
    set_output(db, "order-ok-5", 1, "[" * 100_000 + "]" * 100_000, "portable_json")
    set_output(db, "order-declined", 3, b64(SHARED))
    set_output(db, "restock-1", 1, b64(COUNTER_TAMPER))  # created before parcel-1, whose Counter must survive
    set_output(db, "order-pending", 8, b64(CYCLE))
    set_output(db, "order-pending-5", 1, b64(DEEP))
    set_output(db, "parcel-1", 1, b64(pickle.dumps(collections.Counter({"parcel": 2, "label": 1}))))
    out = tmp_path / "histories"
    child = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "dbos", "--database-url", f"sqlite:///{db}", "--no-redact", "--out", str(out)],
        capture_output=True, text=True, timeout=300, preexec_fn=limited_memory,
    )  # fmt: skip
    assert child.returncode == 2, child.stderr
    assert child.stdout.strip() == f"imported 5 histories into {out} (not redacted); 7 run(s) refused"
    refused = sorted(child.stderr.splitlines()[-7:])  # the summary after the progress lines
    where = "refused: workflow {} function id {}: refused"
    assert refused == sorted(
        [
            where.format("order-ok (place_order)", 2) + ": over the decode budget of 33,554,432 bytes of typed JSON per run "
            "(budget max_bytes; raise it with --max-payload-bytes)",
            where.format("order-ok-5 (ship)", 1) + ": portable JSON nested deeper than the interpreter can read "
            "(budget max_depth; the limit is 100 levels)",
            where.format("order-declined (place_order)", 3) + ": over the decode budget of 1,000,000 values per run (a value "
            "shared through the pickle memo counts each time it is written) (budget max_nodes; raise it with --max-payload-values)",
            where.format("restock-1 (Warehouse.restock)", 1) + ": BUILD gives state to collections.Counter, "
            "not to an object the pickle built",
            where.format("bill-1 (split_bill)", 1) + " type fractions.Fraction (a standard-library type outside the "
            "decoder's allowlist)",
            where.format("order-pending (place_order)", 8) + ": a value that contains itself (a cycle cannot be "
            "written as JSON)",
            where.format("order-pending-5 (ship)", 1) + ": nested deeper than the decode budget of 100 levels "
            "(budget max_depth; raise it with --max-payload-depth)",
        ]
    ), child.stderr
    assert sorted(path.name for path in out.glob("*.json")) == [
        "keep-note.json", "order-declined-5.json", "parcel-1.json", "report-day-1.json", "report-day.json",
    ]  # fmt: skip
    parcel = json.loads((out / "parcel-1.json").read_text())
    assert parcel["events"][0]["result"] == {"$type": "collections.Counter", "items": [["parcel", 2], ["label", 1]]}
    untouched = json.loads((out / "order-declined-5.json").read_text())
    assert untouched["events"][0]["name"] == "reserve_stock" and untouched["status"] == "completed"


def test_the_budget_is_set_on_the_command_line(pickled: Recording, tmp_path: Path) -> None:
    args = ["import", "dbos", "--database-url", f"sqlite:///{pickled.system_db}", "--workflow-id", "parcel-1", "--no-redact"]
    tight = CliRunner().invoke(cli, [*args, "--max-payload-values", "5", "--out", str(tmp_path / "tight")])
    assert tight.exit_code == 2
    assert (
        "refused: workflow parcel-1 (pack_parcel) function id 1: refused: a pickle that pushes or memoizes more than the "
        "decode budget of 5 values (budget max_nodes; raise it with --max-payload-values)"
    ) in tight.output
    roomy = CliRunner().invoke(cli, [*args, "--max-payload-values", "500", "--out", str(tmp_path / "roomy")])
    assert roomy.exit_code == 0, roomy.output
    assert (tmp_path / "roomy" / "parcel-1.json").is_file()
    too_deep = CliRunner().invoke(cli, [*args, "--max-payload-depth", "391", "--out", str(tmp_path / "deep")])
    assert too_deep.exit_code == 2 and "391 is not in the range 1<=x<=390" in too_deep.output
