"""``context.map`` executions: the map's result is the SDK's ``BatchResult`` envelope (``br``), which the
import unwraps and the replay writes back so the handler gets a ``BatchResult`` again; a change after the map
diverges as the SDK judges, and one inside the completed map's branches does not (the SDK does not re-run it)."""

from __future__ import annotations

import json
from pathlib import Path

from aws_kit import HERE, ROOT, line_of, record, run_cli, sdk_verdict

SOURCE = HERE / "orders" / "batch_app.py"


def _record_and_import(tmp_path: Path) -> tuple[Path, list[dict]]:
    from orders.batch_app import handler

    documents = record(handler, {"items": [1, 2, 3]}, "batch-1", function_name="batch")
    (tmp_path / "batch.json").write_text(json.dumps(documents), encoding="utf-8")
    done = run_cli("import", "aws-durable", str(tmp_path / "batch.json"), "--out", str(tmp_path / "histories"), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "histories", documents


def _replay(histories: Path, folder: Path, source: str) -> dict:
    (folder / "edited_batch.py").write_text(source, encoding="utf-8")
    done = run_cli("replay", "--format", "json", str(histories), "-w", "edited_batch:FUNCTIONS", cwd=folder)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (result,) = json.loads(done.stdout)["results"]
    return result


def _handler(path: Path):  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"batch_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.handler


def test_a_map_replays_with_its_batch_result_and_a_change_after_it_diverges(tmp_path: Path) -> None:
    histories, documents = _record_and_import(tmp_path)
    (history,) = [json.loads(p.read_text()) for p in histories.glob("*.json")]
    squares = history["events"][0]
    assert (squares["name"], squares["aws"]["sub_type"], squares["aws"]["tag"]) == ("squares", "Map", "br")
    source = SOURCE.read_text(encoding="utf-8")
    assert _replay(histories, tmp_path, source)["status"] == "passed"  # get_results() on the fed-back BatchResult

    renamed = source.replace("def add_up(", "def sum_up(").replace("context.step(add_up(", "context.step(sum_up(")
    result = _replay(histories, tmp_path, renamed)
    divergence = result["divergence"]
    assert (divergence["kind"], divergence["recorded"]["name"], divergence["issued"]["name"]) == ("command-mismatch", "add_up", "sum_up")
    assert divergence["source"]["line"] == line_of(tmp_path / "edited_batch.py", "total = context.step(sum_up(")
    verdict = sdk_verdict(_handler(tmp_path / "edited_batch.py"), documents)
    assert verdict["Status"] == "FAILED" and verdict["Error"]["ErrorType"].endswith("NonDeterministicExecutionError")

    inside = source.replace("return ctx.step(square(item))", "return ctx.step(square(item), name='sq')")
    assert _replay(histories, tmp_path, inside)["status"] == "passed"
    assert sdk_verdict(_handler(tmp_path / "edited_batch.py"), documents)["Status"] == "SUCCEEDED"
