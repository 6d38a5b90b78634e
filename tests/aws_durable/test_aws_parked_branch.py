"""An execution parked on a durable wait inside a ``context.parallel`` branch or a ``context.map`` item (the
other branch finished, or, one branch at a time, not started), judged while it stays parked on the local runner,
which then resumes that very execution: replay passes it and runs no step; the resume rehearsal resumes the
branch past its wait to its next step, which is the step the runner starts next; a step inserted before the wait
is the SDK's non-determinism at its line in replay and fails the runner's resume; a step renamed after the wait
is what both run next."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_kit import edited_fulfilment, import_documents, line_of, module_of, parked, replay_fulfilment

NEXT_STEP = '    return ctx.step(wrap_gift("cooled"))\n'
INSERTED_BEFORE_WAIT = [('    ctx.wait(Duration.from_seconds(5), name="cool")\n',
                         '    ctx.step(pick_items("again"))  # inserted\n    ctx.wait(Duration.from_seconds(5), name="cool")\n')]
RENAMED_AFTER_WAIT = [(NEXT_STEP, NEXT_STEP.replace("wrap_gift", "pick_items"))]


@pytest.mark.parametrize(
    ("function", "edit", "rehearsed", "sdk"),
    [
        pytest.param("cooling", [], ("continues", "wrap_gift"), ("SUCCEEDED", "wrap_gift"), id="unchanged"),
        pytest.param("cooling", RENAMED_AFTER_WAIT, ("continues", "pick_items"), ("SUCCEEDED", "pick_items"), id="renamed-after-wait"),
        # The other branch has not started (one branch at a time): the waiting branch still goes on first.
        pytest.param("cooling-in-turn", [], ("continues", "wrap_gift"), ("SUCCEEDED", "wrap_gift"), id="branches-in-turn"),
        pytest.param("cooling-map", [], ("continues", "wrap_gift"), ("SUCCEEDED", "wrap_gift"), id="map-item"),
    ],
)  # fmt: skip
def test_the_branchs_resume_is_rehearsed_to_the_step_the_runner_runs_next(
    tmp_path: Path, function: str, edit: list[tuple[str, str]], rehearsed: tuple[str, str], sdk: tuple[str, str],
) -> None:
    from orders.fulfilment_app import FUNCTIONS

    marker = tmp_path / "marker.log"
    until = "WaitStarted" if function == "cooling-in-turn" else "ContextSucceeded"  # the last event the first invocation writes
    with parked(FUNCTIONS[function], {"id": "o-cool"}, "cooling-1", function, until=until) as execution:
        histories = import_documents(tmp_path, {"cooling-1": execution.documents})
        app = edited_fulfilment(tmp_path, edit)
        result = replay_fulfilment(histories, tmp_path, "--rehearse", marker=marker)[function]
        assert (result["status"], result["run_status"]) == ("passed", "parked"), result
        rehearsal = result["rehearsal"]
        assert (rehearsal["outcome"], rehearsal["commands"][0]["name"]) == rehearsed, result
        assert rehearsal["delivered"] == "wait 'cool' completed"
        assert rehearsal["source"]["line"] == line_of(app, f"return ctx.step({rehearsed[1]}(\"cooled\"))")
        assert not marker.exists(), marker.read_text()  # no step body ran, before or past the wait
        status, started, _ = execution.resume(module_of(app).FUNCTIONS[function])
    assert (status, started[0]) == sdk


def test_a_step_inserted_before_the_branchs_wait_diverges_where_the_runner_fails_the_resume(tmp_path: Path) -> None:
    from orders.fulfilment_app import cooling_handler

    with parked(cooling_handler, {"id": "o-cool"}, "cooling-2", "cooling", until="ContextSucceeded") as execution:
        histories = import_documents(tmp_path, {"cooling-2": execution.documents})
        app = edited_fulfilment(tmp_path, INSERTED_BEFORE_WAIT)
        result = replay_fulfilment(histories, tmp_path, "--rehearse")["cooling"]
        divergence = result["divergence"]
        assert (divergence["kind"], divergence["recorded"]["name"], divergence["issued"]["name"]) == ("command-mismatch", "cool", "pick_items")
        assert divergence["source"]["line"] == line_of(app, "# inserted")
        assert "NonDeterministicExecutionError" in divergence["message"]
        status, _, error = execution.resume(module_of(app).cooling_handler)
    assert status == "FAILED" and str(error.type).endswith("NonDeterministicExecutionError")
