"""``replaytest double-run`` on AWS Lambda durable handlers, invoked through the SDK's own replay path with
every operation stubbed: ``hash(str)`` under another PYTHONHASHSEED (on the handler thread and in a map's
branches), ids deciding step order, a clock read in a helper module and a module counter are found (the
counter by the SDK's own NonDeterministicExecutionError when the run's next invocation replays it); a
deterministic control with a map, a wait, a callback, a child context and a parallel passes; no step body or
callback submitter runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):  # pragma: no cover - the SDK requires 3.11
    pytest.skip("the AWS durable SDK needs Python 3.11", allow_module_level=True)
pytest.importorskip("aws_durable_execution_sdk_python")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def double_run(tmp_path, workflow, steps=None, *extra, input=None):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [
        {"workflow": workflow, "engine": "aws_durable", "input": input or {"order": "order-1"}, "steps": steps or {}}]}))
    done = subprocess.run(
        [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format", "json",
         "-w", "dr_app.aws_workflows:HANDLERS", *extra],
        cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert done.stdout.strip(), done.stderr
    (result,) = json.loads(done.stdout)["results"]
    return done.returncode, result


def test_deterministic_control_passes(tmp_path):
    code, result = double_run(tmp_path, "control", {"lookup": {"level": "gold"}, "approval": "yes"})
    assert code == 0, result
    assert result["status"] == "passed"
    # lookup; the map, its eight branches and their steps; the wait; the callback's context, callback and
    # submitter; the child context and its step; the parallel, its two branches and their steps. A step body
    # or submitter that ran would have failed the handler.
    assert result["events"] == 1 + 17 + 1 + 3 + 2 + 5
    assert result["notes"] == []


def test_hash_of_str_under_another_hash_seed_is_found(tmp_path):
    code, result = double_run(tmp_path, "by_string_hash")
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert "a second process" in divergence["message"]
    assert divergence["source"]["path"].endswith("aws_workflows.py")
    assert divergence["recorded"]["name"].endswith("_check") and divergence["issued"]["name"].endswith("_check")


def test_hash_order_inside_map_branches_is_found(tmp_path):
    code, result = double_run(tmp_path, "in_map_branches")
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert "a second process" in divergence["message"]
    assert divergence["source"]["function"] == "check_one"


def test_set_of_objects_hashed_by_id_is_found(tmp_path):
    code, result = double_run(tmp_path, "by_identity")
    assert code == 1
    assert result["divergence"]["kind"] == "command-mismatch"


def test_clock_read_in_a_helper_is_found(tmp_path):
    code, result = double_run(tmp_path, "by_library_clock")
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] in ("command-mismatch", "extra-command", "missing-command")
    assert "a second process" in divergence["message"]


def test_module_counter_outliving_an_invocation_is_found_by_the_sdk(tmp_path):
    code, result = double_run(tmp_path, "by_counter")
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert "NonDeterministicExecutionError" in divergence["message"]
    assert "'welcome'" in divergence["message"] and "'lookup'" in divergence["message"]
    # What the first invocation issued at that position against what the next one issued there, at its line
    # (not the last command the run had issued before the refusal).
    assert (divergence["position"], divergence["recorded"]["name"], divergence["issued"]["name"]) == (1, "welcome", "lookup")
    lookup_line = next(number for number, text in enumerate(
        (HERE / "dr_app" / "aws_workflows.py").read_text().splitlines(), 1) if 'name="lookup"' in text)
    assert divergence["source"]["line"] == lookup_line
    assert divergence["source"]["function"] == "by_counter"


def test_unknown_handler_is_an_error(tmp_path):
    code, result = double_run(tmp_path, "no_such_handler")
    assert code == 2
    assert "no current @durable_execution handler named 'no_such_handler'" in result["error"]


def test_invoke_callback_and_wait_for_condition_are_answered_by_stubs():
    from dr_app import aws_workflows

    from replaytest.plugins.aws_durable.double_run import trace_aws_durable
    from replaytest.replay.double_run import FIRST_RUN, DoubleRunCase
    from replaytest.replay.runner import load_workflows

    case = DoubleRunCase("aws_durable", "other_operations", {"order": "order-1"}, HERE / "inputs.json",
                         steps={"pricing": {"total": 12}, "manual_review": "approved", "poll": 3})
    trace = trace_aws_durable(load_workflows([], None, [aws_workflows.HANDLERS]), case, FIRST_RUN)
    assert [(c.kind, c.name) for c in trace.commands] == [
        ("child-workflow", "pricing"), ("signal", "manual_review"), ("step", "poll")]
    # The chained invoke's output is plain JSON, the callback's answer the text sent, the condition's state as
    # a step's result: each reaches the code as the stub gave it, and the condition check never ran.
    assert trace.ending == "completed", trace.result
    assert json.loads(json.loads(trace.result)) == {"invoked": {"total": 12}, "review": "approved", "polled": 3}


def test_effect_in_the_handler_is_stopped_at_its_line(tmp_path):
    target = tmp_path / "sent.txt"
    code, result = double_run(tmp_path, "by_effect", None, input={"order": "order-1", "path": str(target)})
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call"
    assert divergence["source"]["path"].endswith("aws_workflows.py")
    assert not target.exists()


def test_a_refusal_in_the_second_process_crosses_to_the_report_with_both_commands():
    from replaytest.replay.double_run import FIRST_RUN, OTHER_PROCESS_RUN, DoubleRunCase, Trace, TracedCommand, compare

    commands = [TracedCommand("step", "welcome", None, "app.py", 5, "handler")]
    first = Trace(commands=[*commands, TracedCommand("step", "lookup", None, "app.py", 6, "handler")],
                  ending="completed", result='"ok"')
    broke = Trace(commands=commands, ending="broke", result="NonDeterministicExecutionError: name",
                  refused=TracedCommand("step", "lookup", None, "app.py", 6, "handler"), refused_position=1)
    second = Trace.from_json(json.loads(json.dumps(broke.to_json())))  # as the child process hands it back
    assert second == broke
    case = DoubleRunCase(engine="aws_durable", workflow="handler", input=None, origin=Path("inputs.json"))
    divergence = compare(case, first, second, OTHER_PROCESS_RUN).divergence
    assert OTHER_PROCESS_RUN.describe in divergence.message and FIRST_RUN.describe not in divergence.message
    assert (divergence.recorded.name, divergence.issued.name, divergence.source.line) == ("welcome", "lookup", 6)
