"""End to end: runs of the approvals app recorded with the real SDK, written to Azurite's History and
Instances tables, imported with ``replaytest import azure-durable`` and replayed by ``replaytest replay`` in
a fresh process against the app unchanged and edited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from azure_kit import APP_SOURCE, Imported, line_of, run_cli

RENAMED = [('context.call_activity("price_order", ', 'context.call_activity("quote_order", ')]
INSERTED = [("    price = yield context.call_activity(", '    yield context.call_activity("audit_order", order["id"])\n    price = yield context.call_activity(')]
REORDERED = [(
    '    label = yield context.call_activity("print_label", order["id"])\n    tracking = yield context.call_activity("book_courier", label)\n',
    '    tracking = yield context.call_activity("book_courier", "label-" + order["id"])\n    label = yield context.call_activity("print_label", order["id"])\n',
)]
BRANCH = [('if price["total"] > 100:', 'if price["total"] > 200:')]
EVENT_RENAMED = [('wait_for_external_event("approval")', 'wait_for_external_event("approved")')]
OUTPUT_CHANGED = [('return {"status": "shipped", ', 'return {"status": "sent", ')]


def _project(folder: Path, replacements: list[tuple[str, str]]) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "edited_app.py").write_text(source, encoding="utf-8")
    (folder / "pyproject.toml").write_text("[project]\nname = 'approvals-edited'\n", encoding="utf-8")
    return folder / "edited_app.py"


def _replay(imported: Imported, folder: Path, files: list[str], marker: Path | None = None) -> dict[str, Any]:
    env = {"APPROVALS_MARKER": str(marker)} if marker is not None else {}
    done = run_cli("replay", "--format", "json", *(str(imported.histories / name) for name in files), "-w", "edited_app:app",
                   cwd=folder, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {result["workflow"]["id"]: result for result in report["results"]}


def test_the_import_writes_every_run_and_its_sub_orchestrations(imported: Imported) -> None:
    names = sorted(path.name for path in imported.histories.glob("*.json"))
    # four orders and the ship_order children of the three that shipped or would ship (not the rejected one)
    assert len(names) == 6, names
    statuses = {}
    for path in imported.histories.glob("*.json"):
        document = json.loads(path.read_text())
        assert document["workflow"]["engine"] == "azure_durable"
        statuses[document["workflow"]["id"]] = (document["workflow"]["type"], document["status"])
    assert statuses["order-big"] == ("order_approval", "completed")
    assert statuses["order-waiting"] == ("order_approval", "running")
    assert statuses["order-big:5"] == ("ship_order", "completed")
    big = json.loads((imported.histories / "order-big.json").read_text())
    assert [(e["kind"], e["name"]) for e in big["events"]] == [
        ("step", "check_stock"), ("step", "check_stock"), ("step", "check_stock"), ("step", "price_order"),
        ("timer", "timer"), ("signal", "approval"), ("child-workflow", "ship_order"),
    ]
    assert [e.get("result") for e in big["events"][:3]] == [5, 6, 4]  # len("apple"), len("banana"), len("kiwi")


def test_unchanged_code_replays_every_run_green_and_runs_no_activity(imported: Imported, tmp_path: Path) -> None:
    _project(tmp_path, [])
    assert imported.marker.read_text().count("check_stock") == 9  # while recording, the activities did run
    marker = tmp_path / "replay-marker.log"
    files = sorted(path.name for path in imported.histories.glob("*.json"))
    report = _replay(imported, tmp_path, files, marker)
    results = _by_id(report)
    assert {key: value["status"] for key, value in results.items()} == dict.fromkeys(results, "passed")
    assert len(results) == 6
    assert results["order-waiting"]["run_status"] == "running"  # in flight: replayed to the end of its history
    assert all("no prompt versions recorded: prompt drift was not checked" in r["notes"] for r in results.values())
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize(
    ("edit", "instance", "kind", "recorded", "issued", "line"),
    [
        pytest.param(RENAMED, "order-big", "command-mismatch", ("step", "price_order"), ("step", "quote_order"),
                     'yield context.call_activity("quote_order"', id="renamed-activity"),
        pytest.param(INSERTED, "order-big", "command-mismatch", ("step", "price_order"), ("step", "audit_order"),
                     '"audit_order"', id="inserted-activity"),
        pytest.param(REORDERED, "order-big:5", "command-mismatch", ("step", "print_label"), ("step", "book_courier"),
                     'tracking = yield context.call_activity("book_courier"', id="reordered-activities"),
        pytest.param(BRANCH, "order-big", "command-mismatch", ("timer", "timer"), ("step", "auto_approve"),
                     'yield context.call_activity("auto_approve"', id="changed-branch"),
        pytest.param(EVENT_RENAMED, "order-big", "missing-command", ("child-workflow", "ship_order"), ("signal", "approved"),
                     'wait_for_external_event("approved")', id="renamed-external-event"),
    ],
)  # fmt: skip
def test_each_change_is_the_right_divergence_at_its_line(
    imported: Imported, tmp_path: Path, edit: list[tuple[str, str]], instance: str, kind: str,
    recorded: tuple[str, str], issued: tuple[str, str], line: str,
) -> None:
    app = _project(tmp_path, edit)
    marker = tmp_path / "replay-marker.log"
    files = sorted(path.name for path in imported.histories.glob("*.json"))
    result = _by_id(_replay(imported, tmp_path, files, marker))[instance]
    assert result["status"] == "diverged", result
    divergence = result["divergence"]
    assert divergence["kind"] == kind
    assert (divergence["recorded"]["kind"], divergence["recorded"]["name"]) == recorded
    assert (divergence["issued"]["kind"], divergence["issued"]["name"]) == issued
    assert Path(divergence["source"]["path"]).name == "edited_app.py"
    assert divergence["source"]["line"] == line_of(app, line)
    assert not marker.exists(), marker.read_text()


def test_a_running_run_that_has_not_reached_the_change_still_passes(imported: Imported, tmp_path: Path) -> None:
    """order-waiting stands at the approval wait; an edit after it (the returned output) cannot break it."""
    _project(tmp_path, OUTPUT_CHANGED)
    results = _by_id(_replay(imported, tmp_path, ["order-waiting.json", "order-big.json"]))
    assert results["order-waiting"]["status"] == "passed"
    assert results["order-big"]["status"] == "diverged"
    assert results["order-big"]["divergence"]["kind"] == "result-mismatch"
    assert '"sent"' in results["order-big"]["divergence"]["message"]


def test_a_running_run_diverges_when_the_change_is_before_its_wait(imported: Imported, tmp_path: Path) -> None:
    app = _project(tmp_path, RENAMED)
    result = _by_id(_replay(imported, tmp_path, ["order-waiting.json"]))["order-waiting"]
    assert result["status"] == "diverged"
    assert result["divergence"]["source"]["line"] == line_of(app, 'yield context.call_activity("quote_order"')


def test_impact_groups_the_diverging_runs(imported: Imported, tmp_path: Path) -> None:
    _project(tmp_path, RENAMED)
    done = run_cli("impact", str(imported.histories), "-w", "edited_app:app", "-q", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "order_approval" in output
    assert "quote_order" in output and "price_order" in output
    assert "in-flight" in output


CLOCK_READ = [("    checks = [context.call_activity(", "    started = datetime.datetime.now()\n    checks = [context.call_activity(")]
ACTIVITY_CALLED = [("    price = yield context.call_activity(", '    check_stock("direct")\n    price = yield context.call_activity(')]


@pytest.mark.parametrize(
    ("edit", "line", "stopped"),
    [
        pytest.param(CLOCK_READ, "started = datetime.datetime.now()", False, id="clock-read"),
        pytest.param(ACTIVITY_CALLED, 'check_stock("direct")', True, id="activity-called-directly"),
    ],
)
def test_the_runtime_guards_report_a_clock_read_and_stop_an_activity_body(
    imported: Imported, tmp_path: Path, edit: list[tuple[str, str]], line: str, stopped: bool
) -> None:
    app = _project(tmp_path, edit)
    marker = tmp_path / "replay-marker.log"
    result = _by_id(_replay(imported, tmp_path, ["order-big.json"], marker))["order-big"]
    assert result["status"] == "diverged", result
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call"
    assert divergence["source"]["line"] == line_of(app, line)
    assert ("stopped" in divergence["message"]) is stopped
    assert not marker.exists(), marker.read_text()


def test_a_running_run_says_azure_stores_no_prompt_manifest(imported: Imported, tmp_path: Path) -> None:
    _project(tmp_path, [])
    result = _by_id(_replay(imported, tmp_path, ["order-waiting.json"]))["order-waiting"]
    assert result["status"] == "passed"
    assert any("manifest" in note for note in result["notes"]), result["notes"]
