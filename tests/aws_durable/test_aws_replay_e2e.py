"""End to end: executions of the orders app recorded with the testing SDK's local runner, saved as the
Lambda API's JSON, imported with ``replaytest import aws-durable`` and replayed by ``replaytest replay`` in
a fresh process against the app unchanged and edited; each verdict is compared with the SDK's own on the
same recorded operations (``aws_kit.sdk_verdict``: the engine is the judge)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from aws_kit import APP_SOURCE, line_of, run_cli, sdk_verdict

RENAMED = [("def price_order(", "def quote_order("), ("price = context.step(price_order(stock))", "price = context.step(quote_order(stock))")]
INSERTED = [("    price = context.step(price_order(stock))\n", '    context.step(audit_order(event["id"]))\n    price = context.step(price_order(stock))\n')]
REORDERED = [(
    '    label = context.step(print_label(event["id"]))\n    tracking = context.step(book_courier(event["id"]))\n',
    '    tracking = context.step(book_courier(event["id"]))\n    label = context.step(print_label(event["id"]))\n',
)]
BRANCH = [('if price["total"] > 100:', 'if price["total"] > 200:')]
OUTPUT_CHANGED = [('return {"status": "shipped", ', 'return {"status": "sent", ')]
# Inside the child context: a completed context is not run again on replay (the SDK returns its result).
IN_COMPLETED_CHILD = [('child.wait(Duration.from_seconds(1), name="seal")', 'child.wait(Duration.from_seconds(1), name="tape")')]


def _project(folder: Path, replacements: list[tuple[str, str]]) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "edited_app.py").write_text(source, encoding="utf-8")
    return folder / "edited_app.py"


def _replay(imported, folder: Path, marker: Path | None = None) -> dict[str, dict[str, Any]]:  # type: ignore[no-untyped-def]
    env = {"ORDERS_MARKER": str(marker)} if marker is not None else {}
    files = sorted(str(path) for path in imported.histories.glob("*.json"))
    done = run_cli("replay", "--format", "json", *files, "-w", "edited_app:FUNCTIONS", cwd=folder, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    report = json.loads(done.stdout)
    orders = {}
    for path in imported.histories.glob("*.json"):
        history = json.loads(path.read_text(encoding="utf-8"))
        orders[history["workflow"]["id"]] = history["input"]["id"]
    return {orders[r["workflow"]["id"]]: r for r in report["results"]}


def _edited_handler(app: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"edited_{abs(hash(app))}", app)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def _documents(imported, name: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    return json.loads(imported.recording.files[name].read_text(encoding="utf-8"))


def test_unchanged_code_replays_every_execution_green_and_runs_no_step(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(tmp_path, [])
    assert imported.recording.marker.read_text().count("check_stock") == 7  # while recording, the steps did run
    marker = tmp_path / "replay-marker.log"
    results = _replay(imported, tmp_path, marker)
    assert {key: r["status"] for key, r in results.items()} == {"o-small": "passed", "o-big": "passed", "o-wait": "passed"}
    assert results["o-wait"]["run_status"] == "parked"
    assert not marker.exists(), marker.read_text()
    # The SDK agrees: each completed execution replays to its recorded result.
    handler = _edited_handler(tmp_path / "edited_app.py")
    for name in ("order-small", "order-big"):
        assert sdk_verdict(handler, _documents(imported, name))["Status"] == "SUCCEEDED"


@pytest.mark.parametrize(
    ("edit", "order", "recorded", "issued", "line"),
    [
        pytest.param(RENAMED, "o-big", ("step", "price_order"), ("step", "quote_order"),
                     "price = context.step(quote_order(stock))", id="renamed-step"),
        pytest.param(INSERTED, "o-small", ("step", "price_order"), ("step", "audit_order"),
                     "context.step(audit_order(", id="inserted-step"),
        pytest.param(REORDERED, "o-big", ("step", "print_label"), ("step", "book_courier"),
                     "tracking = context.step(book_courier(", id="reordered-steps"),
        pytest.param(BRANCH, "o-big", ("step", "approval"), ("timer", "cool_off"),
                     'context.wait(Duration.from_seconds(2), name="cool_off")', id="changed-branch"),
    ],
)  # fmt: skip
def test_each_change_is_the_sdks_own_non_determinism_reported_at_its_line(
    imported, tmp_path: Path, edit: list[tuple[str, str]], order: str, recorded: tuple[str, str],  # type: ignore[no-untyped-def]
    issued: tuple[str, str], line: str,
) -> None:
    app = _project(tmp_path, edit)
    marker = tmp_path / "replay-marker.log"
    result = _replay(imported, tmp_path, marker)[order]
    assert result["status"] == "diverged", result
    divergence = result["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert (divergence["recorded"]["kind"], divergence["recorded"]["name"]) == recorded
    assert (divergence["issued"]["kind"], divergence["issued"]["name"]) == issued
    assert Path(divergence["source"]["path"]).name == "edited_app.py"
    assert divergence["source"]["line"] == line_of(app, line)
    assert "the SDK's own check: NonDeterministicExecutionError" in divergence["message"]
    assert not marker.exists(), marker.read_text()
    # The engine is the judge: the SDK itself refuses the edited handler on the same recorded operations.
    name = {"o-big": "order-big", "o-small": "order-small"}[order]
    verdict = sdk_verdict(_edited_handler(app), _documents(imported, name))
    assert verdict["Status"] == "FAILED", verdict
    assert verdict["Error"]["ErrorType"].endswith("NonDeterministicExecutionError"), verdict
    assert f"current={issued[1]!r}" in verdict["Error"]["ErrorMessage"] or "type checkpoint=" in verdict["Error"]["ErrorMessage"]


def test_the_parked_execution_is_not_broken_by_a_change_after_where_it_waits(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """o-wait stands at the approval callback; a reorder after it cannot break it, and the finished big
    order, which went past it, does break."""
    _project(tmp_path, REORDERED)
    results = _replay(imported, tmp_path)
    assert results["o-wait"]["status"] == "passed"
    assert results["o-big"]["status"] == "diverged"


def test_a_changed_result_is_a_result_mismatch_for_finished_runs_only(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = _project(tmp_path, OUTPUT_CHANGED)
    results = _replay(imported, tmp_path)
    assert results["o-big"]["divergence"]["kind"] == "result-mismatch"
    assert '"status": "sent"' in results["o-big"]["divergence"]["message"]
    assert results["o-wait"]["status"] == "passed"
    assert sdk_verdict(_edited_handler(app), _documents(imported, "order-big"))["Status"] == "SUCCEEDED"  # the SDK has no result check


def test_a_change_inside_a_completed_child_context_passes_as_the_sdk_judges(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = _project(tmp_path, IN_COMPLETED_CHILD)
    results = _replay(imported, tmp_path)
    assert {key: r["status"] for key, r in results.items()} == dict.fromkeys(results, "passed")
    assert sdk_verdict(_edited_handler(app), _documents(imported, "order-big"))["Status"] == "SUCCEEDED"


def test_a_clock_read_in_the_handler_is_a_hazard_at_its_line(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = _project(tmp_path, [
        ("import os\n", "import os\nimport time\n"),
        ("    price = context.step(price_order(stock))\n", "    price = context.step(price_order(stock))\n    started = time.time()  # clock\n"),
    ])
    result = _replay(imported, tmp_path)["o-small"]
    assert result["status"] == "diverged"
    hazard = result["divergence"]
    assert hazard["kind"] == "nondeterministic-call"
    assert hazard["source"]["line"] == line_of(app, "# clock")
    assert "context.step" in hazard["message"]


def test_a_handler_under_another_name_is_stale_not_passed(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _project(tmp_path, [])
    files = sorted(str(path) for path in imported.histories.glob("*.json"))
    done = run_cli("replay", "--format", "json", *files, "-w", "edited_app:handler", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr  # stale: a history that could not be checked
    results = json.loads(done.stdout)["results"]
    assert {r["status"] for r in results} == {"stale"}
    assert "no current @durable_execution handler named 'orders'" in results[0]["error"]


def test_a_file_write_in_the_handler_is_stopped_before_it_happens(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    written = tmp_path / "written-by-the-handler.txt"
    app = _project(tmp_path, [(
        "    price = context.step(price_order(stock))\n",
        f"    price = context.step(price_order(stock))\n    open({str(written)!r}, 'w').write('x')  # effect\n",
    )])
    result = _replay(imported, tmp_path)["o-small"]
    assert result["status"] == "diverged"
    assert result["divergence"]["kind"] == "nondeterministic-call"
    assert result["divergence"]["source"]["line"] == line_of(app, "# effect")
    assert "stopped" in result["divergence"]["message"]
    assert not written.exists()


def test_a_child_context_made_virtual_is_the_sdks_own_refusal_where_the_hook_does_not_see_it(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The SDK refuses a recorded (checkpointed) child context that is now virtual in a check of its own,
    after the identity check; the replay reports that refusal as a divergence."""
    app = _project(tmp_path, [
        ("from aws_durable_execution_sdk_python.config import Duration\n",
         "from aws_durable_execution_sdk_python.config import ChildConfig, Duration\n"),
        ('name="pack")', 'name="pack", config=ChildConfig(is_virtual=True))'),
    ])
    result = _replay(imported, tmp_path)["o-big"]
    assert result["status"] == "diverged", result
    assert result["divergence"]["kind"] == "command-mismatch"
    assert "NonDeterministicExecutionError" in result["divergence"]["message"]
    assert "virtual" in result["divergence"]["message"]
    verdict = sdk_verdict(_edited_handler(app), _documents(imported, "order-big"))
    assert verdict["Status"] == "FAILED" and verdict["Error"]["ErrorType"].endswith("NonDeterministicExecutionError")
