"""A failed execution, recorded with the local runner: imported as failed with its error, replayed green when
the handler still fails, and a ``result-mismatch`` when it now returns (the SDK itself has no such check)."""

from __future__ import annotations

import json
from pathlib import Path

from aws_kit import HERE, ROOT, record, run_cli


def test_a_failed_execution_is_failed_and_replays_against_a_handler_that_still_fails(tmp_path: Path) -> None:
    from orders.failing_app import handler

    (tmp_path / "failed.json").write_text(json.dumps(record(handler, {"items": []}, "fail-1", function_name="failing")), encoding="utf-8")
    done = run_cli("import", "aws-durable", str(tmp_path / "failed.json"), "--out", str(tmp_path / "histories"), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    (history,) = [json.loads(p.read_text()) for p in (tmp_path / "histories").glob("*.json")]
    assert (history["status"], history["error"]) == ("failed", {"type": "ValueError", "message": "an order needs at least one item"})

    source = (HERE / "orders" / "failing_app.py").read_text(encoding="utf-8")
    for edited, status in ((source, "passed"), (source.replace("if count == 0:", "if count < 0:"), "diverged")):
        (tmp_path / "failing_now.py").write_text(edited, encoding="utf-8")
        done = run_cli("replay", "--format", "json", str(tmp_path / "histories"), "-w", "failing_now:FUNCTIONS", cwd=tmp_path)
        (result,) = json.loads(done.stdout)["results"]
        assert result["status"] == status, result
    assert result["divergence"]["kind"] == "result-mismatch"
    assert "the handler now returns where the history failed with ValueError" in result["divergence"]["message"]
