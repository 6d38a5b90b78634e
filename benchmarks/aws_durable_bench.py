"""AWS Lambda durable functions benchmark: import and replay of N executions.

Records ``--runs`` executions of the tests' order handler (tests/aws_durable/orders) with the testing SDK's
local runner (the real SDK, offline; one runner for all): three in four small orders that take the durable
wait and complete (7 operations), one in four big orders that park at their approval callback (8
operations). Saves them as the Lambda API's JSON (one file holding every ``GetDurableExecution`` response
followed by its history page), then times

1. ``replaytest import aws-durable`` of that file (one process, as a user runs it), and
2. the replay of every imported history through ``replay.runner.replay_file``, the dispatch the CLI and
   pytest use, against the unchanged handler (runtime guards on).

Run from the repository root: ``python benchmarks/aws_durable_bench.py [--runs 1000]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "aws_durable"))

from aws_kit import ACCOUNT, FUNCTION_NAME, REGION, api_json, run_cli  # noqa: E402


def record_all(runs: int) -> list[dict]:
    from aws_durable_execution_sdk_python_testing.model import GetDurableExecutionResponse
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner
    from orders.orders_app import handler

    documents: list[dict] = []
    with DurableFunctionTestRunner(handler=handler, poll_interval=0.01) as runner:
        for number in range(runs):
            big = number % 4 == 3
            payload = {"id": f"b{number}", "items": ["apple", "banana", "kiwi"] if big else ["fig"]}
            arn = runner.run_async(input=json.dumps(payload), execution_timeout=600, function_name=FUNCTION_NAME,
                                   execution_name=f"bench-{number:05d}")
            status, result, error = "RUNNING", None, None
            if big:
                runner.wait_for_callback(arn, timeout=60)
            else:
                outcome = runner.wait_for_result(execution_arn=arn, timeout=60)
                status, result, error = outcome.execution_status.value, outcome.result, outcome.error
            page = api_json(runner.get_execution_history(arn, include_execution_data=True))
            started = next(e for e in page["Events"] if e["EventType"] == "ExecutionStarted")
            execution = GetDurableExecutionResponse(
                durable_execution_arn=arn, durable_execution_name=f"bench-{number:05d}",
                function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION_NAME}:$LATEST", status=status,
                start_timestamp=started["EventTimestamp"], input_payload=json.dumps(payload), result=result, error=error,
                version="$LATEST",
            )
            documents += [api_json(execution), page]
    return documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="executions to record, import and replay")
    args = parser.parse_args()

    from orders.orders_app import FUNCTIONS

    from replaytest.plugins import load_plugins
    from replaytest.replay.adapter import ReplayOptions, WorkflowSet
    from replaytest.replay.runner import iter_history_files, replay_file

    started = time.perf_counter()
    documents = record_all(args.runs)
    operations = sum(len({e.get("Id") for e in page["Events"] if "Id" in e}) - 1 for page in documents[1::2])
    print(f"recorded {args.runs} executions ({operations:,} operations) in {time.perf_counter() - started:.1f}s")

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        source = folder / "executions.json"
        source.write_text(json.dumps(documents), encoding="utf-8")
        out = folder / "histories"
        started = time.perf_counter()
        done = run_cli("import", "aws-durable", str(source), "--out", str(out), "--no-redact", cwd=ROOT)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(done.stdout + done.stderr[-3000:])
        files = sorted(iter_history_files([out]))
        print(f"import: {len(files)} histories in {elapsed:.2f}s ({elapsed / len(files) * 1000:.2f} ms each, one process)")

        replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
        workflows = WorkflowSet([FUNCTIONS], ["orders.orders_app:FUNCTIONS"])
        options = ReplayOptions()
        started = time.perf_counter()
        statuses: dict[str, int] = {}
        for path in files:
            result = replay_file(path, replayers, workflows, options)
            statuses[result.status] = statuses.get(result.status, 0) + 1
        elapsed = time.perf_counter() - started
        print(f"replay: {len(files)} histories in {elapsed:.2f}s ({elapsed / len(files) * 1000:.2f} ms each): {statuses}")
        if set(statuses) != {"passed"}:
            raise SystemExit("every history must replay green against the unchanged handler")


if __name__ == "__main__":
    main()
