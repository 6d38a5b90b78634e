"""The AWS durable resume rehearsal (``replay --rehearse``): the order execution parked on its approval callback
is resumed by the SDK's own ``durable_execution`` wrapper past its history — the callback answered with the
answer the finished big order recorded — and stops before the first operation the checkpoints do not hold,
so no step body runs. How impact words it is tested against the local runner's own resumes in
``tests/impact_e2e/test_impact_e2e_differential_aws.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_kit import APP_SOURCE, line_of, run_cli

AFTER_CALLBACK = '    label = context.step(print_label(event["id"]))\n'


def _app(folder: Path, old: str | None = None, new: str = "") -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    if old is not None:
        assert source.count(old) == 1
        source = source.replace(old, new)
    app = folder / "rehearsed_app.py"
    app.write_text(source, encoding="utf-8")
    return app


def _rehearse(folder: Path, files: list[Path], marker: Path | None = None) -> dict[str, dict[str, Any]]:
    env = {"ORDERS_MARKER": str(marker)} if marker is not None else {}
    done = run_cli("replay", "--rehearse", "--format", "json", *map(str, files), "-w", "rehearsed_app:FUNCTIONS",
                   cwd=folder, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return {result["run_status"]: result for result in json.loads(done.stdout)["results"]}


def _parked_history(imported) -> Path:  # type: ignore[no-untyped-def]
    (path,) = [path for path in imported.histories.glob("*.json")
               if json.loads(path.read_text(encoding="utf-8"))["status"] == "parked"]
    return path


def test_the_parked_execution_resumes_past_its_callback_on_its_next_step_and_no_body_runs(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = _app(tmp_path)
    marker = tmp_path / "marker.log"
    results = _rehearse(tmp_path, sorted(imported.histories.glob("*.json")), marker)
    parked = results["parked"]
    assert parked["status"] == "passed", parked
    rehearsal = parked["rehearsal"]
    assert rehearsal["outcome"] == "continues", rehearsal
    assert [(c["kind"], c["name"]) for c in rehearsal["commands"]] == [("step", "print_label")]
    assert rehearsal["source"]["line"] == line_of(app, AFTER_CALLBACK.strip())
    assert rehearsal["delivered"] == ("callback 'approval create callback id' answered with the answer another "
                                      "execution of the function recorded")
    assert rehearsal["driver"].startswith("aws-durable-execution-sdk-python 3.")
    assert not marker.exists() or marker.read_text(encoding="utf-8") == ""  # no step body ran, before or past the callback
    assert results["completed"]["rehearsal"] is None  # a finished execution is not resumed


def test_alone_the_callback_is_answered_with_null_and_a_new_step_is_the_next_operation(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = _app(tmp_path, AFTER_CALLBACK, '    context.step(audit_order(event["id"]))\n' + AFTER_CALLBACK)
    rehearsal = _rehearse(tmp_path, [_parked_history(imported)])["parked"]["rehearsal"]
    assert rehearsal["delivered"] == "callback 'approval create callback id' answered with null (no answer recorded in the batch)"
    assert [(c["name"], c["detail"]["source"]) for c in rehearsal["commands"]] == [
        ("audit_order", f"rehearsed_app.py:{line_of(app, 'context.step(audit_order(')}")]


def test_a_handler_that_fails_after_the_callback_completes_with_its_error(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _app(tmp_path, AFTER_CALLBACK, '    raise ValueError("no labels today")\n')
    rehearsal = _rehearse(tmp_path, [_parked_history(imported)])["parked"]["rehearsal"]
    assert (rehearsal["outcome"], rehearsal["commands"]) == ("completes", [])
    assert "the run fails on resume: ValueError: no labels today" in rehearsal["note"]


def test_an_execution_running_a_step_is_not_rehearsed_and_says_why(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _app(tmp_path)
    history = json.loads(_parked_history(imported).read_text(encoding="utf-8"))
    submitter = history["events"][-1]
    assert submitter["name"] == "approval submitter"
    submitter["aws"]["status"] = "STARTED"  # the history ends while the submitter step runs
    submitter.pop("result", None)
    edited = tmp_path / "running.json"
    edited.write_text(json.dumps(history), encoding="utf-8")
    parked = _rehearse(tmp_path, [edited])["parked"]
    assert parked["status"] == "passed" and parked["rehearsal"] is None
    assert ("resume not rehearsed: step 'approval submitter' was running when the history ends (the SDK would run "
            "its body again)") in parked["notes"]
