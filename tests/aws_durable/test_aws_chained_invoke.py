"""``context.invoke`` (a chained invoke) executions: the invoked function's output is checkpointed as plain
JSON (not the SDK's envelope), so the import keeps it as it is and the replay writes it back the same way (a
list result once came back to the code as the envelope). The SDK's identity check compares the operation's
name, not the invoked function's name or payload: a chained invoke to another function passes, as the SDK
judges; a renamed invoke diverges at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_kit import edited_fulfilment, import_documents, line_of, module_of, record, replay_fulfilment, sdk_verdict

OTHER_FUNCTION = [('context.invoke("pricing", ', 'context.invoke("pricing-v2", ')]
RENAMED = [('{"items": event["items"]}, name="prices")', '{"items": event["items"]}, name="quotes")')]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    from orders.fulfilment_app import invoking_handler, pricing_handler

    documents = record(invoking_handler, {"items": ["kiwi", "fig"]}, "invoking-1", function_name="invoking",
                       targets={"pricing": pricing_handler})
    return import_documents(tmp_path_factory.mktemp("aws-invoke"), {"invoking-1": documents}), documents


def test_the_invoked_functions_list_result_is_imported_and_fed_back_as_it_was_returned(
    recorded: tuple[Path, list[dict]], tmp_path: Path,
) -> None:
    histories, documents = recorded
    (history,) = [json.loads(path.read_text(encoding="utf-8")) for path in histories.glob("*.json")]
    prices = history["events"][0]
    assert (prices["kind"], prices["name"], prices["result"], prices["aws"]["tag"]) == ("child-workflow", "prices", [40, 30], "json")
    app = edited_fulfilment(tmp_path)
    marker = tmp_path / "marker.log"
    result = replay_fulfilment(histories, tmp_path, marker=marker)["invoking"]
    assert result["status"] == "passed", result  # the handler returned {"prices": [40, 30], ...} as recorded
    assert not marker.exists(), marker.read_text()
    verdict = sdk_verdict(module_of(app).invoking_handler, documents)
    assert verdict["Status"] == "SUCCEEDED" and json.loads(verdict["Result"])["prices"] == [40, 30]


def test_a_chained_invoke_to_another_function_passes_as_the_sdk_judges(recorded: tuple[Path, list[dict]], tmp_path: Path) -> None:
    histories, documents = recorded
    app = edited_fulfilment(tmp_path, OTHER_FUNCTION)
    assert replay_fulfilment(histories, tmp_path)["invoking"]["status"] == "passed"
    # The SDK answers the invoke from its checkpoint: the function name is not part of its identity check.
    assert sdk_verdict(module_of(app).invoking_handler, documents)["Status"] == "SUCCEEDED"


def test_a_renamed_chained_invoke_is_the_sdks_non_determinism_at_its_line(recorded: tuple[Path, list[dict]], tmp_path: Path) -> None:
    histories, documents = recorded
    app = edited_fulfilment(tmp_path, RENAMED)
    divergence = replay_fulfilment(histories, tmp_path)["invoking"]["divergence"]
    assert (divergence["kind"], divergence["recorded"]["name"], divergence["issued"]["name"]) == ("command-mismatch", "prices", "quotes")
    assert divergence["issued"]["kind"] == "child-workflow"
    assert divergence["source"]["line"] == line_of(app, 'name="quotes")')
    assert "the SDK's own check: NonDeterministicExecutionError" in divergence["message"]
    verdict = sdk_verdict(module_of(app).invoking_handler, documents)
    assert verdict["Status"] == "FAILED" and verdict["Error"]["ErrorType"].endswith("NonDeterministicExecutionError")
