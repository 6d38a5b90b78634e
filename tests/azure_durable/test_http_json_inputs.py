"""Inputs in the HTTP API's status (``import azure-durable --http-json``) as the extension writes them: the
orchestration's ``Input`` and an external event's ``Input`` are the JSON text the task hub holds (only ``Result``
fields and the top-level ``input``/``output`` are converted to values), so the import parses them as the table
import does. The approvals runs recorded with the real SDK (``azure_kit``) are written in that shape
(``http_status``) and, for files other tools write, with those inputs as JSON values: both import to the same
histories, whose inputs and event data are the tables' ones; replay gives each the verdict the table-imported
history gets, unchanged code and a branch on the event's data alike, and the SDK's ``Orchestrator.handle``
finishes the rebuilt history as the run finished. Text that is not JSON, or an external event without its
data (``showInput=false``), refuses that instance, exit 2, naming it and the event."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from azure_kit import Imported, http_status, run_cli, sdk_handle

APP_SOURCE = Path(__file__).resolve().parent / "approvals" / "function_app.py"
APPROVAL_FLIPPED = [('if not approval.get("approved"):', 'if approval.get("approved"):')]


def _statuses(imported: Imported) -> list[dict[str, Any]]:
    return [http_status(run) for run in imported.runs]


def _as_values(statuses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same statuses with the orchestration's and the external events' ``Input`` as JSON values."""
    changed = copy.deepcopy(statuses)
    for status in changed:
        for event in status["historyEvents"]:
            if event["EventType"] in ("ExecutionStarted", "EventRaised"):
                event["Input"] = json.loads(event["Input"])
    return changed


def _import(statuses: list[dict[str, Any]], folder: Path) -> tuple[Any, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "status.json"
    source.write_text(json.dumps(statuses), encoding="utf-8")
    out = folder / "histories"
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(out), "--no-redact")
    assert "Traceback" not in done.stderr, done.stderr
    return done, out


def _project(folder: Path, replacements: list[tuple[str, str]]) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "inputs_app.py").write_text(source, encoding="utf-8")
    (folder / "pyproject.toml").write_text("[project]\nname = 'http-inputs'\n", encoding="utf-8")
    return folder / "inputs_app.py"


def _verdicts(histories: Path, folder: Path, instances: list[str]) -> dict[str, tuple[str, Any]]:
    files = [str(histories / f"{instance}.json") for instance in instances]
    done = run_cli("replay", "--format", "json", *files, "-w", "inputs_app:app", cwd=folder)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    return {r["workflow"]["id"]: (r["status"], (r.get("divergence") or {}).get("kind")) for r in results}


def test_the_kit_writes_inputs_as_text_and_results_as_values(imported: Imported) -> None:
    """The shape the tests below rely on is the extension's, not the convenient one."""
    big = next(status for status in _statuses(imported) if status["instanceId"] == "order-big")
    events = {event["EventType"]: event for event in big["historyEvents"]}
    assert isinstance(events["ExecutionStarted"]["Input"], str)
    assert json.loads(events["EventRaised"]["Input"]) == {"approved": True}
    assert isinstance(events["TaskCompleted"]["Input"], str)  # the activity's input, copied onto its completion
    assert isinstance(big["input"], dict) and isinstance(big["output"], dict)
    assert not isinstance(events["ExecutionCompleted"]["Result"], str)


@pytest.mark.parametrize("form", ["text", "values"])
def test_inputs_import_as_the_tables_give_them(imported: Imported, tmp_path: Path, form: str) -> None:
    statuses = _statuses(imported) if form == "text" else _as_values(_statuses(imported))
    done, out = _import(statuses, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for run in imported.runs:
        http = json.loads((out / f"{run.instance_id}.json").read_text())
        table = json.loads((imported.histories / f"{run.instance_id}.json").read_text())
        assert http["input"] == table["input"] == run.input
        signals = [(e["name"], e.get("result")) for e in http["events"] if e["kind"] == "signal"]
        assert signals == [(e["name"], e.get("result")) for e in table["events"] if e["kind"] == "signal"]
    big = json.loads((out / "order-big.json").read_text())
    assert [(e["name"], e.get("result")) for e in big["events"] if e["kind"] == "signal"] == [("approval", {"approved": True})]


def test_both_forms_write_the_same_histories(imported: Imported, tmp_path: Path) -> None:
    _, text = _import(_statuses(imported), tmp_path / "text")
    _, values = _import(_as_values(_statuses(imported)), tmp_path / "values")
    for run in imported.runs:
        assert (text / f"{run.instance_id}.json").read_text() == (values / f"{run.instance_id}.json").read_text()


@pytest.mark.parametrize("changes", [pytest.param([], id="unchanged"), pytest.param(APPROVAL_FLIPPED, id="approval-flipped")])
def test_replay_gives_the_table_imports_verdicts(imported: Imported, tmp_path: Path, changes: list[tuple[str, str]]) -> None:
    done, out = _import(_statuses(imported), tmp_path / "import")
    assert done.returncode == 0, done.stdout + done.stderr
    _project(tmp_path, changes)
    instances = [run.instance_id for run in imported.runs]
    from_http = _verdicts(out, tmp_path, instances)
    from_tables = _verdicts(imported.histories, tmp_path, instances)
    assert from_http == from_tables
    if not changes:
        assert set(from_http.values()) == {("passed", None)}
    else:  # the event's data decides the branch: the approved and the rejected order diverge, the others pass
        assert {i for i, (status, _) in from_http.items() if status != "passed"} == {"order-big", "order-rejected"}


def test_the_sdk_finishes_the_rebuilt_history_as_the_run_finished(imported: Imported, tmp_path: Path) -> None:
    from approvals import function_app

    from replaytest.history.io import load_history
    from replaytest.plugins.azure_durable.dtfx_history import sdk_history

    done, out = _import(_statuses(imported), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for run in imported.runs:
        history = load_history(out / f"{run.instance_id}.json")
        body = {"history": sdk_history(history), "instanceId": history.workflow.id, "isReplaying": True,
                "parentInstanceId": None, "input": json.dumps(history.input), "upperSchemaVersion": 0}
        state, failure = sdk_handle(function_app.app, "order_approval", body)
        assert failure is None, failure
        finished = run.runtime_status == "Completed"
        assert (state["isDone"], state.get("output") if finished else None) == (finished, run.output if finished else None), state


def _refused(
    imported: Imported, tmp_path: Path, event_type: str, value: Any, *, drop: bool = False,
    statuses: list[dict[str, Any]] | None = None,
) -> str:
    """Import the statuses with order-big's first ``event_type`` event's ``Input`` set to ``value`` (or dropped):
    that instance alone is refused, in one line naming it and the event."""
    statuses = _statuses(imported) if statuses is None else statuses
    big = next(status for status in statuses if status["instanceId"] == "order-big")
    position, event = next((n, e) for n, e in enumerate(big["historyEvents"]) if e["EventType"] == event_type)
    if drop:
        del event["Input"]
    else:
        event["Input"] = value
    done, out = _import(statuses, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    refusals = [line for line in done.stderr.splitlines() if line.startswith("refused: ")]
    assert len(refusals) == 1, done.stderr
    assert "'order-big'" in refusals[0] and f"historyEvents[{position}]" in refusals[0], refusals[0]
    assert not (out / "order-big.json").exists()
    assert sorted(path.name for path in out.glob("*.json")) == ["order-rejected.json", "order-small.json", "order-waiting.json"]
    return refusals[0]


@pytest.mark.parametrize(("event_type", "text"), [("ExecutionStarted", "apple, banana"), ("EventRaised", "yes")])
def test_an_input_text_that_is_not_json_refuses_the_instance_naming_the_event(
    imported: Imported, tmp_path: Path, event_type: str, text: str
) -> None:
    refusal = _refused(imported, tmp_path, event_type, text)
    assert event_type in refusal and "not JSON" in refusal, refusal


def test_an_external_event_without_its_data_is_refused_saying_how_to_fetch_it(imported: Imported, tmp_path: Path) -> None:
    refusal = _refused(imported, tmp_path, "EventRaised", None, drop=True)
    assert "external event 'approval' has no Input" in refusal and "showInput=true" in refusal, refusal


def test_an_orchestration_input_left_out_of_the_history_is_the_status_input(imported: Imported, tmp_path: Path) -> None:
    """Extensions before v2.9.0 removed ``ExecutionStarted``'s ``Input`` and kept the top-level value."""
    _, text = _import(_statuses(imported), tmp_path / "text")
    statuses = _statuses(imported)
    for status in statuses:
        del status["historyEvents"][0]["Input"]
    done, older = _import(statuses, tmp_path / "older")
    assert done.returncode == 0, done.stdout + done.stderr
    for run in imported.runs:
        assert (older / f"{run.instance_id}.json").read_text() == (text / f"{run.instance_id}.json").read_text()


def test_an_orchestration_input_left_out_everywhere_is_refused(imported: Imported, tmp_path: Path) -> None:
    """With ``showInput=false`` the history has no ``Input`` and the top-level ``input`` is null."""
    statuses = _statuses(imported)
    big = next(status for status in statuses if status["instanceId"] == "order-big")
    big["input"] = None
    refusal = _refused(imported, tmp_path, "ExecutionStarted", None, drop=True, statuses=statuses)
    assert "the orchestration input is left out" in refusal and "showInput=true" in refusal, refusal
