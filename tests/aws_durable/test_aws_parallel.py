"""``context.parallel`` executions: the parallel's ``BatchResult`` is fed back as the SDK's own type; a change
inside its completed branches (a branch's step renamed, the branches reordered) passes, as the SDK judges (it
returns the completed parallel's result and runs no branch again); a change after it diverges at its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_kit import edited_fulfilment, import_documents, line_of, module_of, record, replay_fulfilment, sdk_verdict

RENAMED_IN_BRANCH = [("def wrap_gift(", "def gift_wrap("), ('return ctx.step(wrap_gift("w"))', 'return ctx.step(gift_wrap("w"))'),
                     ('return ctx.step(wrap_gift("cooled"))', 'return ctx.step(gift_wrap("cooled"))')]
REORDERED = [('context.parallel([picking, wrapping], name="prepare")', 'context.parallel([wrapping, picking], name="prepare")')]
RENAMED_AFTER = [("def ship(", "def dispatch("), ("shipped = context.step(ship(parts.get_results()))",
                                                  "shipped = context.step(dispatch(parts.get_results()))")]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    from orders.fulfilment_app import parallel_handler

    documents = record(parallel_handler, {"id": "o-1"}, "parallel-1", function_name="parallel")
    return import_documents(tmp_path_factory.mktemp("aws-parallel"), {"parallel-1": documents}), documents


def test_an_unchanged_parallel_replays_green_and_runs_no_branch(recorded: tuple[Path, list[dict]], tmp_path: Path) -> None:
    histories, documents = recorded
    app = edited_fulfilment(tmp_path)
    marker = tmp_path / "marker.log"
    result = replay_fulfilment(histories, tmp_path, marker=marker)["parallel"]
    assert result["status"] == "passed", result  # get_results() on the fed-back BatchResult, the result compared
    assert not marker.exists(), marker.read_text()
    assert sdk_verdict(module_of(app).parallel_handler, documents)["Status"] == "SUCCEEDED"


@pytest.mark.parametrize("edit", [RENAMED_IN_BRANCH, REORDERED], ids=["renamed-branch-step", "branches-reordered"])
def test_a_change_inside_the_completed_parallel_passes_as_the_sdk_judges(
    recorded: tuple[Path, list[dict]], tmp_path: Path, edit: list[tuple[str, str]],
) -> None:
    histories, documents = recorded
    app = edited_fulfilment(tmp_path, edit)
    marker = tmp_path / "marker.log"
    result = replay_fulfilment(histories, tmp_path, marker=marker)["parallel"]
    assert result["status"] == "passed", result
    assert not marker.exists(), marker.read_text()
    # The SDK returns the completed parallel's recorded result without running a branch: it does not see the change.
    assert sdk_verdict(module_of(app).parallel_handler, documents)["Status"] == "SUCCEEDED"


def test_a_step_renamed_after_the_parallel_is_the_sdks_non_determinism_at_its_line(
    recorded: tuple[Path, list[dict]], tmp_path: Path,
) -> None:
    histories, documents = recorded
    app = edited_fulfilment(tmp_path, RENAMED_AFTER)
    divergence = replay_fulfilment(histories, tmp_path)["parallel"]["divergence"]
    assert (divergence["kind"], divergence["recorded"]["name"], divergence["issued"]["name"]) == ("command-mismatch", "ship", "dispatch")
    assert divergence["source"]["line"] == line_of(app, "shipped = context.step(dispatch(parts")
    assert "the SDK's own check: NonDeterministicExecutionError" in divergence["message"]
    verdict = sdk_verdict(module_of(app).parallel_handler, documents)
    assert verdict["Status"] == "FAILED" and verdict["Error"]["ErrorType"].endswith("NonDeterministicExecutionError")
