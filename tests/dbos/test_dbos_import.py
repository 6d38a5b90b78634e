"""``replaytest import dbos`` on the recorded shop: what a history holds, what is refused, read-only."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from dbos_kit import Recording, project, replay, report

from replaytest.cli import cli


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["import", "dbos", *args])
    return result.exit_code, result.output


def load(recording: Recording, name: str) -> dict:
    return json.loads((recording.histories / f"{name}.json").read_text())


def test_a_pending_run_becomes_a_running_history_keyed_by_function_id(pickled: Recording) -> None:
    history = load(pickled, "order-pending")
    assert history["workflow"] == {"type": "place_order", "id": "order-pending", "engine": "dbos"}
    assert (history["status"], history["code_version"]) == ("running", "v1")
    assert history["input"] == {"args": ["pending", 30.0, 600], "kwargs": {}}
    # recv (id 9) is still waiting; its timeout sleep (id 10) was written first
    assert [(e["function_id"], e["kind"], e["name"]) for e in history["events"]] == [
        (1, "step", "reserve_stock"), (2, "step", "charge_card"), (3, "step", "save_order"), (4, "timer", "DBOS.sleep"),
        (5, "child-workflow", "ship"), (6, "step", "DBOS.getResult"), (7, "marker", "patched"), (8, "step", "send_receipt"),
        (10, "timer", "DBOS.sleep"),
    ]  # fmt: skip
    assert history["events"][6]["patch_id"] == "receipt-v2"
    assert history["events"][4]["child_workflow_id"] == "order-pending-5"


def test_payloads_are_typed_json_never_pickle(pickled: Recording) -> None:
    declined = load(pickled, "order-declined")
    charge = declined["events"][1]
    assert charge["error"] == {"type": "PaymentDeclined", "message": "card declined for 500.0"}
    assert charge["exception"] == {"$type": "object", "class": "dbos_shop.app.PaymentDeclined", "call_args": ["card declined for 500.0"]}
    assert declined["result"]["approval"] == "approved by ops"  # recv with a message
    assert load(pickled, "order-ok")["result"]["approval"] is None  # recv that timed out
    parcel = load(pickled, "parcel-1")["result"]
    assert parcel["$type"] == "object" and parcel["class"] == "dbos_shop.models.Parcel"
    assert load(pickled, "report-day")["input"]["class_name"] == "Reports"
    assert load(pickled, "restock-1")["input"] == {"args": ["book"], "kwargs": {}, "class_name": "Warehouse", "config_name": "berlin"}
    for path in pickled.histories.glob("*.json"):
        text = path.read_text()
        assert "py_pickle" not in text and not re.search(r'"gA[SRJ]', text), f"{path.name} holds a pickle"


def test_portable_json_runs_are_imported_as_recorded(portable: Recording) -> None:
    declined = json.loads((portable.histories / "order-declined.json").read_text())
    assert declined["input"] == {"args": ["declined", 500.0, 60], "kwargs": {}}
    assert declined["events"][1]["exception"]["$type"] == "portable-error"


def test_a_refused_type_names_workflow_function_id_and_type(pickled: Recording, tmp_path: Path) -> None:
    code, out = run("--database-url", f"sqlite:///{pickled.system_db}", "--workflow-id", "bill-1", "--out", str(tmp_path))
    assert code == 2
    assert "workflow bill-1 (split_bill) function id 1: refused type fractions.Fraction" in out
    assert not list(tmp_path.glob("*.json"))


def test_a_main_class_is_named_at_import_and_at_replay(pickled: Recording, pytester: pytest.Pytester) -> None:
    out_dir = pytester.path / "imported"
    code, out = run("--database-url", f"sqlite:///{pickled.system_db}", "--workflow-id", "keep-note", "--out", str(out_dir))
    assert code == 0, out
    assert "class __main__.Note was pickled by an application run as a script" in out
    project(pytester, out_dir)
    result = replay(pytester)
    result.assert_outcomes(failed=1)
    assert "__main__.Note was pickled by an application run as a script" in report(result)


def test_the_system_database_is_only_read(pickled: Recording, tmp_path: Path) -> None:
    before = hashlib.sha256(pickled.system_db.read_bytes()).hexdigest()
    code, out = run("--database-url", f"sqlite:///{pickled.system_db}", "--status", "pending", "--out", str(tmp_path))
    assert code == 0, out
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["order-pending.json"]
    assert hashlib.sha256(pickled.system_db.read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--database-url", "sqlite:///nowhere.sqlite3"], "no SQLite database at 'nowhere.sqlite3'"),
        (["--database-url", "mysql://db/app"], "unsupported database URL"),
        (["--database-url", "sqlite:///x", "--workflow-id", "a", "--name", "b"], "does not combine"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    code, out = run(*args, "--out", str(tmp_path))
    assert code == 2 and message in out


def test_payloads_are_redacted_on_the_way(pickled: Recording, tmp_path: Path) -> None:
    code, out = run(
        "--database-url", f"sqlite:///{pickled.system_db}", "--workflow-id", "order-declined", "--redact-key", "payment",
        "--redact-key", "message", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, out
    history = json.loads((tmp_path / "order-declined.json").read_text())
    assert history["result"]["payment"] != "declined: card declined for 500.0"
    assert "card declined" not in json.dumps(history["result"])
    assert "value(s) redacted" in out and "0 value(s) redacted" not in out


def test_the_layout_read_is_the_one_this_dbos_version_writes(pickled: Recording) -> None:
    """Run against the oldest supported dbos (2.x: inputs and outputs in workflow_status) and the newest
    (3.x: workflow_input / workflow_output), the same assertions above cover both layouts."""
    import sqlite3
    from importlib.metadata import version

    with sqlite3.connect(pickled.system_db) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert ("workflow_input" in tables) == (int(version("dbos").split(".")[0]) >= 3)


def test_replay_refuses_a_dbos_version_outside_the_tested_range(monkeypatch: pytest.MonkeyPatch) -> None:
    from replaytest.plugins.dbos import internals as dbos_sysdb

    monkeypatch.setattr(dbos_sysdb, "installed_version", lambda name: "2.30.0")
    assert dbos_sysdb.check_version() == "dbos 2.30.0 is outside the range replay was tested with (>= 2.31, < 3.5)"
    monkeypatch.setattr(dbos_sysdb, "installed_version", lambda name: "3.4.0")
    assert dbos_sysdb.check_version() is None
