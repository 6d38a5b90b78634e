"""The DBOS replayer records each ``DBOS.patch`` decision of a run (``ReplayResult.patch_decisions``, replay
JSON ``patch_decisions``): the shop ran for real on SQLite with ``DBOS.patch("receipt-v2")`` guarding its
receipt, and ``replaytest replay --format json`` replays the imported runs in a fresh process."""

from __future__ import annotations

import json
import sys

import pytest
from dbos_kit import APP, Recording, edited, line_of, no_effects, project

ORDERS = ("order-ok", "order-declined", "order-pending")
PATCH_RENAMED = edited(('if DBOS.patch("receipt-v2"):', 'if DBOS.patch("receipt-v3"):'))


def _replay_json(pytester: pytest.Pytester) -> dict:
    root = pytester.path
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOP_EFFECTS", str(root / "effects.log"))
        patch.setenv("SHOP_APP_DB", f"sqlite:///{root / 'app.sqlite3'}")
        run = pytester.run(sys.executable, "-m", "replaytest", "replay", "--format", "json", "histories")
    return json.loads(run.stdout.str())


def _marker_function_id(recording: Recording, order: str) -> int:
    """Where the recorded run holds its receipt-v2 marker (read from the imported history)."""
    events = json.loads((recording.histories / f"{order}.json").read_text())["events"]
    [marker] = [event for event in events if event["kind"] == "marker"]
    assert marker["patch_id"] == "receipt-v2"
    return marker["function_id"]


def _decisions(data: dict) -> dict[str, list]:
    return {
        result["workflow"]["id"]: [
            (d["patch_id"], d["taken"], d["position"], d["source"]["line"] if d["source"] else None)
            for d in result["patch_decisions"]
        ]
        for result in data["results"]
        if result["workflow"]["id"] in ORDERS
    }


def test_each_run_records_that_it_took_the_guarded_receipt(pytester: pytest.Pytester, pickled: Recording) -> None:
    root = project(pytester, pickled.histories, only=ORDERS)
    data = _replay_json(pytester)
    line = line_of(APP, 'if DBOS.patch("receipt-v2"):')
    expected = {order: [("receipt-v2", True, _marker_function_id(pickled, order), line)] for order in ORDERS}
    assert _decisions(data) == expected
    assert {result["workflow"]["id"]: result["status"] for result in data["results"]} == dict.fromkeys(ORDERS, "passed")
    no_effects(root)


def test_a_renamed_patch_records_the_old_path_where_the_marker_stands(pytester: pytest.Pytester, pickled: Recording) -> None:
    project(pytester, pickled.histories, app=PATCH_RENAMED, only=("order-ok",))
    data = _replay_json(pytester)
    line = line_of(PATCH_RENAMED, 'if DBOS.patch("receipt-v3"):')
    assert _decisions(data) == {"order-ok": [("receipt-v3", False, _marker_function_id(pickled, "order-ok"), line)]}
    [result] = data["results"]
    assert (result["status"], result["divergence"]["kind"]) == ("diverged", "patch-mismatch")
